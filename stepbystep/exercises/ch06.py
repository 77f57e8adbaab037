"""Chapter 06's "Your turn": write our masks in PyTorch's convention, copy attention weights
into ``nn.MultiheadAttention`` by hand, and build the ``nn.Transformer`` that matches one of
our models.

In the notebook::

    from stepbystep.exercises import ch06
    ch06.pytorch_masks.check(my_pytorch_masks)
    ch06.pytorch_masks.solution()
"""
import itertools

import torch
from torch import nn

from ..devices import evaluating
from ..models import (
    DecoderLayer,
    DecoderTransf,
    EncoderDecoderTransf,
    EncoderLayer,
    EncoderTransf,
    MultiHeadedAttention,
    TransformerModel,
    copy_to_torch,
    subsequent_mask,
    to_key_padding_mask,
    to_torch_attn_mask,
)
from .exercise import Exercise, expects_function

__all__ = ["pytorch_masks", "copy_attention", "matching_transformer"]


def _pytorch_masks_solution(source_mask, target_mask):
    key_padding_mask = ~source_mask[:, 0, :]  # (N, 1, L_s) -> (N, L_s): True = padding, blocked
    attn_mask = ~target_mask[0]  # (1, L_t, L_t) -> (L_t, L_t): True = blocked (a future position)
    return key_padding_mask, attn_mask


def _mask_cases():
    """Pairs of our keep-masks: a padded source ``(N, 1, L_s)`` and a causal target ``(1, L_t, L_t)``."""
    lengths = torch.tensor([[3, 2, 1], [4, 4, 2]])  # real (unpadded) length of each source
    for real, source_len, target_len in ((lengths[0], 3, 2), (lengths[1], 4, 3)):
        source_mask = (torch.arange(source_len) < real[:, None]).unsqueeze(1)  # (N, 1, L_s)
        yield source_mask, subsequent_mask(target_len)  # (1, L_t, L_t)


def _check_one_mask(name, got, keep, expected, unchanged_note=""):
    if not isinstance(got, torch.Tensor):
        return f"{name} should be a tensor, got {type(got).__name__}"
    if tuple(got.shape) != tuple(expected.shape):
        return f"{name} should have shape {tuple(expected.shape)}, got {tuple(got.shape)}"
    if got.dtype != torch.bool:
        return (
            f"{name} should be boolean (True = blocked), got dtype {got.dtype}; additive float "
            "masks work too, but PyTorch wants both masks of the same kind"
        )
    if torch.equal(got, keep.reshape(expected.shape)):
        return (
            f"{name} is our keep-mask unchanged: PyTorch reads True as *blocked*, so every query "
            f"would attend exactly where it must not{unchanged_note}"
        )
    if not torch.equal(got, expected):
        return (f"{name} has the right shape and dtype but not the right values: got "
                f"{got.int().tolist()} (1 = True), and PyTorch reads True as blocked")
    return None


@expects_function("pytorch_masks(source_mask, target_mask)")
def _check_pytorch_masks(answer):
    for source_mask, target_mask in _mask_cases():
        got = answer(source_mask.clone(), target_mask.clone())
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return "return a pair (key_padding_mask, attn_mask)"
        problem = _check_one_mask(
            "key_padding_mask", got[0], source_mask, to_key_padding_mask(source_mask),
            " (the mistake the book's TransformerModel makes with its source mask)",
        ) or _check_one_mask("attn_mask", got[1], target_mask, to_torch_attn_mask(target_mask))
        if problem:
            shapes = f"a source mask {tuple(source_mask.shape)} and a target mask {tuple(target_mask.shape)}"
            return f"for {shapes}: {problem}"
    return None


pytorch_masks = Exercise(
    "our masks in PyTorch's convention",
    _check_pytorch_masks,
    "invert each mask with ~ (ours: True = may attend; PyTorch's: True = blocked), then drop the "
    "singleton dimension: the source mask's middle one, the target mask's first one",
    _pytorch_masks_solution,
)


def _copy_attention_solution(ours, theirs):
    q, k, v = ours.linear_query, ours.linear_key, ours.linear_value
    with torch.no_grad():  # copying into parameters is not a step to differentiate
        theirs.in_proj_weight.copy_(torch.cat([q.weight, k.weight, v.weight]))  # (3 d_model, d_model)
        theirs.in_proj_bias.copy_(torch.cat([q.bias, k.bias, v.bias]))  # (3 d_model,)
        theirs.out_proj.weight.copy_(ours.linear_out.weight)  # (d_model, d_model)
        theirs.out_proj.bias.copy_(ours.linear_out.bias)  # (d_model,)


