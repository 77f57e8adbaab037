"""What did a head learn? Scores from attention weights, switching heads off, and the loss at
every position (chapter 13).

The scores are pure functions of attention weights ``(N, H, L, L)`` (rows: queries, columns: keys),
one number per head, 1.0 on the perfect pattern:

- ``previous_token_score``: the mean weight a query puts on the key just before it;
- ``induction_score``: the mean weight a query puts on the keys right after the earlier occurrences
  of its own token (the heads of Olsson et al. 2022, "In-context Learning and Induction Heads").

``ov_circuit`` and ``copying_score`` read from the weights what a head writes for each token it reads;
``composition_scores`` and ``qk_circuit`` how much a layer-1 head reads of what a layer-0 head writes.
``ablate_heads`` switches heads off inside a ``with`` block and leaves the model exactly as it was;
``ablate_path`` switches them off only on the way into one later layer's queries, keys or values.
"""
from contextlib import contextmanager

import torch
import torch.nn.functional as F

from .checks import check_choice, check_instance, check_int_range, check_positive_int, check_tensor
from .devices import evaluating, model_device
from .models import NarrowMultiHeadAttention, keeping_weights

__all__ = ["previous_token_score", "induction_score", "attention_weights", "head_scores", "ablate_heads",
           "ABLATIONS", "READS", "ablate_path", "ov_circuit", "copying_score", "composition_scores", "qk_circuit",
           "per_position_loss", "half_losses"]

ABLATIONS = ("zero", "mean")
READS = ("query", "key", "value")


def _check_weights(weights):
    check_tensor("weights", weights, ndim=4)
    if not weights.is_floating_point():
        raise TypeError(f"weights must be a float tensor (N, H, L, L), got {weights.dtype}")
    if weights.shape[-1] != weights.shape[-2] or weights.shape[-1] < 2:
        raise ValueError(f"weights must have shape (N, H, L, L) with L >= 2 (a query and a key before it), "
                         f"got {tuple(weights.shape)}")


def previous_token_score(weights):
    """The mean weight each query (from position 1 on) puts on the key just before it: ``(H,)``.

    ``weights`` ``(N, H, L, L)``; a head that always reads the previous token scores 1.0.
    """
    _check_weights(weights)
    before = weights.diagonal(offset=-1, dim1=-2, dim2=-1)  # (N, H, L - 1): query i, key i - 1
    return before.mean(dim=(0, 2))  # (H,)


def _induction_targets(ids):
    """``(N, L, L)`` bool: key ``k`` follows an earlier occurrence of query ``i``'s token, ``k = j + 1``
    with ``j < i`` and ``ids[j] == ids[i]``."""
    same = ids.unsqueeze(2) == ids.unsqueeze(1)  # (N, L, L): query i's token at position j
    earlier = torch.ones_like(same[0]).tril(diagonal=-1)  # (L, L): j < i
    occurrences = same & earlier  # (N, L, L)
    return F.pad(occurrences[..., :-1], (1, 0))  # (N, L, L): shifted one key right, j -> j + 1


def induction_score(weights, ids):
    """The mean weight a query puts on the keys right after the earlier occurrences of its own token:
    ``(H,)``, averaged over the queries whose token occurred before (on a repeated sequence, the repeat).

    ``weights`` ``(N, H, L, L)``, ``ids`` ``(N, L)``; a head that always reads those keys scores 1.0.
    """
    _check_weights(weights)
    check_tensor("ids", ids, ndim=2)
    if ids.is_floating_point() or ids.dtype == torch.bool:
        raise TypeError(f"ids must be an integer tensor (N, L), got {ids.dtype}")
    n, _, length, _ = weights.shape
    if tuple(ids.shape) != (n, length):
        raise ValueError(f"ids must have shape ({n}, {length}) to match weights {tuple(weights.shape)}, "
                         f"got {tuple(ids.shape)}")
    targets = _induction_targets(ids.to(weights.device))  # (N, L, L)
    counted = targets.any(dim=-1)  # (N, L): queries whose token occurred before
    if not bool(counted.any()):
        raise ValueError("ids must repeat at least one token (a query with an earlier occurrence), got none")
    on_targets = (weights * targets.unsqueeze(1)).sum(dim=-1)  # (N, H, L): weight on those keys
    counted = counted.unsqueeze(1).to(weights.dtype)  # (N, 1, L)
    return (on_targets * counted).sum(dim=(0, 2)) / counted.sum()  # (H,)


