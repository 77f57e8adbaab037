"""Chapter 12's checkers name two rarer slips: RMSNorm by the mean absolute value, SwiGLU's SiLU
misplaced after the last matrix or left out."""
import torch
import torch.nn.functional as F

from stepbystep.exercises import ch12


def _message(exercise, answer):
    return exercise.checker(answer)


def test_rms_norm_by_the_mean_absolute_value_is_named():
    for with_eps in (False, True):
        def mean_abs(x, weight, eps, with_eps=with_eps):
            return x / (x.abs().mean(dim=-1, keepdim=True) + (eps if with_eps else 0)) * weight

        message = _message(ch12.rms_norm, mean_abs)
        assert "absolute values" in message and "sqrt" not in message


def test_swiglu_with_the_silu_after_the_last_matrix_or_without_it_is_named():
    def after(x, g, u, d):
        return F.silu(((x @ g.T) * (x @ u.T)) @ d.T)

    def twice(x, g, u, d):
        return F.silu((F.silu(x @ g.T) * (x @ u.T)) @ d.T)

    def without(x, g, u, d):
        return ((x @ g.T) * (x @ u.T)) @ d.T

    for answer in (after, twice):
        assert "after the last matrix" in _message(ch12.swiglu, answer)
    assert "no SiLU" in _message(ch12.swiglu, without)
    assert _message(ch12.swiglu, ch12.swiglu._solution) is None
