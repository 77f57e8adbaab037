"""Chapter 06's "Your turn": combine a padding and a causal mask into one additive mask per
head for ``nn.MultiheadAttention``, copy its weights back into our attention, and build the
``nn.Transformer`` that matches one of our models.

In the notebook::

    from stepbystep.exercises import ch06
    ch06.combined_mask.check(my_combined_mask)
    ch06.combined_mask.solution()
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
    NarrowMultiHeadAttention,
    TransformerModel,
    copy_to_torch,
    subsequent_mask,
    to_key_padding_mask,
)
from .exercise import Exercise, expects_function

__all__ = ["combined_mask", "copy_from_torch", "matching_transformer"]


def _combined_mask_solution(target_pad, causal, n_heads):
    keep = target_pad & causal  # (N, 1, L) & (1, L, L) -> (N, L, L): True = may attend
    additive = torch.zeros(keep.shape).masked_fill(~keep, float("-inf"))  # (N, L, L): 0 or -inf
    return additive.repeat_interleave(n_heads, dim=0)  # (N * h, L, L): row n * h + j is sequence n, head j


def _combined_cases():
    """Padded targets' keep-masks ``(N, 1, L)`` (position 0 always real), causal masks and head counts."""
    for lengths, n_heads in (([4, 2], 2), ([3, 1, 2], 3)):
        length = max(lengths)
        target_pad = (torch.arange(length) < torch.tensor(lengths)[:, None]).unsqueeze(1)  # (N, 1, L)
        yield target_pad, subsequent_mask(length), n_heads


def _additive(keep):
    return torch.zeros(keep.shape).masked_fill(~keep, float("-inf"))


def _diagnose_combined(got, target_pad, causal, n_heads):
    n, length = target_pad.shape[0], target_pad.shape[-1]
    expected = _combined_mask_solution(target_pad, causal, n_heads)  # (N * h, L, L)
    if not isinstance(got, torch.Tensor):
        return f"expected a tensor, got {type(got).__name__}"
    if got.dtype == torch.bool:
        return ("this is a boolean mask; the exercise asks for the additive float form, a number "
                "added to each score")
    if not got.is_floating_point():
        return f"expected a float tensor (a number added to each score), got dtype {got.dtype}"
    if got.dtype != torch.float32:
        return f"the scores are float32, so the mask added to them must be too; got {got.dtype}"
    if tuple(got.shape) == (n, length, length):
        return (f"shape {tuple(got.shape)} has one mask per sequence; a 3-D attn_mask of "
                f"nn.MultiheadAttention needs one per sequence and per head, {tuple(expected.shape)}")
    if tuple(got.shape) != tuple(expected.shape):
        return f"expected shape {tuple(expected.shape)} (N * n_heads, L, L), got {tuple(got.shape)}"
    keep = (target_pad & causal).repeat_interleave(n_heads, dim=0)  # (N * h, L, L)
    allowed_zero = bool(torch.all(got[keep] == 0))
    blocked_low = bool(torch.all(got[~keep] < -1e4))
    if not (allowed_zero and blocked_low):
        if bool(torch.all(got[~keep] == 0)) and bool(torch.all(got[keep] < -1e4)):
            return "the convention is inverted: 0 sits where a query must not attend, -inf where it may"
        if bool(torch.all((got == 0) | (got == 1))):
            return ("the mask holds 1 and 0; an additive mask's numbers are added to the scores, and "
                    "adding 1 or 0 blocks nothing")
        if n > 1 and n_heads > 1 and torch.equal(torch.nan_to_num(got), torch.nan_to_num(
                _additive(target_pad & causal).repeat(n_heads, 1, 1))):
            return ("each sequence's mask is right, but the copies are in the wrong order: "
                    "nn.MultiheadAttention reads row n * n_heads + j as sequence n, head j")
        causal_only = _additive(causal.expand(n, length, length)).repeat_interleave(n_heads, dim=0)
        if torch.equal(got, causal_only):
            return "the padded positions can still be attended to: only the causal part is there"
        on_queries = _additive(target_pad.transpose(1, 2) & causal).repeat_interleave(n_heads, dim=0)
        if torch.equal(got, on_queries):
            return ("the padding blocks whole rows, the padded queries: padding must stop every query from "
                    "attending to a padded key")
        padding_only = _additive(target_pad.expand(n, length, length)).repeat_interleave(n_heads, dim=0)
        if torch.equal(got, padding_only):
            return "a query can still attend to later positions: only the padding part is there"
        return ("some entries are wrong: every allowed (query, key) pair should hold 0 and every "
                "blocked one a very negative number such as -inf")
    return None