def _attention_layers(model):
    """The model's self-attention modules, one per layer; a clear TypeError for any other model."""
    layers = getattr(model, "layers", None)
    if not isinstance(model, torch.nn.Module) or layers is None or not all(
            isinstance(getattr(layer, "self_attn_heads", None), NarrowMultiHeadAttention) for layer in layers):
        raise TypeError(f"model must be a decoder-only model whose layers have self_attn_heads "
                        f"(NarrowMultiHeadAttention), got {type(model).__name__}")
    return [layer.self_attn_heads for layer in layers]


def attention_weights(model, ids):
    """Every layer's attention weights for ``ids`` ``(N, L)``, from one teaching-path run in eval mode
    without gradients: a list of ``(N, H, L, L)`` on the CPU, one per layer; the model's settings are
    restored. ``ids`` go to the model's device first."""
    attentions = _attention_layers(model)
    check_tensor("ids", ids, ndim=2)
    ids = ids.to(model_device(model))  # (N, L)
    with keeping_weights(*attentions), evaluating(model):
        model(ids)
    return [attention.alphas.cpu() for attention in attentions]


def head_scores(model, ids):
    """Both scores of every head on ``ids`` ``(N, L)``: ``(previous, induction)``, each ``(n_layers, H)``."""
    weights = attention_weights(model, ids)  # [(N, H, L, L)] * n_layers
    previous = torch.stack([previous_token_score(w) for w in weights])  # (n_layers, H)
    induction = torch.stack([induction_score(w, ids) for w in weights])  # (n_layers, H)
    return previous, induction


@contextmanager
def ablate_heads(model, heads, how="zero"):
    """Switch off the ``(layer, head)`` pairs in ``heads`` inside the ``with`` block.

    A head's output is its ``d_k`` slice of the merged context, just before ``linear_out``; a forward
    pre-hook replaces it by zeros (``how="zero"``) or by its mean over the batch and the positions
    (``"mean"``), on both attention paths (``store_alphas`` True or False). On exit the hooks are
    removed: the model computes exactly what it did before.
    """
    check_choice("how", how, ABLATIONS)
    attentions = _attention_layers(model)
    check_instance("heads", heads, (list, tuple, set), "a list of (layer, head) pairs")
    by_layer = {}
    for pair in heads:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"each of heads must be a (layer, head) pair, got {pair!r}")
        layer, head = pair
        check_int_range("layer", layer, 0, len(attentions) - 1)
        check_int_range("head", head, 0, attentions[layer].n_heads - 1)
        by_layer.setdefault(layer, set()).add(head)
    handles = [attentions[layer].linear_out.register_forward_pre_hook(_head_ablation(attentions[layer], off, how))
               for layer, off in by_layer.items()]
    try:
        yield model
    finally:
        for handle in handles:
            handle.remove()


def _head_ablation(attention, heads, how):
    """A pre-hook on ``linear_out`` that replaces the ``d_k`` slices of ``heads`` in its input."""
    off = torch.zeros(attention.d_model, dtype=torch.bool)  # (d_model,)
    for head in heads:
        off[head * attention.d_k:(head + 1) * attention.d_k] = True

    def hook(module, args):
        merged = args[0]  # (N, L, d_model): the heads' contexts side by side
        mask = off.to(merged.device)  # (d_model,)
        fill = 0.0 if how == "zero" else merged.mean(dim=(0, 1), keepdim=True)  # scalar, or (1, 1, d_model)
        return (torch.where(mask, fill, merged),)  # (N, L, d_model)

    return hook


def ablate_path(model, ids, heads, layer, reads=("key",), how="zero"):
    """Run ``ids`` ``(N, L)`` with ``heads`` switched off only for what layer ``layer`` reads through ``reads``
    (some of ``"query"``, ``"key"``, ``"value"``); every other path sees them on.

    First a run with the heads off records the inputs of that layer's ``linear_query``, ``linear_key``
    and ``linear_value``; then an intact run gets the recorded ones in place of ``reads``' own. Eval mode,
    no gradients, the model restored. Returns the logits ``(N, L, V)`` and that layer's attention
    weights ``(N, H, L, L)``, on the CPU. The heads must sit in earlier layers than ``layer``.
    """
    attentions = _attention_layers(model)
    check_tensor("ids", ids, ndim=2)
    ids = ids.to(model_device(model))  # (N, L)
    check_int_range("layer", layer, 0, len(attentions) - 1)
    check_instance("reads", reads, (list, tuple), "a list of 'query', 'key' or 'value'")
    for part in reads:
        check_choice("each of reads", part, READS)
    check_instance("heads", heads, (list, tuple, set), "a list of (layer, head) pairs")
    if any(isinstance(pair, (list, tuple)) and len(pair) == 2 and pair[0] >= layer for pair in heads):
        raise ValueError(f"heads must sit in layers before layer {layer}, got {sorted(heads)}")
    attention = attentions[layer]
    linears = {part: getattr(attention, f"linear_{part}") for part in reads}
    recorded = {}

    def record(part):
        def hook(module, args):
            recorded[part] = args[0]  # (N, L, d_model): what the projection reads with the heads off
        return hook

    def replay(part):
        def hook(module, args):
            return (recorded[part],)  # the recorded input in place of the intact one
        return hook

    with evaluating(model):
        handles = [linear.register_forward_pre_hook(record(part)) for part, linear in linears.items()]
        try:
            with ablate_heads(model, heads, how):
                model(ids)
        finally:
            for handle in handles:
                handle.remove()
        handles = [linear.register_forward_pre_hook(replay(part)) for part, linear in linears.items()]
        try:
            with keeping_weights(attention):
                logits = model(ids)  # (N, L, V)
            return logits.cpu(), attention.alphas.cpu()
        finally:
            for handle in handles:
                handle.remove()


