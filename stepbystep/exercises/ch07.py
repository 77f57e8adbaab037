"""Chapter 07's "Your turn": masked accuracy, exact match up to ``<eos>``, and one step of
beam search.

In the notebook::

    from stepbystep.exercises import ch07
    ch07.masked_accuracy.check(my_masked_accuracy)
    ch07.masked_accuracy.solution()
"""
import math

import torch

from ..data.special_tokens import EOS, PAD
from ..models.metrics import masked_accuracy as _masked_accuracy
from ..models.metrics import sequence_accuracy as _sequence_accuracy
from .exercise import Exercise, as_number, expects_function

__all__ = ["masked_accuracy", "exact_match", "beam_step"]


def _number_problem(name, value):
    if as_number(value) is None:
        return f"{name} should return one number (a float), got {type(value).__name__}"
    return None


# ----------------------------------------------------------------------------- 1. masked accuracy
def _masked_accuracy_solution(logits, targets, pad_id):
    keep = targets != pad_id  # (N, L): the real tokens
    correct = (logits.argmax(dim=-1) == targets) & keep  # (N, L)
    return (correct.sum() / keep.sum()).item()


def _masked_accuracy_case():
    """Logits that are right on 4 of the 6 real tokens and wrong on both padded positions."""
    targets = torch.tensor([[5, 6, 7, EOS], [8, EOS, PAD, PAD]])  # (2, 4)
    predicted = torch.tensor([[5, 9, 7, EOS], [8, 5, 4, 4]])  # (2, 4)
    logits = torch.nn.functional.one_hot(predicted, 10).float() * 5.0  # (2, 4, 10)
    return logits, targets


def _random_case():
    """Random logits over 7 ids whose pad id is 3 (id 0 is a real token here), with the pad predicted
    once at a padded position and once at a real one."""
    logits = torch.randn(3, 5, 7, generator=torch.Generator().manual_seed(0))  # (3, 5, 7)
    targets = torch.tensor([[4, 5, 6, 2, 3], [0, 2, 3, 3, 3], [6, 6, 0, 6, 2]])  # (3, 5): pad id 3
    logits[1, 3, 3] = 10.0  # a padded position "predicted right": it must still not count
    logits[0, 1, 3] = 10.0  # the pad predicted at a real position: it still counts, as a mistake
    return logits, targets, 3


def _all_positions(logits, targets, pad_id):
    return (logits.argmax(-1) == targets).float().mean().item()


def _masked_by_prediction(logits, targets, pad_id):
    keep = logits.argmax(-1) != pad_id  # (N, L): the positions where the model does not write the pad
    return (((logits.argmax(-1) == targets) & keep).sum() / keep.sum()).item()


def _right_over_all_positions(logits, targets, pad_id):
    keep = targets != pad_id  # (N, L)
    return (((logits.argmax(-1) == targets) & keep).sum() / targets.numel()).item()


def _right_over_batch_size(logits, targets, pad_id):
    keep = targets != pad_id  # (N, L)
    return (((logits.argmax(-1) == targets) & keep).sum() / len(targets)).item()


def _mean_over_sequences(logits, targets, pad_id):
    keep = targets != pad_id  # (N, L)
    per_sequence = ((logits.argmax(-1) == targets) & keep).sum(dim=1) / keep.sum(dim=1)  # (N,)
    return per_sequence.mean().item()


def _right_anywhere_over_real(logits, targets, pad_id):
    keep = targets != pad_id  # (N, L)
    return ((logits.argmax(-1) == targets).sum() / keep.sum()).item()


def _percent(logits, targets, pad_id):
    return 100 * _masked_accuracy_solution(logits, targets, pad_id)


