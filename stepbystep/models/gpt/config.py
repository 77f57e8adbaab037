"""A decoder's settings in one object, the one source of ``DecoderOnlyTransformer``'s defaults
(chapters 09 and 12): the 2017 block's, GPT-2's and Llama's differ only in these fields, so one
model class builds all three."""
from dataclasses import dataclass, fields, replace

from ...checks import (check_choice, check_instance, check_int_range, check_non_negative_int, check_positive_int,
                       check_positive_number)
from ..attention.narrow import QK_NORMS
from ..feed_forward import MLPS, llama_hidden_size
from ..norms import NORMS
from ..positions.rotary import ROTARY_PAIRINGS

__all__ = ["DecoderConfig", "POSITION_SCHEMES"]

POSITION_SCHEMES = ("sinusoidal", "learned", "alibi", "rope", "none")


@dataclass(frozen=True)
class DecoderConfig:
    """Every setting of a ``DecoderOnlyTransformer``; the defaults are the course's 2017 block
    (chapter 09). ``build()`` makes the model, ``replace(**changes)`` a changed copy;
    ``DecoderConfig.gpt2(...)`` and ``DecoderConfig.llama(...)`` give those families' blocks at any size.

    vocab_size: number of token ids (specials included).
    d_model, n_heads, ff_units, n_layers, dropout, norm_first: the layers', as ``EncoderLayer``.
    max_len: the longest stream the model reads.
    pad_id: never attended to, and not counted in positions, so a prompt padded on the left gets
        the positions it has alone; ``None``: no padding.
    tie_weights: the output layer reuses the embedding matrix (Press and Wolf 2017); the logits
        then start with a standard deviation of ``√d_model``: pass a small ``embedding_std``.
    embedding_std: draw the embedding from ``N(0, embedding_std²)`` (never scaled by ``√d_model``).
    store_alphas: keep every layer's attention weights (the weights rule: ``scaled_dot_product``'s docstring).
    position_scheme: one of ``POSITION_SCHEMES`` (chapter 10): ``"sinusoidal"`` or ``"learned"``
        tables added to the embeddings; ``"alibi"`` (``-slope × distance`` on the scores) or
        ``"rope"`` (queries and keys rotated, with ``rope_base``) inside the attention;
        ``"none"``: only the causal mask.
    Today's block (chapter 12), the defaults giving the 2017 block:
    n_kv_heads: key and value heads, dividing ``n_heads`` (grouped-query; 1: multi-query).
    norm: ``"layernorm"`` or ``"rmsnorm"``, every norm with ``norm_eps``.
    mlp: ``"relu"``, ``"gelu"``, ``"gelu_tanh"`` (GPT-2) or ``"swiglu"`` (Llama), ``ff_units`` wide.
    bias: biases in the attention, the feed-forward network and LayerNorms; ``head_bias``: in the output layer.
    rope_pairing: ``"interleaved"`` (RoFormer's) or ``"rotate_half"`` (Hugging Face's Llama).
    After Llama (chapter 17), the defaults giving Llama's block:
    qk_norm: ``None``, or an RMSNorm on the queries and keys over each head (``"head"``: Qwen3) or
        over all heads at once (``"all"``: OLMo 2); see ``NarrowMultiHeadAttention``.
    norm_output: normalise each sublayer's output before the residual add (OLMo 2, with
        ``norm_first=False``; with ``norm_first=True``, Gemma's norms on both sides); see ``SubLayerWrapper``.
    sliding_window: ``None`` (every earlier token), or ``w``: each query reads at most the ``w`` most
        recent tokens, itself included, as Mistral counts them, and each layer's cache holds at most
        ``attention_sinks + w`` tokens; see ``window_mask`` and ``WindowedKVCache``. Counted over the
        stream's tokens, padding included (as transformers counts them).
    attention_sinks: with a window, the stream's first ``k`` tokens stay readable beside it (Xiao et
        al. 2023's attention sinks, at their positions in the stream, not in the cache); ``0``: none.
    kv_latent_dim: multi-head latent attention (DeepSeek-V2) with a latent of this size, rotary
        positions only; ``None``: the heads' own keys and values. Its other sizes (``None``: from
        ``d_k = d_model // n_heads``): ``q_latent_dim`` (``None``: no query latent),
        ``rope_head_dim`` (``d_k // 2``), ``nope_head_dim`` and ``v_head_dim`` (``d_k``); see ``LatentAttention``.
    n_experts: ``None`` (one feed-forward network), or a mixture of that many (Mixtral: 8), each token
        sent to ``experts_per_token`` of them (top-k; Mixtral: 2), each expert ``expert_ff_units`` wide
        (``None``: ``ff_units``), the k router weights renormalised if ``norm_topk_prob`` (Mixtral;
        Qwen3-MoE: its config's); see ``MixtureOfExperts``. The model's ``aux_loss()`` is then the
        load-balancing loss of its last forward pass.
    """

    vocab_size: int
    d_model: int = 64
    n_heads: int = 4
    ff_units: int = 128
    n_layers: int = 2
    dropout: float = 0.1
    max_len: int = 64
    pad_id: int | None = 0
    norm_first: bool = True
    tie_weights: bool = True
    embedding_std: float | None = None
    store_alphas: bool = False
    position_scheme: str = "sinusoidal"
    rope_base: float = 10000.0
    n_kv_heads: int | None = None
    norm: str = "layernorm"
    norm_eps: float = 1e-5
    mlp: str = "relu"
    bias: bool = True
    head_bias: bool = True
    rope_pairing: str = "interleaved"
    qk_norm: str | None = None
    norm_output: bool = False
    sliding_window: int | None = None
    attention_sinks: int = 0
    n_experts: int | None = None
    experts_per_token: int = 2
    expert_ff_units: int | None = None
    norm_topk_prob: bool = True
    kv_latent_dim: int | None = None
    q_latent_dim: int | None = None
    rope_head_dim: int | None = None
    nope_head_dim: int | None = None
    v_head_dim: int | None = None

    def __post_init__(self):
        """Refuse at once a setting the model could not build, naming it: the model checks none again."""
        check_choice("position_scheme", self.position_scheme, POSITION_SCHEMES)
        check_choice("norm", self.norm, NORMS)
        check_choice("mlp", self.mlp, MLPS)
        check_choice("rope_pairing", self.rope_pairing, ROTARY_PAIRINGS)
        if self.qk_norm is not None:
            check_choice("qk_norm", self.qk_norm, QK_NORMS)
        for name in ("head_bias", "norm_output", "norm_topk_prob"):
            check_instance(name, getattr(self, name), bool, "True or False")
        self._check_latent()
        self._check_window()
        check_positive_number("rope_base", self.rope_base)
        for name in ("vocab_size", "d_model", "n_layers", "max_len", "experts_per_token"):
            check_positive_int(name, getattr(self, name))
        if self.embedding_std is not None:
            check_positive_number("embedding_std", self.embedding_std)
        for name in ("n_experts", "expert_ff_units"):
            if getattr(self, name) is not None:
                check_positive_int(name, getattr(self, name))
        if self.pad_id is not None:
            check_int_range("pad_id", self.pad_id, 0, self.vocab_size - 1)
        if self.n_experts is not None and self.experts_per_token > self.n_experts:
            raise ValueError(f"experts_per_token must be at most n_experts ({self.n_experts}), "
                             f"got {self.experts_per_token}")
        rope_d_k = self.position_scheme == "rope" and self.kv_latent_dim is None and self.d_model % self.n_heads == 0
        if rope_d_k and (self.d_model // self.n_heads) % 2 != 0:  # (an indivisible d_model: the layers refuse it)
            raise ValueError(f"position_scheme 'rope' needs an even d_model // n_heads (the dimensions go in "
                             f"pairs), got d_model={self.d_model} and n_heads={self.n_heads}")

    def _check_latent(self):
        """Latent attention's settings: rotary positions, none of the heads' own key options."""
        sizes = ("q_latent_dim", "rope_head_dim", "nope_head_dim", "v_head_dim")
        if self.kv_latent_dim is None:
            given = [f"{name}={getattr(self, name)}" for name in sizes if getattr(self, name) is not None]
            if given:
                raise ValueError(f"{', '.join(given)} only apply to latent attention: set kv_latent_dim too")
            return
        if self.position_scheme != "rope":
            raise ValueError(f"latent attention (kv_latent_dim={self.kv_latent_dim}) needs position_scheme 'rope', "
                             f"got {self.position_scheme!r}")
        if self.n_kv_heads not in (None, self.n_heads) or self.qk_norm is not None:
            raise ValueError("latent attention rebuilds every head's keys from its latent: n_kv_heads and qk_norm "
                             f"must be left unset, got n_kv_heads={self.n_kv_heads} and qk_norm={self.qk_norm!r}")
        for name in sizes:
            if getattr(self, name) is not None:
                check_positive_int(name, getattr(self, name))
        if self.latent_sizes()["rope_head_dim"] % 2 != 0:
            raise ValueError(f"rope_head_dim must be even (RoPE turns pairs of dimensions), got {self.rope_head_dim}")

    def _check_window(self):
        """``sliding_window``: ``None`` or a positive int; ``attention_sinks``: an int >= 0, only with a window."""
        if self.sliding_window is not None:
            check_positive_int("sliding_window", self.sliding_window)
        check_non_negative_int("attention_sinks", self.attention_sinks)
        if self.attention_sinks and self.sliding_window is None:
            raise ValueError(f"attention_sinks={self.attention_sinks} needs a sliding_window: without one every "
                             "token stays readable")

    def latent_sizes(self):
        """Latent attention's sizes, the defaults filled in: a dict of ``LatentAttention``'s arguments."""
        d_k = self.d_model // self.n_heads
        return dict(kv_latent_dim=self.kv_latent_dim, q_latent_dim=self.q_latent_dim,
                    rope_head_dim=self.rope_head_dim or 2 * max(1, d_k // 4), nope_head_dim=self.nope_head_dim or d_k,
                    v_head_dim=self.v_head_dim or d_k)

    @classmethod
    def gpt2(cls, vocab_size, d_model=768, n_heads=12, n_layers=12, max_len=1024, **changes):
        """GPT-2's block (Radford et al. 2019): pre-norm LayerNorm, learned positions, a
        ``4 · d_model`` GELU (tanh) network, biases everywhere but the output layer, tied output."""
        fields = dict(d_model=d_model, n_heads=n_heads, ff_units=4 * d_model, n_layers=n_layers, max_len=max_len,
                      pad_id=None, position_scheme="learned", mlp="gelu_tanh", head_bias=False)
        return cls(vocab_size, **{**fields, **changes})

    @classmethod
    def llama(cls, vocab_size, d_model=4096, n_heads=32, n_layers=32, max_len=8192, n_kv_heads=8, **changes):
        """Llama's block (Touvron et al. 2023): RMSNorm, rotary positions paired as Hugging Face does
        (``rotate_half``), grouped-query attention, SwiGLU of ``llama_hidden_size(d_model)``, no
        biases, untied output. The sizes default to Llama 3 8B's layers and heads; its
        ``ff_units`` (14336) and ``rope_base`` (500000) must be passed, the defaults being Llama 2's
        rule (``llama_hidden_size``) and base (10000)."""
        check_positive_int("d_model", d_model)
        fields = dict(d_model=d_model, n_heads=n_heads, ff_units=llama_hidden_size(d_model), n_layers=n_layers,
                      max_len=max_len, n_kv_heads=n_kv_heads, pad_id=None, tie_weights=False, dropout=0.0,
                      position_scheme="rope", rope_pairing="rotate_half", norm="rmsnorm", norm_eps=1e-5,
                      mlp="swiglu", bias=False, head_bias=False)
        return cls(vocab_size, **{**fields, **changes})

    def replace(self, **changes):
        """A copy with ``changes``."""
        return replace(self, **changes)

    def changes(self):
        """The settings that differ from the defaults (the course's 2017 block), as a dict: what
        makes this block what it is."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name == "vocab_size"
                or getattr(self, f.name) != f.default}

    def build(self):
        """The ``DecoderOnlyTransformer`` these settings describe (its own random weights)."""
        from .model import DecoderOnlyTransformer  # the model reads its defaults from this file

        return DecoderOnlyTransformer(self)