def ov_circuit(model, layer, head):
    """What head ``(layer, head)`` adds to the logits for each token it reads, along the direct path
    from the embedding: ``(V, V)``, column ``j`` for read token ``j``, row ``i`` for output token ``i``.

    ``W_U · diag(γ_final) · C · W_O^h · W_V^h · diag(γ_layer) · C · W_E`` (Elhage et al.'s OV circuit),
    with the LayerNorms' centering ``C`` and gains kept, their division by the spread (a positive
    factor) and the biases left out, as Elhage et al.'s OV circuit sets biases aside. Needs a norm-first
    model with a final norm. Computed where the model lives, returned on the CPU.
    """
    attentions = _attention_layers(model)
    check_int_range("layer", layer, 0, len(attentions) - 1)
    attention = attentions[layer]
    check_int_range("head", head, 0, attention.n_heads - 1)
    if getattr(model, "norm", None) is None or not getattr(model.layers[layer], "norm_first", False):
        raise ValueError("model must be norm-first with a final norm (model.norm), as the decoder-only models are")
    d_model, heads = attention.d_model, slice(head * attention.d_k, (head + 1) * attention.d_k)
    centre = torch.eye(d_model, device=model.embed.weight.device) - 1.0 / d_model  # (d_model, d_model)
    with torch.no_grad():
        read = torch.diag(model.layers[layer].sublayers[0].norm.weight) @ centre @ model.embed.weight.T  # (d, V): γ ⊙ C x
        written = attention.linear_out.weight[:, heads] @ attention.linear_value.weight[heads] @ read  # (d, V)
        return (model.head.weight @ torch.diag(model.norm.weight) @ centre @ written).cpu()  # (V, V)


def _norm_matrix(model, layer):
    """Layer ``layer``'s input norm as a matrix ``diag(γ) · C`` (d, d): its centering and gain, its division by
    the spread (a positive factor) left out, as ``ov_circuit`` does."""
    norm = model.layers[layer].sublayers[0].norm
    d_model = norm.weight.shape[0]
    centre = torch.eye(d_model, device=norm.weight.device) - 1.0 / d_model  # (d, d)
    return torch.diag(norm.weight) @ centre  # (d, d)


def _head_rows(attention, part, head):
    """The ``d_k`` rows of ``linear_{part}`` that make ``head``'s queries, keys or values: (d_k, d)."""
    return getattr(attention, f"linear_{part}").weight[head * attention.d_k:(head + 1) * attention.d_k]


def _written(model, head):
    """What layer-0 ``head`` writes to the residual stream for what it reads: ``W_O^h W_V^h diag(γ) C`` (d, d)."""
    attention = _attention_layers(model)[0]
    columns = slice(head * attention.d_k, (head + 1) * attention.d_k)
    return attention.linear_out.weight[:, columns] @ _head_rows(attention, "value", head) @ _norm_matrix(model, 0)