def _mean_right_probability(logits, targets, pad_id):
    keep = targets != pad_id  # (N, L): the real tokens
    right = logits.softmax(dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (N, L): p(right token)
    return (right[keep].mean()).item()


def _eos_not_graded(logits, targets, pad_id):
    keep = (targets != pad_id) & (targets != EOS)  # (N, L): <eos> left out as if it were padding
    return (((logits.argmax(-1) == targets) & keep).sum() / keep.sum()).item()


def _pad_id_zero(logits, targets, pad_id):
    return _masked_accuracy_solution(logits, targets, 0)


def _floor_divided(logits, targets, pad_id):
    keep = targets != pad_id  # (N, L)
    return (((logits.argmax(-1) == targets) & keep).sum() // keep.sum()).item()


@expects_function("masked_accuracy(logits, targets, pad_id)")
def _check_masked_accuracy(answer):
    cases = [(*_masked_accuracy_case(), PAD), _random_case()]
    gots = []
    for logits, targets, pad_id in cases:
        value = answer(logits.clone(), targets.clone(), pad_id)
        problem = _number_problem("masked_accuracy", value)
        if problem:
            return problem
        gots.append(as_number(value))

    def matches(function):  # to rounding: a percentage computed in float64 differs from float32's by ~1e-5
        return all(abs(got - (want := function(logits, targets, pad_id))) < 1e-6 * max(1.0, abs(want))
                   for got, (logits, targets, pad_id) in zip(gots, cases))

    if matches(_masked_accuracy):
        return None
    if matches(_percent):
        return (f"you got {gots[0]:.3f} on the first batch: a percentage. Return the share as a fraction "
                "between 0 and 1, as the course's metrics do")
    if any(got < 0 for got in gots):
        return (f"you got {min(gots):.3f} on one batch, below 0: an accuracy is a share of the graded tokens, "
                "between 0 and 1, not a log-probability or a loss")
    for mistake, message in [
        (_all_positions, "the accuracy over every position: the padded positions count as if they were "
                         "tokens to predict"),
        (_right_over_all_positions, "your count of right predictions leaves the pads out, but what you divide it "
                                    "by still counts every position, pads included, so the pads pull the share down "
                                    "although none of them is graded"),
        (_right_over_batch_size, "you divided by the number of sequences in the batch, but an accuracy is a share "
                                 "of the graded tokens: it can never exceed 1"),
        (_mean_over_sequences, "you averaged each sequence's own accuracy, so a token of a short sequence weighs "
                               "more than one of a long sequence: every graded token should count once"),
        (_masked_by_prediction, "you left out the positions where the model predicts the pad, but which "
                                "positions are padding is known from the targets, whatever the model writes"),
        (_eos_not_graded, "you left out the <eos> positions too, but writing <eos> at the right place is part "
                          "of the task: only the padded positions are not graded"),
        (_floor_divided, "a whole number: the two counts are integers, and dividing them with // rounds "
                         "the share down"),
        (_mean_right_probability, "the mean probability the model gives the right token: an accuracy counts "
                                  "the graded positions where the most likely token is the right one"),
    ]:
        if matches(mistake):
            return f"you got {gots[0]:.3f} on the first batch, {message}"
    if matches(_right_anywhere_over_real):
        return (f"right on the first batch, but on random logits with pad id 3 you got {gots[1]:.3f}: a padded "
                "position the model happened to get right counts as a right prediction, though padding is not "
                "graded. The count and what you divide it by should cover the same positions")
    if matches(_pad_id_zero):
        return (f"right on the first batch, but on a batch whose pad id is 3 (id 0 is a real token there) you got "
                f"{gots[1]:.3f}: the pads are the positions whose target is pad_id, whichever id that is")
    if abs(gots[0] - _masked_accuracy(*cases[0])) > 1e-6:
        return f"on a batch of 6 real tokens and 2 pads you got {gots[0]:.3f}, which is not the masked accuracy"
    return (f"right on the first batch, but on random logits with pad id 3 you got {gots[1]:.3f}, which is not "
            "the masked accuracy")


masked_accuracy = Exercise(
    "masked accuracy",
    _check_masked_accuracy,
    "which positions are graded, and which tensor tells you where the padding is? Both the count of "
    "right predictions and the number you divide it by should cover those positions only",
    _masked_accuracy_solution,
)


# ----------------------------------------------------------------------------- 2. exact match
def _exact_match_solution(predicted, targets, eos_id):
    is_eos = (targets == eos_id).long()  # (N, L)
    up_to_eos = (is_eos.cumsum(dim=1) - is_eos) == 0  # (N, L): True up to and including the first eos
    same = (predicted == targets) | ~up_to_eos  # (N, L): what follows the target's eos does not count
    return same.all(dim=1).float().mean().item()


def _before_eos(predicted, targets, eos_id):
    """A typical slip: the comparison stops before the target's <eos> instead of at it."""
    up_to = (targets == eos_id).long().cumsum(dim=1) == 0  # (N, L): True strictly before the first eos
    return ((predicted == targets) | ~up_to).all(dim=1).float().mean().item()


def _one_past_eos(predicted, targets, eos_id):
    """A typical slip: the comparison runs one position past the target's <eos>."""
    first = (targets == eos_id).long().argmax(dim=1, keepdim=True)  # (N, 1)
    up_to = torch.arange(targets.shape[1]) <= first + 1  # (N, L)
    return ((predicted == targets) | ~up_to).all(dim=1).float().mean().item()


_EXACT_SLIPS = [
    (_before_eos, "the target's <eos> itself was not compared: an output must also stop at the right place, "
                  "so the position of the first eos_id counts"),
    (_one_past_eos, "one position past the target's <eos> was compared: what follows the first eos_id does not "
                    "count"),
]


def _one_value_per_row(value, batch):
    """The message for a tensor, list or tuple of per-row values where one share was expected, else None."""
    if as_number(value) is not None or not isinstance(value, (torch.Tensor, list, tuple)):
        return None
    kind, count = ("tensor", value.numel()) if isinstance(value, torch.Tensor) else (type(value).__name__, len(value))
    return (f"exact_match should return one number (a float), the share of the rows that match; on {batch} you "
            f"returned a {kind} of {count} value{'s' if count != 1 else ''}")


@expects_function("exact_match(predicted, targets, eos_id)")
def _check_exact_match(answer):
    targets = torch.tensor([[5, 6, EOS, PAD], [7, EOS, PAD, PAD], [5, 5, 5, EOS], [6, 6, EOS, PAD]])  # (4, 4)
    other_eos = 4  # a vocabulary whose <eos> has id 4, and where id EOS is an ordinary token
    cases = [  # (what the one-row case is, prediction, target, eos_id, whether it is a match, named slip)
        ("a right output followed by other tokens after <eos>", torch.tensor([[5, 6, EOS, 9]]), targets[:1], EOS,
         True, None),
        ("an output that goes on where it should write <eos>", torch.tensor([[7, 7, PAD, PAD]]), targets[1:2], EOS,
         False, None),
        ("an output that stops too early", torch.tensor([[5, 5, EOS, PAD]]), targets[2:3], EOS, False, None),
        ("a right output, padded after <eos>", torch.tensor([[6, 6, EOS, PAD]]), targets[3:], EOS, True, None),
        ("a right output with a pad and another token after <eos>", torch.tensor([[5, EOS, PAD, 9]]),
         torch.tensor([[5, EOS, PAD, PAD]]), EOS, True, None),
        ("a right output for a target with real tokens after its <eos>", torch.tensor([[5, EOS, 9, 9]]),
         torch.tensor([[5, EOS, 7, 7]]), EOS, True,
         "what follows the target's <eos> was compared, but only the positions up to its first eos_id count"),
        (f"with eos_id = {other_eos}, an output wrong before the target's <eos>", torch.tensor([[EOS, 9, other_eos, PAD]]),
         torch.tensor([[EOS, 5, other_eos, PAD]]), other_eos, False,
         f"your function does not use eos_id: here it is {other_eos}, and id {EOS} is an ordinary token"),
    ]
    values = []
    for description, predicted, target, eos_id, is_match, slip in cases:
        value = answer(predicted, target, eos_id)
        problem = _one_value_per_row(value, "one row") or _number_problem("exact_match", value)
        if problem:
            return problem
        if is_match and abs(as_number(value) - 100) < 1e-4:
            return (f"{description} gets {as_number(value):g}: a percentage. Return the share of matching rows as a "
                    "fraction between 0 and 1")
        values.append(as_number(value))
    wrong = [(case, value) for case, value in zip(cases, values) if abs(value - float(case[4])) > 1e-6]
    if wrong:
        (description, _, _, _, is_match, slip), value = wrong[0]
        for mistake, message in _EXACT_SLIPS:  # a slip is named when it explains every case
            if all(abs(v - mistake(p, t, e)) < 1e-6 for (_, p, t, e, _, _), v in zip(cases, values)):
                return f"on {description}: {message}"
        if slip:
            return f"on {description}: {slip}"
        verdict = "a match" if is_match else "a mismatch"
        return f"{description} is {verdict}, but your function gives {value:.0%} for it"
    predicted = torch.tensor([[5, 6, EOS, 9], [7, 7, PAD, PAD], [5, 5, 5, EOS], [6, 6, EOS, 8]])  # (4, 4)
    expected = _sequence_accuracy(predicted, targets, PAD, EOS)
    value = answer(predicted, targets, EOS)
    problem = _one_value_per_row(value, "a batch of four rows") or _number_problem("exact_match", value)
    if problem:
        return problem
    got = as_number(value)
    if abs(got - expected) > 1e-6:
        return (f"right on single rows, but on a batch of four rows you got {got}, which is not the share "
                "of rows that match")
    return None


exact_match = Exercise(
    "exact match",
    _check_exact_match,
    "which positions of a row decide whether it matches: those before the target's first eos_id, that "
    "position itself, those after it? Mark them (a running count along the row can tell before from "
    "after), then ask whether the row agrees wherever it counts",
    _exact_match_solution,
)


# ----------------------------------------------------------------------------- 3. one beam step
def _beam_step_solution(scores, finished, log_probs, beam_width):
    scores, log_probs = torch.as_tensor(scores, dtype=torch.float), torch.as_tensor(log_probs, dtype=torch.float)
    finished = torch.as_tensor(finished, dtype=torch.bool)  # (B,)
    only_pad = torch.full_like(log_probs[0], float("-inf"))  # (V,)
    only_pad[PAD] = 0.0  # a finished beam goes on with <pad>, at no cost
    log_probs = torch.where(finished.unsqueeze(-1), only_pad, log_probs)  # (B, V)
    totals = scores.unsqueeze(-1) + log_probs  # (B, V): every candidate's total
    best = totals.view(-1).topk(beam_width).indices  # (beam_width,)
    vocab_size = log_probs.shape[-1]
    return totals.view(-1)[best], best // vocab_size, best % vocab_size


def _per_beam_best(scores, finished, log_probs, beam_width):
    """A typical mistake: each beam keeps its own best token."""
    totals = torch.as_tensor(scores).unsqueeze(-1) + torch.as_tensor(log_probs)  # (B, V)
    value, token = totals.max(dim=-1)  # (B,), (B,)
    return value, torch.arange(len(value)), token


def _finished_ignored(scores, finished, log_probs, beam_width):
    """A typical mistake: finished beams are extended like the others."""
    return _beam_step_solution(scores, torch.zeros(len(scores), dtype=torch.bool), log_probs, beam_width)


def _new_token_only(scores, finished, log_probs, beam_width):
    """A typical mistake: candidates ranked by the new token's log-probability alone."""
    log_probs = torch.as_tensor(log_probs, dtype=torch.float)  # (B, V)
    best = log_probs.view(-1).topk(beam_width).indices  # (beam_width,)
    vocab_size = log_probs.shape[-1]
    totals = torch.as_tensor(scores).unsqueeze(-1) + log_probs  # (B, V)
    return totals.view(-1)[best], best // vocab_size, best % vocab_size


def _new_token_score(scores, finished, log_probs, beam_width):
    """A typical mistake: the right candidates, but each kept with the new token's log-probability as its score."""
    kept, beams, tokens = _beam_step_solution(scores, finished, log_probs, beam_width)
    return torch.as_tensor(log_probs, dtype=torch.float)[beams, tokens], beams, tokens


def _beam_token_swapped(scores, finished, log_probs, beam_width):
    """A typical mistake: beam index and token swapped."""
    kept, beams, tokens = _beam_step_solution(scores, finished, log_probs, beam_width)
    return kept, tokens, beams


def _index_by_width(scores, finished, log_probs, beam_width):
    """A typical mistake: the flat index split by the beam width instead of the vocabulary size."""
    kept, beams, tokens = _beam_step_solution(scores, finished, log_probs, beam_width)
    flat = beams * torch.as_tensor(log_probs).shape[-1] + tokens  # (beam_width,)
    return kept, flat // beam_width, flat % beam_width


def _finished_pays_pad(scores, finished, log_probs, beam_width):
    """A typical mistake: a finished beam goes on with <pad>, but pays the model's log p(<pad>)."""
    log_probs = torch.as_tensor(log_probs, dtype=torch.float)  # (B, V)
    finished = torch.as_tensor(finished, dtype=torch.bool)  # (B,)
    pad_only = torch.full_like(log_probs, float("-inf"))  # (B, V)
    pad_only[:, PAD] = log_probs[:, PAD]
    totals = torch.as_tensor(scores).unsqueeze(-1) + torch.where(finished.unsqueeze(-1), pad_only, log_probs)
    best = totals.view(-1).topk(beam_width).indices  # (beam_width,)
    vocab_size = log_probs.shape[-1]
    return totals.view(-1)[best], best // vocab_size, best % vocab_size


def _finished_pad_only_free(scores, finished, log_probs, beam_width):
    """A typical mistake: a finished beam goes on with <pad> at no cost, but its real tokens stay open at their
    usual cost."""
    log_probs = torch.as_tensor(log_probs, dtype=torch.float).clone()  # (B, V)
    log_probs[torch.as_tensor(finished, dtype=torch.bool), PAD] = 0.0
    totals = torch.as_tensor(scores).unsqueeze(-1) + log_probs  # (B, V)
    best = totals.view(-1).topk(beam_width).indices  # (beam_width,)
    return totals.view(-1)[best], best // log_probs.shape[-1], best % log_probs.shape[-1]


def _finished_free(got, scores, finished):
    """Whether ``got`` (as ``_as_candidates`` returns it) extends a finished beam by several tokens, each at
    no cost: its whole row of log-probabilities set to 0."""
    free = [(b, t) for s, b, t in got
            if 0 <= b < len(finished) and bool(finished[b]) and abs(s - round(float(scores[b]), 4)) < 1e-4]
    return any(sum(b == beam for b, _ in free) > 1 for beam, _ in free)


def _finished_writes_eos(scores, finished, log_probs, beam_width):
    """A typical mistake: a finished beam goes on at no cost, but with <eos> instead of <pad>."""
    kept, beams, tokens = _beam_step_solution(scores, finished, log_probs, beam_width)
    finished = torch.as_tensor(finished, dtype=torch.bool)  # (B,)
    return kept, beams, torch.where(finished[beams], torch.full_like(tokens, EOS), tokens)


def _probabilities(scores, finished, log_probs, beam_width):
    """A typical mistake: the right candidates, their totals returned as probabilities (exp)."""
    kept, beams, tokens = _beam_step_solution(scores, finished, log_probs, beam_width)
    return kept.exp(), beams, tokens


def _finished_dropped(scores, finished, log_probs, beam_width):
    """A typical mistake: a finished beam leaves the beam (its row of totals all -inf)."""
    log_probs = torch.as_tensor(log_probs, dtype=torch.float)  # (B, V)
    finished = torch.as_tensor(finished, dtype=torch.bool)  # (B,)
    totals = torch.as_tensor(scores).unsqueeze(-1) + log_probs  # (B, V)
    totals = totals.masked_fill(finished.unsqueeze(-1), float("-inf"))  # (B, V)
    best = totals.view(-1).topk(beam_width).indices  # (beam_width,)
    vocab_size = log_probs.shape[-1]
    return totals.view(-1)[best], best // vocab_size, best % vocab_size


def _multiplied(scores, finished, log_probs, beam_width):
    """A typical mistake: a candidate scored by the beam's score times the new token's log-probability."""
    scores, log_probs = torch.as_tensor(scores, dtype=torch.float), torch.as_tensor(log_probs, dtype=torch.float)
    finished = torch.as_tensor(finished, dtype=torch.bool)  # (B,)
    only_pad = torch.full_like(log_probs[0], float("-inf"))  # (V,)
    only_pad[PAD] = 0.0
    totals = scores.unsqueeze(-1) * torch.where(finished.unsqueeze(-1), only_pad, log_probs)  # (B, V)
    totals = totals.nan_to_num(nan=float("-inf"))  # a score times -inf may be nan (0 · -inf)
    best = totals.view(-1).topk(beam_width).indices  # (beam_width,)
    return totals.view(-1)[best], best // log_probs.shape[-1], best % log_probs.shape[-1]


def _smallest(scores, finished, log_probs, beam_width):
    """A typical slip: ``topk(largest=False)``, the least likely candidates."""
    scores, log_probs = torch.as_tensor(scores, dtype=torch.float), torch.as_tensor(log_probs, dtype=torch.float)
    finished = torch.as_tensor(finished, dtype=torch.bool)  # (B,)
    only_pad = torch.full_like(log_probs[0], float("-inf"))  # (V,)
    only_pad[PAD] = 0.0
    totals = scores.unsqueeze(-1) + torch.where(finished.unsqueeze(-1), only_pad, log_probs)  # (B, V)
    worst = totals.view(-1).topk(beam_width, largest=False).indices  # (beam_width,)
    return totals.view(-1)[worst], worst // log_probs.shape[-1], worst % log_probs.shape[-1]


def _rescaled(got, expected):
    """Whether ``got`` keeps the right candidates with every score divided by one factor other than 1
    (a length normalisation), both as ``_as_candidates`` returns them."""
    if sorted((b, t) for _, b, t in got) != sorted((b, t) for _, b, t in expected):
        return False
    right = dict(((b, t), s) for s, b, t in expected)
    ratios = [right[b, t] / s for s, b, t in got if s != 0 and math.isfinite(s)]
    return len(ratios) == len(got) and max(ratios) - min(ratios) < 1e-2 and abs(ratios[0] - 1) > 1e-2


def _beam_cases():
    """(what the case is, scores, finished, log_probs, beam_width): two beams over five tokens (0 = <pad>),
    no ties."""
    log_probs = torch.log(torch.tensor([[0.01, 0.34, 0.26, 0.22, 0.17],  # beam 0: spread out
                                        [0.01, 0.04, 0.05, 0.50, 0.40]]))  # (2, 5) beam 1: two sure tokens
    # beam 1 finished, with a likely <pad>: paying log p(<pad>) still keeps it in the top 2, dropping it does not
    finished_log_probs = torch.log(torch.tensor([[0.01, 0.34, 0.26, 0.22, 0.17],
                                                 [0.30, 0.04, 0.05, 0.32, 0.29]]))  # (2, 5)
    return [
        ("two live beams", torch.tensor([-0.1, -2.0]), torch.tensor([False, False]), log_probs, 2),
        ("a finished beam beside a live one", torch.tensor([-1.0, -0.3]), torch.tensor([False, True]),
         finished_log_probs, 2),
        ("two live beams with beam_width 3", torch.tensor([-0.6, -0.5]), torch.tensor([False, False]), log_probs, 3),
    ]


def _finished_other_token(got, expected, finished):
    """Whether ``got`` differs from ``expected`` (both as ``_as_candidates`` returns them) only in the token
    that finished beams go on with: the right totals and beams, another token than <pad>."""
    if [(s, b) for s, b, _ in got] != [(s, b) for s, b, _ in expected]:
        return False
    wrong = [b for (_, b, t), (_, _, want) in zip(got, expected) if t != want]
    return bool(wrong) and all(0 <= b < len(finished) and bool(finished[b]) for b in wrong)


def _as_candidates(value):
    """``(scores, beam_index, token)`` -> sorted list of (round(score, 4), beam, token), or a problem string."""
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        return "beam_step should return three things: (scores, beam_index, token)"
    try:
        scores, beams, tokens = (torch.as_tensor(part).reshape(-1) for part in value)
    except (TypeError, ValueError, RuntimeError):
        return "beam_step should return three tensors (or lists) of numbers"
    if not len(scores) == len(beams) == len(tokens):
        return "scores, beam_index and token should have one entry per kept candidate"
    return sorted(((round(float(s), 4), int(b), int(t)) for s, b, t in zip(scores, beams, tokens)), reverse=True)


@expects_function("beam_step(scores, finished, log_probs, beam_width)")
def _check_beam_step(answer):
    for description, scores, finished, log_probs, width in _beam_cases():
        arguments = (scores.clone(), finished.clone(), log_probs.clone(), width)
        got = _as_candidates(answer(*arguments))
        if isinstance(got, str):
            return got
        if len(got) != width:
            return (f"with beam_width {width} your step keeps {len(got)} candidates; it should keep beam_width "
                    "of them")
        expected = _as_candidates(_beam_step_solution(*arguments))
        if got == expected:
            continue
        if _rescaled(got, expected):
            return (f"on {description}: the right candidates, but each score is divided by a length. Here a score is "
                    "the plain sum of log-probabilities (α = 0); a length penalty is for comparing whole outputs "
                    "of different lengths, not for one step")
        if _finished_free(got, scores, finished):
            return (f"on {description}: a finished beam went on with several tokens, each at no cost, but it has "
                    "only one way to go on")
        for mistake, message in [
            (_smallest, "you kept the least likely candidates: log-probabilities are negative, so the best total "
                        "is the largest one, the closest to 0"),
            (_finished_ignored, "a finished beam was extended by real tokens, at a cost"),
            (_per_beam_best, "each beam kept its own best token, but the B best candidates may all come from "
                             "one beam"),
            (_new_token_only, "the candidates were ranked by the new token's log-probability alone, not by "
                              "the total of the whole output"),
            (_new_token_score, "the right candidates, but the scores returned are the new token's "
                               "log-probability: a score must include the beam's score so far"),
            (_beam_token_swapped, "the right candidates, but the beam index and the token are swapped"),
            (_index_by_width, "the beam and the token were recovered from the flat index with the beam width, "
                              "but each beam's row of the flattened table holds V tokens"),
            (_finished_dropped, "a finished beam left the beam: it stays, going on with <pad> at no cost"),
            (_finished_pad_only_free, "a finished beam went on with <pad> at no cost, but it could still be "
                                      "extended by real tokens at their usual cost: it has only one way to go on"),
            (_finished_pays_pad, "a finished beam paid the model's log-probability of <pad>: a finished beam "
                                 "goes on at no cost"),
            (_finished_writes_eos, "a finished beam went on with <eos>: it has already written its <eos>, and goes "
                                   "on with <pad> (id 0), at no cost"),
            (_probabilities, "the right candidates, but the scores returned are probabilities: a score is the sum "
                             "of log-probabilities, and stays one"),
        ]:
            if got == _as_candidates(mistake(*arguments)):
                return f"on {description}: {message}"
        if _as_candidates(_multiplied(*arguments)) == got:
            return (f"on {description}: each candidate was scored by the beam's score times the new token's "
                    "log-probability, but the log-probabilities of a sequence's tokens add up")
        if _finished_other_token(got, expected, finished):
            return (f"on {description}: the right totals and beams, but a finished beam went on with a token other "
                    "than <pad> (id 0): once a beam has written <eos>, only padding follows")
        if [score for score, _, _ in got] == [score for score, _, _ in expected]:
            return (f"on {description}: the right totals, but the beam index or the token returned with them "
                    "does not belong to that candidate. How are the B·V totals laid out when flattened, and "
                    "which position in that layout does each (beam, token) pair take?")
        return f"on {description} your step does not keep the {width} best of the B·V candidates"
    return None


beam_step = Exercise(
    "one beam step",
    _check_beam_step,
    "a candidate is a pair (beam, next token), scored by the total of the whole output. How many "
    "candidates are there, and can you lay their totals out so that one call picks the best beam_width "
    "of all of them? A finished beam has only one way to go on",
    _beam_step_solution,
)
