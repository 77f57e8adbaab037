"""Chapter 12's exercise 1: dividing by the mean (squared or not) instead of the root mean square gets its own
diagnosis."""
import torch

from stepbystep.exercises import ch12


def squared_mean(x, w, eps):
    return x / torch.sqrt(x.mean(-1, keepdim=True) ** 2 + eps) * w


def test_squaring_the_mean_is_named(fails_with):
    fails_with(ch12.rms_norm, squared_mean, "you divide by the mean of the entries")
    fails_with(ch12.rms_norm, lambda x, w, eps: x / x.mean(-1, keepdim=True).abs() * w, "or as it is")
    fails_with(ch12.rms_norm, lambda x, w, eps: x / x.mean(-1, keepdim=True) * w, "you divide by the mean")


def test_the_message_does_not_give_the_formula():
    message = repr(ch12.rms_norm.check(squared_mean))
    assert "pow(2)" not in message and "sqrt" not in message and "dim=-1" not in message


def test_the_right_answer_still_passes():
    assert ch12.rms_norm.check(lambda x, w, eps: x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w)
