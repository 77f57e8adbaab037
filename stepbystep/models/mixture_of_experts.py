"""A mixture-of-experts feed-forward layer (chapter 17): many feed-forward networks, each token sent
to a few of them (Shazeer et al., Outrageously Large Neural Networks: the Sparsely-Gated
Mixture-of-Experts Layer, 2017; Mixtral: Jiang et al., Mixtral of Experts, 2024).

For a token ``x`` and ``E`` experts ``f_1 … f_E`` (here each the model's feed-forward network, SwiGLU
in Mixtral and Qwen3-MoE), a router ``W_r`` (``E × d_model``, no bias) scores the experts:

    p = softmax(W_r x)                       the router's probabilities, (E,)
    S = top-k(p)                             the k experts the token goes to
    g_i = p_i / Σ_{j∈S} p_j  (i ∈ S)          renormalised (Mixtral; Qwen3-MoE's norm_topk_prob), or g_i = p_i
    y = Σ_{i∈S} g_i · f_i(x)                 only k of the E networks run for this token

So a token pays for ``k`` experts while the layer holds ``E``: more parameters at the same compute
per token. Shazeer et al. observed that the router tends to converge to giving large weights to the
same few experts, an imbalance that reinforces itself, as the favoured experts train fastest; Switch
Transformer's load-balancing loss (Fedus, Zoph and Shazeer, Switch Transformers: Scaling to Trillion
Parameter Models with Simple and Efficient Sparsity, 2021/2022) pushes back. Over the ``T`` tokens of a batch,

    f_i = (number of the T·k choices that picked expert i) / T      (no gradient: counts)
    P_i = (1/T) Σ_tokens p_i                                          (the gradient flows here)
    loss = E · Σ_i f_i · P_i

Under uniform routing (``f_i = k/E``, ``P_i = 1/E``) it is ``k``, and it grows as the load gathers
on the experts the router favours. With ``k = 1`` it is the paper's equations (4)-(6) without their
coefficient α; with top-k it is how Mixtral's code in ``transformers`` counts (every one of the k
choices, so ``Σ f_i = k``).
"""
import torch
import torch.nn.functional as F
from torch import nn

from ..checks import check_instance, check_positive_int
from .feed_forward import make_feed_forward

__all__ = ["MixtureOfExperts", "load_balancing_loss", "with_load_balancing"]


class MixtureOfExperts(nn.Module):
    """``n_experts`` feed-forward networks (``make_feed_forward(mlp, d_model, hidden)``: SwiGLU by
    default) behind a router; each token goes to its ``top_k`` experts and gets their outputs
    weighted by the router's probabilities, renormalised over the ``top_k`` if ``norm_topk_prob``.
    ``(N, L, d_model)`` (or any ``(..., d_model)``) in and out.

    Each call records, for plots and the trainer: ``tokens_per_expert`` ``(E,)`` (how many of the
    tokens chose each expert, no gradient), ``fraction`` (``f``: those counts over the tokens),
    ``mean_prob`` (``P``: the router's mean probabilities, with their gradient) and ``aux_loss``
    (``E · Σ f_i · P_i``, a scalar tensor). Every token is counted, padding included (as
    ``transformers`` does when given no attention mask).

    The tokens are dispatched: a loop over the experts, each running once on the rows that chose
    it (``index_add_`` puts the weighted results back), so the work is ``k`` networks per token, as
    in the reference models, not ``E``.
    """

    def __init__(self, d_model, hidden, n_experts, top_k=2, mlp="swiglu", dropout=0.0, bias=False,
                 norm_topk_prob=True):
        super().__init__()
        check_positive_int("n_experts", n_experts)
        check_positive_int("top_k", top_k)
        if top_k > n_experts:
            raise ValueError(f"top_k must be at most n_experts ({n_experts}), got {top_k}")
        check_instance("norm_topk_prob", norm_topk_prob, bool, "True or False")
        self.d_model, self.n_experts, self.top_k, self.norm_topk_prob = d_model, n_experts, top_k, norm_topk_prob
        self.router = nn.Linear(d_model, n_experts, bias=False)  # W_r: one score per expert
        self.experts = nn.ModuleList([make_feed_forward(mlp, d_model, hidden, dropout, bias) for _ in range(n_experts)])
        self.tokens_per_expert = self.fraction = self.mean_prob = self.aux_loss = None  # the last call's

    def route(self, x):
        """The router for tokens ``x`` ``(T, d_model)``: probabilities ``p`` ``(T, E)`` (float32),
        each token's experts ``(T, k)`` and their weights ``g`` ``(T, k)`` (in ``x``'s dtype)."""
        probs = F.softmax(self.router(x).float(), dim=-1)  # (T, E): in float32, as the reference models
        weights, chosen = probs.topk(self.top_k, dim=-1)  # (T, k), (T, k): the k largest, largest first
        if self.norm_topk_prob:
            weights = weights / weights.sum(dim=-1, keepdim=True)  # (T, k): the k weights sum to 1
        return probs, chosen, weights.to(x.dtype)

    def forward(self, x):
        tokens = x.reshape(-1, self.d_model)  # (T, d_model): every position of every sequence
        probs, chosen, weights = self.route(tokens)  # (T, E), (T, k), (T, k)
        out = torch.zeros_like(tokens)  # (T, d_model)
        for e, expert in enumerate(self.experts):
            row, slot = torch.where(chosen == e)  # (T_e,), (T_e,): the tokens that chose e, in which of their k slots
            out.index_add_(0, row, expert(tokens[row]) * weights[row, slot, None])  # (T_e, d_model) added to their rows
        self._record(probs, chosen)
        return out.view(x.shape)  # (..., d_model)

    def _record(self, probs, chosen):
        """The load statistics of this call and Switch Transformer's loss on them."""
        n_tokens = probs.shape[0]
        self.tokens_per_expert = torch.bincount(chosen.flatten(), minlength=self.n_experts)  # (E,): sums to T·k
        self.fraction = self.tokens_per_expert.float() / n_tokens  # (E,): f, sums to k
        self.mean_prob = probs.mean(dim=0)  # (E,): P, sums to 1
        self.aux_loss = self.n_experts * (self.fraction * self.mean_prob).sum()  # (): E · Σ f_i P_i

    def extra_repr(self):
        return f"n_experts={self.n_experts}, top_k={self.top_k}, norm_topk_prob={self.norm_topk_prob}"