def composition_scores(model):
    """How much each layer-1 head's queries, keys and values read of what each layer-0 head writes:
    ``(3, H0, H1)``, in ``READS``' order (query, key, value), then layer-0 head, then layer-1 head.

    ``‖W_X^{h1} N_1 W_OV^{h0}‖_F / (‖W_X^{h1} N_1‖_F ‖W_OV^{h0}‖_F)`` for ``X`` the query, key or value
    projection, ``N_1`` layer 1's norm as a matrix (``ov_circuit``'s reading) and ``W_OV^{h0}`` what
    layer-0 head ``h0`` writes. A variant of Elhage et al.'s composition scores: they multiply the key
    side by the query's projection (``W_QK``); with RoPE that product turns with the offset, so each
    projection is scored on its own. Two random matrices of these shapes score about
    ``1 / sqrt(d_model)``. Needs a norm-first model of two layers or more; returned on the CPU.
    """
    attentions = _attention_layers(model)
    if len(attentions) < 2 or not getattr(model.layers[1], "norm_first", False):
        raise ValueError("model must be norm-first with at least two layers")
    first, second = attentions[0], attentions[1]
    scores = torch.zeros(len(READS), first.n_heads, second.n_heads)
    with torch.no_grad():
        for h0 in range(first.n_heads):
            written = _written(model, h0)  # (d, d)
            for h1 in range(second.n_heads):
                for r, part in enumerate(READS):
                    reads = _head_rows(second, part, h1 if part == "query" else h1 // second.groups) \
                        @ _norm_matrix(model, 1)  # (d_k, d)
                    scores[r, h0, h1] = (reads @ written).norm() / (reads.norm() * written.norm())
    return scores


def qk_circuit(model, previous, induction, offset):
    """Layer-1 head ``induction``'s score between a query that holds token ``a`` and a key that layer-0 head
    ``previous`` told which token came before it, ``b``, ``offset`` positions back: ``(V, V)``, row ``a``,
    column ``b`` (Elhage et al.'s K-composition term of the QK circuit).

    The query reads the embedding of ``a``; the key reads what ``previous`` writes for ``b``
    (``W_OV`` of ``b``'s embedding); both through layer 1's norm as a matrix, rotated for their
    ``offset`` if the model uses RoPE. An induction head scores the diagonal highest. On the CPU.
    """
    attentions = _attention_layers(model)
    if len(attentions) < 2:
        raise ValueError("model must have at least two layers")
    second = attentions[1]
    check_int_range("previous", previous, 0, attentions[0].n_heads - 1)
    check_int_range("induction", induction, 0, second.n_heads - 1)
    check_int_range("offset", offset, 0, getattr(model, "max_len", offset + 1) - 1)
    embedding = model.embed.weight.T  # (d, V)
    with torch.no_grad():
        queries = (_head_rows(second, "query", induction) @ _norm_matrix(model, 1) @ embedding).T  # (V, d_k)
        keys = (_head_rows(second, "key", induction // second.groups) @ _norm_matrix(model, 1)
                @ _written(model, previous) @ embedding).T  # (V, d_k)
        if second.rotary is not None:
            n = queries.shape[0]
            queries = second.rotary.rotate(queries, torch.full((n,), offset, device=queries.device))  # at `offset`
            keys = second.rotary.rotate(keys, torch.zeros(n, dtype=torch.long, device=keys.device))  # at 0
        return (queries @ keys.T).cpu()  # (V, V)


def copying_score(model, layer, head):
    """The share of tokens whose own logit is the largest in their column of ``ov_circuit``: 1.0 for a
    head that, reading token ``j``, raises ``j`` above every other token (it copies); about ``1 / V`` by chance."""
    circuit = ov_circuit(model, layer, head)  # (V, V)
    return (circuit.argmax(dim=0) == torch.arange(circuit.shape[1])).float().mean().item()


def per_position_loss(logits, ids):
    """The next-token cross-entropy at each position, averaged over the batch: ``(L - 1,)``.

    ``logits`` ``(N, L, V)``, ``ids`` ``(N, L)`` (moved to the logits' device); entry ``t`` is the loss of
    predicting ``ids[:, t + 1]``.
    """
    check_tensor("logits", logits, ndim=3)
    check_tensor("ids", ids, ndim=2)
    if tuple(ids.shape) != tuple(logits.shape[:2]) or ids.shape[1] < 2:
        raise ValueError(f"ids must have shape (N, L) = {tuple(logits.shape[:2])} with L >= 2, got {tuple(ids.shape)}")
    ids = ids.to(logits.device)  # (N, L)
    losses = F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")  # (N, L - 1)
    return losses.mean(dim=0)  # (L - 1,)


def half_losses(losses, length):
    """The mean of ``per_position_loss`` over the first half and over the repeat: ``(first, repeat)``.

    ``losses`` ``(2 · length - 1,)``; the first half predicts tokens 1 .. length - 1, the repeat
    tokens length + 1 .. 2 · length - 1. Token ``length`` starts the repeat: nothing before it
    tells what it is, so neither mean counts it.
    """
    check_tensor("losses", losses, ndim=1)
    check_positive_int("length", length)
    if length < 2 or losses.shape[0] != 2 * length - 1:
        raise ValueError(f"losses must have 2 * length - 1 = {2 * length - 1} entries for length >= 2, "
                         f"got {losses.shape[0]} for length={length}")
    return losses[:length - 1].mean(), losses[length:].mean()