@expects_function("combined_mask(target_pad, causal, n_heads)")
def _check_combined_mask(answer):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(4)
        for target_pad, causal, n_heads in _combined_cases():
            got = answer(target_pad.clone(), causal.clone(), n_heads)
            problem = _diagnose_combined(got, target_pad, causal, n_heads)
            n, length = target_pad.shape[0], target_pad.shape[-1]
            where = f"for {n} targets of length {length} and {n_heads} heads"
            if problem:
                return f"{where}: {problem}"
            attention = nn.MultiheadAttention(embed_dim=2 * n_heads, num_heads=n_heads, batch_first=True).eval()
            x = torch.randn(n, length, 2 * n_heads)  # (N, L, d_model)
            with torch.no_grad():
                out, _ = attention(x, x, x, attn_mask=got)
                expected, _ = attention(x, x, x, attn_mask=_combined_mask_solution(target_pad, causal, n_heads))
            if not torch.allclose(out, expected, atol=1e-6):
                return f"{where}: the mask looks right, but nn.MultiheadAttention's outputs differ"
    return None


combined_mask = Exercise(
    "one additive mask for padding and causality",
    _check_combined_mask,
    "a query may attend where both keep-masks say True; broadcasting (N, 1, L) with (1, L, L) gives "
    "(N, L, L). Then turn it into numbers (masked_fill), and give every head its own copy of its "
    "sequence's mask, next to each other",
    _combined_mask_solution,
)


def _copy_from_torch_solution(theirs, ours):
    w_q, w_k, w_v = theirs.in_proj_weight.chunk(3)  # three (d_model, d_model) blocks, stacked in that order
    b_q, b_k, b_v = theirs.in_proj_bias.chunk(3)  # three (d_model,) blocks
    with torch.no_grad():  # copying into parameters is not a step to differentiate
        for linear, weight, bias in ((ours.linear_query, w_q, b_q), (ours.linear_key, w_k, b_k),
                                     (ours.linear_value, w_v, b_v)):
            linear.weight.copy_(weight)
            linear.bias.copy_(bias)
        ours.linear_out.weight.copy_(theirs.out_proj.weight)  # (d_model, d_model)
        ours.linear_out.bias.copy_(theirs.out_proj.bias)  # (d_model,)