def _moe_layers(model, caller, called=True):
    check_instance("model", model, nn.Module, "a torch.nn.Module")
    layers = [m for m in model.modules() if isinstance(m, MixtureOfExperts)]
    if not layers:
        raise ValueError(f"{caller} needs a model with MixtureOfExperts layers, got a {type(model).__name__} "
                         f"without one")
    if called and any(layer.aux_loss is None for layer in layers):
        raise ValueError(f"{caller} reads the model's last forward pass: call the model first")
    return layers


def load_balancing_loss(model, pooled=False):
    """The load-balancing loss of ``model``'s last forward pass, a scalar tensor: the sum of each
    ``MixtureOfExperts`` layer's ``E · Σ f_i · P_i`` (Switch Transformer: one loss per router), or,
    with ``pooled``, one ``E · Σ f̄_i · P̄_i`` on the fractions and probabilities averaged over the
    layers first, which is what ``transformers``' Mixtral and Qwen3-MoE return as ``aux_loss``
    (before ``router_aux_loss_coef``). With one layer the two agree."""
    layers = _moe_layers(model, "load_balancing_loss")
    if not pooled:
        return torch.stack([layer.aux_loss for layer in layers]).sum()  # ()
    fraction = torch.stack([layer.fraction for layer in layers]).mean(dim=0)  # (E,): f̄ over layers
    mean_prob = torch.stack([layer.mean_prob for layer in layers]).mean(dim=0)  # (E,): P̄ over layers
    return layers[0].n_experts * (fraction * mean_prob).sum()  # ()


def with_load_balancing(loss_fn, model, coef=0.01, pooled=False):
    """A loss function for the trainer (``loss_fn(prediction, y)``, as ``StepByStep`` calls it) that
    adds ``coef × load_balancing_loss(model, pooled)`` of the forward pass that made ``prediction``
    (Switch Transformer used ``coef = 0.01``; Mixtral's and Qwen3-MoE's configs default to 0.001)."""
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, as loss_fn(prediction, y), got {type(loss_fn).__name__}")
    if not isinstance(coef, (int, float)) or isinstance(coef, bool) or coef < 0:
        raise ValueError(f"coef must be a number >= 0, got {coef!r}")
    _moe_layers(model, "with_load_balancing", called=False)

    def loss(prediction, y):
        return loss_fn(prediction, y) + coef * load_balancing_loss(model, pooled)

    return loss

