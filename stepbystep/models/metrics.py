"""Loss and accuracies for sequences of tokens, where padding must not count, how sure a measured
rate is (``wilson_interval``), and how much a written sequence repeats itself (``repeat_share``)."""
import math

import torch
import torch.nn.functional as F
from torch import nn

from ..checks import check_instance, check_int_range, check_positive_int, check_positive_number, check_tensor
from ..data.special_tokens import EOS, PAD

__all__ = ["sequence_cross_entropy", "SequenceCrossEntropy", "masked_accuracy", "sequence_accuracy",
           "up_to_first", "wilson_interval", "repeat_share"]


def _check_logits(logits, targets):
    check_tensor("logits", logits, ndim=3)  # (N, L, V)
    check_tensor("targets", targets, ndim=2)  # (N, L)
    if logits.shape[:2] != targets.shape:
        raise ValueError(f"targets must be (N, L) to match logits (N, L, V) = {tuple(logits.shape)}, "
                         f"got {tuple(targets.shape)}")


def sequence_cross_entropy(logits, targets, ignore_index=PAD, label_smoothing=0.0):
    """Mean cross-entropy of logits ``(N, L, V)`` over the targets ``(N, L)`` that are not ``ignore_index``
    (padding, by default), so a batch's loss does not depend on how much padding it holds."""
    _check_logits(logits, targets)
    vocab_size = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, vocab_size), targets.reshape(-1),  # (N·L, V), (N·L,)
                           ignore_index=ignore_index, label_smoothing=label_smoothing)


class SequenceCrossEntropy(nn.Module):
    """``sequence_cross_entropy`` as a loss module: ``StepByStep(model, SequenceCrossEntropy(), ...)``."""

    def __init__(self, ignore_index=PAD, label_smoothing=0.0):
        super().__init__()
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, logits, targets):
        return sequence_cross_entropy(logits, targets, self.ignore_index, self.label_smoothing)

    def extra_repr(self):
        return f"ignore_index={self.ignore_index}, label_smoothing={self.label_smoothing}"


def masked_accuracy(logits, targets, pad_id=PAD):
    """Fraction of non-padding positions whose arg-max is the target: logits ``(N, L, V)``, targets
    ``(N, L)`` (moved to the logits' device). Teacher-forced, so usually above what decoding achieves."""
    _check_logits(logits, targets)
    targets = targets.to(logits.device)  # (N, L)
    keep = targets != pad_id  # (N, L)
    if not keep.any():
        raise ValueError("targets must hold at least one token that is not padding, got only padding")
    correct = (logits.argmax(dim=-1) == targets) & keep  # (N, L)
    return (correct.sum() / keep.sum()).item()


def up_to_first(ids, token):
    """Keep-mask ``(N, L)`` of ids ``(N, L)``: ``True`` up to and including each row's first ``token``
    (``<eos>``, say), the whole row if it has none."""
    is_token = (ids == token).long()  # (N, L)
    return (is_token.cumsum(dim=1) - is_token) == 0  # (N, L): no such token before this position


def sequence_accuracy(predicted_ids, target_ids, pad_id=PAD, eos_id=EOS):
    """Fraction of rows of ``predicted_ids`` ``(N, L_p)`` equal to ``target_ids`` ``(N, L_t)`` up to and
    including the first ``eos_id`` (what follows is ignored; a missing ``<eos>`` never matches)."""
    check_tensor("predicted_ids", predicted_ids, ndim=2)  # (N, L_p)
    check_tensor("target_ids", target_ids, ndim=2)  # (N, L_t)
    if predicted_ids.shape[0] != target_ids.shape[0]:
        raise ValueError(f"target_ids must hold one row per prediction ({predicted_ids.shape[0]}), "
                         f"got {target_ids.shape[0]}")
    target_ids = target_ids.to(predicted_ids.device)
    length = max(predicted_ids.shape[1], target_ids.shape[1])

    def cut(ids):  # (N, L): padding after the first eos_id, and up to the longer length
        return F.pad(ids.masked_fill(~up_to_first(ids, eos_id), pad_id), (0, length - ids.shape[1]), value=pad_id)

    return (cut(predicted_ids) == cut(target_ids)).all(dim=1).float().mean().item()


def wilson_interval(successes, n, z=1.959963984540054):
    """Wilson score interval ``(low, high)`` of a rate of ``successes`` out of ``n`` (Wilson 1927), ``z``
    the normal quantile (95% by default). Unlike ``p ± z·√(p(1-p)/n)`` it stays in [0, 1] and does not
    collapse when nothing (or everything) succeeded."""
    check_positive_int("n", n)
    check_int_range("successes", successes, 0, n)
    check_positive_number("z", z)
    rate = successes / n
    centre = (rate + z**2 / (2 * n)) / (1 + z**2 / n)
    half_width = z / (1 + z**2 / n) * math.sqrt(rate * (1 - rate) / n + z**2 / (4 * n**2))
    low = 0.0 if successes == 0 else max(0.0, centre - half_width)  # exact ends, not rounding residues
    high = 1.0 if successes == n else min(1.0, centre + half_width)
    return low, high


def repeat_share(tokens, n):
    """The share of the windows of ``n`` consecutive tokens of ``tokens`` (a string, a list of ids or
    a 1-D tensor) that already occurred earlier in it: 0 for a sequence that never repeats itself,
    near 1 for one stuck in a loop, 0 for one shorter than ``n``."""
    check_positive_int("n", n)
    check_instance("tokens", tokens, (str, list, tuple, torch.Tensor), "a string, a list of ids or a 1-D tensor")
    if isinstance(tokens, torch.Tensor):
        tokens = check_tensor("tokens", tokens, ndim=1).tolist()
    grams = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]  # every window of n tokens
    repeats = len(grams) - len(set(grams))  # each window after its first occurrence
    return repeats / len(grams) if grams else 0.0
