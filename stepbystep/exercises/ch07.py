"""Chapter 07's "Your turn": masked accuracy, exact match up to ``<eos>``, and ranking
finished beam-search outputs with a length penalty.

In the notebook::

    from stepbystep.exercises import ch07
    ch07.masked_accuracy.check(my_masked_accuracy)
    ch07.masked_accuracy.solution()
"""
import numbers

import torch

from ..data.special_tokens import EOS, PAD
from ..models.metrics import masked_accuracy as _masked_accuracy
from ..models.metrics import sequence_accuracy as _sequence_accuracy
from .exercise import Exercise, as_number, expects_function

__all__ = ["masked_accuracy", "exact_match", "best_output"]


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


@expects_function("masked_accuracy(logits, targets, pad_id)")
def _check_masked_accuracy(answer):
    logits, targets = _masked_accuracy_case()
    value = answer(logits, targets, PAD)
    problem = _number_problem("masked_accuracy", value)
    if problem:
        return problem
    expected = _masked_accuracy(logits, targets, PAD)
    got = as_number(value)
    all_positions = (logits.argmax(-1) == targets).float().mean().item()
    if abs(got - all_positions) < 1e-6:
        return (f"you got {got:.3f}, the accuracy over every position: the padded positions count "
                "as if they were tokens to predict")
    if abs(got - expected) > 1e-6:
        return f"on a batch of 6 real tokens and 2 pads you got {got:.3f}, which is not the masked accuracy"
    logits = torch.randn(3, 5, 7, generator=torch.Generator().manual_seed(0))  # (3, 5, 7)
    targets = torch.tensor([[4, 5, 6, 2, 0], [3, 2, 0, 0, 0], [6, 6, 6, 6, 2]])  # (3, 5)
    logits[1, 3, PAD] = 10.0  # one padded position "predicted right": it must still not count
    got, expected = as_number(answer(logits, targets, PAD)), _masked_accuracy(logits, targets, PAD)
    if got is None or abs(got - expected) > 1e-6:
        return f"right on the first batch, but on random logits you got {got}, which is not the masked accuracy"
    return None


masked_accuracy = Exercise(
    "masked accuracy",
    _check_masked_accuracy,
    "build keep = targets != pad_id, count the right predictions only where keep is True, and "
    "divide by keep.sum(), not by the number of positions",
    _masked_accuracy_solution,
)


# ----------------------------------------------------------------------------- 2. exact match
def _exact_match_solution(predicted, targets, eos_id):
    is_eos = (targets == eos_id).long()  # (N, L)
    up_to_eos = (is_eos.cumsum(dim=1) - is_eos) == 0  # (N, L): True up to and including the first eos
    same = (predicted == targets) | ~up_to_eos  # (N, L): what follows the target's eos does not count
    return same.all(dim=1).float().mean().item()


@expects_function("exact_match(predicted, targets, eos_id)")
def _check_exact_match(answer):
    targets = torch.tensor([[5, 6, EOS, PAD], [7, EOS, PAD, PAD], [5, 5, 5, EOS], [6, 6, EOS, PAD]])  # (4, 4)
    cases = [  # (what the one-row case is, prediction, target, whether it is a match)
        ("a right output followed by other tokens after <eos>", torch.tensor([[5, 6, EOS, 9]]), targets[:1], True),
        ("an output that goes on where it should write <eos>", torch.tensor([[7, 7, PAD, PAD]]), targets[1:2], False),
        ("an output that stops too early", torch.tensor([[5, 5, EOS, PAD]]), targets[2:3], False),
        ("a right output, padded after <eos>", torch.tensor([[6, 6, EOS, PAD]]), targets[3:], True),
    ]
    for description, predicted, target, is_match in cases:
        value = answer(predicted, target, EOS)
        problem = _number_problem("exact_match", value)
        if problem:
            return problem
        if abs(as_number(value) - float(is_match)) > 1e-6:
            verdict = "a match" if is_match else "a mismatch"
            return f"{description} is {verdict}, but your function gives {as_number(value):.0%} for it"
    predicted = torch.tensor([[5, 6, EOS, 9], [7, 7, PAD, PAD], [5, 5, 5, EOS], [6, 6, EOS, 8]])  # (4, 4)
    expected = _sequence_accuracy(predicted, targets, PAD, EOS)
    got = as_number(answer(predicted, targets, EOS))
    if got is None or abs(got - expected) > 1e-6:
        return (f"right on single rows, but on a batch of four rows you got {got}, which is not the share "
                "of rows that match")
    return None


exact_match = Exercise(
    "exact match",
    _check_exact_match,
    "mark the target positions up to and including its first eos (a cumulative sum of "
    "targets == eos_id helps), compare only there, and require every marked position to agree",
    _exact_match_solution,
)


# ----------------------------------------------------------------------------- 3. ranking outputs
def _best_output_solution(log_probs, lengths, length_penalty):
    log_probs = torch.as_tensor(log_probs, dtype=torch.float)  # (B,)
    lengths = torch.as_tensor(lengths, dtype=torch.float)  # (B,)
    scores = log_probs / lengths**length_penalty  # (B,)
    return int(scores.argmax())


@expects_function("best_output(log_probs, lengths, length_penalty)")
def _check_best_output(answer):
    log_probs, lengths = [-1.2, -3.0, -6.0], [1, 4, 9]
    for alpha in (0.0, 1.0, 0.5):
        got = answer(log_probs, lengths, alpha)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = int(got)
        if not isinstance(got, numbers.Integral) or isinstance(got, bool):
            return f"best_output should return an index (an int), got {type(got).__name__}"
        if got != _best_output_solution(log_probs, lengths, alpha):
            return (f"for log-probs {log_probs}, lengths {lengths} and length_penalty {alpha} your function "
                    f"picks output {got}, which does not have the best score log_prob / length ** length_penalty")
    return None


best_output = Exercise(
    "ranking finished outputs",
    _check_best_output,
    "score each output as log_prob / length ** length_penalty and return the index of the largest "
    "score (the least negative); with length_penalty 0 the length drops out",
    _best_output_solution,
)