def _attention_pair():
    """A seeded ``nn.MultiheadAttention`` and a fresh ``NarrowMultiHeadAttention`` of the same size."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        theirs = nn.MultiheadAttention(embed_dim=6, num_heads=3, dropout=0.0, batch_first=True).eval()
        with torch.no_grad():  # PyTorch starts its biases at zero: give them values worth copying
            theirs.in_proj_bias.normal_()
            theirs.out_proj.bias.normal_()
        torch.manual_seed(4)
        ours = NarrowMultiHeadAttention(n_heads=3, d_model=6, dropout=0.0).eval()
    return theirs, ours


def _diagnose_copy(theirs, ours, before):
    """Name the typical mistake behind a wrong copy, or ``None`` when none is recognised."""
    blocks = list(theirs.in_proj_weight.chunk(3))
    biases = list(theirs.in_proj_bias.chunk(3))
    linears = [ours.linear_query, ours.linear_key, ours.linear_value]
    weights = [linear.weight for linear in linears]
    theirs_ids = {id(p) for p in theirs.parameters()}
    shared = [name for name, p in ours.named_parameters() if id(p) in theirs_ids]
    if shared or any(m is theirs.out_proj for m in ours.modules()):
        return ("our module now shares PyTorch's parameters instead of holding copies of them: training "
                "either module would change the other")
    if all(torch.equal(p, before[name]) for name, p in ours.named_parameters()):
        return "our module still has its own weights: nothing was copied into its parameters"
    if all(torch.equal(w, before[f"linear_{n}.weight"]) for w, n in zip(weights, ("query", "key", "value"))):
        return "the query, key and value weights were not copied"
    if all(torch.equal(w, b.T) for w, b in zip(weights, blocks)):
        return "the projection weights are transposed: nn.Linear stores (out, in), as in_proj_weight does"
    if not all(torch.equal(w, b) for w, b in zip(weights, blocks)):
        if _is_reordering(torch.cat(weights), blocks):
            return ("our three projections hold PyTorch's three blocks, but not in the order "
                    "in_proj_weight stacks them")
        return "the query, key and value weights are not the blocks of in_proj_weight"
    if not all(torch.equal(linear.bias, b) for linear, b in zip(linears, biases)):
        return "the projection weights are right, but their biases are not in_proj_bias's blocks"
    if not torch.equal(ours.linear_out.weight, theirs.out_proj.weight) or not torch.equal(
        ours.linear_out.bias, theirs.out_proj.bias
    ):
        return "the output layer linear_out (its weight or its bias) differs from PyTorch's out_proj"
    return None


def _is_reordering(stacked, parts):
    """Whether ``stacked`` is ``torch.cat`` of ``parts`` in some other order."""
    return any(torch.equal(stacked, torch.cat(order)) for order in itertools.permutations(parts))


@expects_function("copy_from_torch(theirs, ours)")
def _check_copy_from_torch(answer):
    theirs, ours = _attention_pair()
    before = {name: p.detach().clone() for name, p in ours.named_parameters()}
    try:
        answer(theirs, ours)
    except RuntimeError as error:
        if "leaf Variable" in str(error):
            return (f"copying raised RuntimeError ({error}): an in-place copy into a parameter has to "
                    "happen where PyTorch records no gradients")
        return (f"copying raised RuntimeError ({error}); in_proj_weight is {tuple(theirs.in_proj_weight.shape)}: "
                "check along which dimension its three blocks are stacked")
    with torch.no_grad():
        problem = _diagnose_copy(theirs, ours, before)
        if problem:
            return problem
        generator = torch.Generator().manual_seed(0)
        query = torch.randn(2, 3, 6, generator=generator)  # (N, L_q, d_model)
        key = torch.randn(2, 4, 6, generator=generator)  # (N, L_k, d_model)
        source_mask = torch.tensor([[[True, True, True, False]], [[True, True, False, False]]])  # (N, 1, L_k)
        got = ours(query, key, source_mask)  # (N, L_q, d_model)
        expected, _ = theirs(query, key, key, key_padding_mask=to_key_padding_mask(source_mask))
    if not torch.allclose(got, expected, atol=1e-5):
        return "the weights look right but the outputs differ: did something else in our module change?"
    return None


copy_from_torch = Exercise(
    "copy nn.MultiheadAttention's weights into ours",
    _check_copy_from_torch,
    "in_proj_weight is three (d_model, d_model) matrices stacked on top of each other, in_proj_bias "
    "three vectors; Tensor.chunk splits a tensor into equal pieces. Copy inside torch.no_grad()",
    _copy_from_torch_solution,
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
        yield EncoderDecoderTransf(encoder, decoder, input_len=2, target_len=2, n_features=2).eval()


def _without_sizes(refusal):
    """``copy_to_torch``'s refusal without the values it compares: "X differs: ours has 3, PyTorch's
    has 2" becomes "its X differs from our model's", so the learner reads the sizes from the model."""
    what, found, _ = str(refusal).partition(" differs: ours has ")
    return f"its {what} differs from our model's" if found else str(refusal)


@expects_function("matching_transformer(model)")
def _check_matching_transformer(answer):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(5)
        for where, ours in zip(("for the checker's first model", "for the checker's second model"), _our_models()):
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
                return f"{where}: copy_to_torch refused it: {_without_sizes(error)}"
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
