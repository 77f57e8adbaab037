"""Chapter 12's checkers name four more slips: RMSNorm's gain applied before the normalising, its
statistic without keepdim, SwiGLU's SiLU on both projections, and a weight left untransposed
(where the vector that cannot multiply it is not always x)."""
import torch
import torch.nn.functional as F

from stepbystep.exercises import ch12


def _message(exercise, answer):
    return exercise.checker(answer)


def test_rms_norm_with_the_gain_applied_first_is_named():
    def gain_first(x, weight, eps):
        scaled = x * weight
        return scaled * torch.rsqrt(scaled.pow(2).mean(dim=-1, keepdim=True) + eps)

    message = _message(ch12.rms_norm, gain_first)
    assert "scaled by weight" in message and "after the division" in message
    assert "differs from RMSNorm" not in message


def test_rms_norm_without_keepdim_gets_a_message_about_the_shapes_not_an_error():
    def no_keepdim(x, weight, eps):
        return x / torch.sqrt(x.pow(2).mean(dim=-1) + eps) * weight  # (3, 5) cannot divide (3, 5, 8)

    message = _message(ch12.rms_norm, no_keepdim)
    assert "failed on the shapes" in message and "dimension of size 1" in message
    assert "keepdim" not in message  # the hint names it; the failure only says what is wrong


def test_rms_norm_other_runtime_errors_are_still_reported_as_errors():
    def broken(x, weight, eps):
        return x @ weight.unsqueeze(0)  # (.., 8) @ (1, 8): a product, not a broadcast

    assert "raised RuntimeError" in str(ch12.rms_norm.check(broken))


def test_swiglu_with_the_silu_on_both_projections_is_named():
    def both(x, g, u, d):
        return (F.silu(x @ g.T) * F.silu(x @ u.T)) @ d.T

    assert "both projections go through the SiLU" in _message(ch12.swiglu, both)


def test_swiglu_with_down_untransposed_does_not_blame_x():
    def down_as_is(x, g, u, d):
        return (F.silu(x @ g.T) * (x @ u.T)) @ d  # (N, L, 10) @ (6, 10)

    message = _message(ch12.swiglu, down_as_is)
    assert "failed on the shapes" in message and "a vector cannot multiply them" in message
    assert "x cannot" not in message
    assert _message(ch12.swiglu, ch12.swiglu._solution) is None
    assert _message(ch12.rms_norm, ch12.rms_norm._solution) is None