def _attention_pair():
    """A seeded ``MultiHeadedAttention`` and a fresh ``nn.MultiheadAttention`` of the same size."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        ours = MultiHeadedAttention(n_heads=3, d_model=6, dropout=0.0).eval()
        theirs = nn.MultiheadAttention(embed_dim=6, num_heads=3, dropout=0.0, batch_first=True).eval()
    return ours, theirs


def _diagnose_copy(ours, theirs, before):
    """Name the typical mistake behind a wrong copy, or ``None`` when none is recognised."""
    q, k, v = ours.linear_query, ours.linear_key, ours.linear_value
    weight, bias = theirs.in_proj_weight, theirs.in_proj_bias
    if all(torch.equal(p, before[name]) for name, p in theirs.named_parameters()):
        return "PyTorch's module still has its own weights: nothing was copied into its parameters"
    if torch.equal(weight, before["in_proj_weight"]):
        return "in_proj_weight was not copied"
    if torch.equal(weight, torch.cat([q.weight.T, k.weight.T, v.weight.T])):
        return "in_proj_weight holds our weights transposed"
    if not torch.equal(weight, torch.cat([q.weight, k.weight, v.weight])):
        if _is_reordering(weight, [q.weight, k.weight, v.weight]):
            return "in_proj_weight holds our three projection weights, but not in the order PyTorch reads them"
        return "in_proj_weight does not hold our query, key and value projection weights"
    if not torch.equal(bias, torch.cat([q.bias, k.bias, v.bias])):
        return "in_proj_bias does not hold our query, key and value biases in the order PyTorch reads them"
    if not torch.equal(theirs.out_proj.weight, ours.linear_out.weight) or not torch.equal(
        theirs.out_proj.bias, ours.linear_out.bias
    ):
        return "the output layer out_proj (its weight or its bias) differs from our linear_out"
    return None


def _is_reordering(stacked, parts):
    """Whether ``stacked`` is ``torch.cat`` of ``parts`` in some other order."""
    return any(torch.equal(stacked, torch.cat(order)) for order in itertools.permutations(parts))


@expects_function("copy_attention(ours, theirs)")
def _check_copy_attention(answer):
    ours, theirs = _attention_pair()
    before = {name: p.detach().clone() for name, p in theirs.named_parameters()}
    answer(ours, theirs)
    with torch.no_grad():
        problem = _diagnose_copy(ours, theirs, before)
        if problem:
            return problem
        generator = torch.Generator().manual_seed(0)
        query = torch.randn(2, 3, 6, generator=generator)  # (N, L_q, d_model)
        key = torch.randn(2, 4, 6, generator=generator)  # (N, L_k, d_model)
        source_mask = torch.tensor([[[True, True, True, False]], [[True, True, False, False]]])  # (N, 1, L_k)
        ours.init_keys(key)
        expected = ours(query, mask=source_mask)  # (N, L_q, d_model)
        got, _ = theirs(query, key, key, key_padding_mask=to_key_padding_mask(source_mask))  # (N, L_q, d_model)
    if not torch.allclose(got, expected, atol=1e-6):
        return "the weights look right but the outputs differ: did something else in PyTorch's module change?"
    return None


copy_attention = Exercise(
    "copy attention weights into nn.MultiheadAttention",
    _check_copy_attention,
    "in_proj_weight is torch.cat of the query, key and value weights (that order), in_proj_bias the "
    "same for the biases, out_proj is linear_out; copy with .copy_() inside torch.no_grad()",
    _copy_attention_solution,
)


def _matching_transformer_solution(model):
    layer = model.encoder.layers[0]  # every layer of a stack is a copy of the first one
    return nn.Transformer(
        d_model=layer.d_model,
        nhead=layer.n_heads,
        num_encoder_layers=len(model.encoder.layers),
        num_decoder_layers=len(model.decoder.layers),
        dim_feedforward=layer.ff_units,
        dropout=layer.self_attn_heads.dropout.p,
        batch_first=True,  # our sequences are (N, L, F); PyTorch's default is (L, N, F)
        norm_first=layer.norm_first,  # PyTorch's default is norm-last
    )


def _our_models():
    """Two of our encoder-decoders with final norms (as ``nn.Transformer`` always has)."""
    configs = (
        dict(n_heads=3, d_model=6, ff_units=10, n_enc=2, n_dec=2, norm_first=True),
        dict(n_heads=2, d_model=4, ff_units=8, n_enc=1, n_dec=3, norm_first=False),
    )
    for c in configs:
        enc = EncoderLayer(c["n_heads"], c["d_model"], c["ff_units"], dropout=0.1, norm_first=c["norm_first"])
        dec = DecoderLayer(c["n_heads"], c["d_model"], c["ff_units"], dropout=0.1, norm_first=c["norm_first"])
        encoder = EncoderTransf(enc, n_layers=c["n_enc"], final_norm=True)
        decoder = DecoderTransf(dec, n_layers=c["n_dec"], final_norm=True)
        yield c, EncoderDecoderTransf(encoder, decoder, input_len=2, target_len=2, n_features=2).eval()


@expects_function("matching_transformer(model)")
def _check_matching_transformer(answer):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(5)
        for config, ours in _our_models():
            where = (
                f"for our model with {config['n_heads']} heads, d_model {config['d_model']}, ff_units "
                f"{config['ff_units']}, {config['n_enc']}+{config['n_dec']} layers, norm_first={config['norm_first']}"
            )
            got = answer(ours)
            if not isinstance(got, nn.Transformer):
                return f"{where}: expected an nn.Transformer, got {type(got).__name__}"
            if not got.batch_first:
                return (f"{where}: this nn.Transformer reads its inputs sequence-first, (L, N, F), and "
                        "our sequences are (N, L, F)")
            wrapper = TransformerModel(got, ours.input_len, ours.target_len, ours.n_features, input_norm=False)
            try:
                copy_to_torch(ours, wrapper)
            except ValueError as error:
                return f"{where}: copy_to_torch refused it: {error}"
            source = torch.randn(3, ours.input_len, ours.n_features)  # (N, L_s, F)
            with evaluating(wrapper), evaluating(ours):
                same = torch.allclose(wrapper(source), ours(source), atol=1e-5)
            if not same:
                return f"{where}: the weights copy over but the predictions differ"
    return None


matching_transformer = Exercise(
    "the nn.Transformer that matches our model",
    _check_matching_transformer,
    "read the sizes from model.encoder.layers[0] (d_model, n_heads, ff_units, norm_first) and count "
    "the layers of each stack; nn.Transformer defaults to batch_first=False and norm_first=False",
    _matching_transformer_solution,
)
