"""Chapter 12's exercises: the slips an independent read tried get their own diagnosis."""
import torch
import torch.nn.functional as F

from stepbystep.exercises import ch12


def test_rms_norm_statistics_over_other_vectors_are_caught(fails_with):
    for dims in (0, 1, (0, 1), None):
        def over(x, w, eps, dims=dims):
            mean_square = x.pow(2).mean() if dims is None else x.pow(2).mean(dim=dims, keepdim=True)
            return x / torch.sqrt(mean_square + eps) * w
        fails_with(ch12.rms_norm, over, "mixes different vectors")


def test_swiglu_add_and_silu_of_the_product_are_caught(fails_with):
    fails_with(ch12.swiglu, lambda x, g, u, d: (F.silu(x @ g.T) + (x @ u.T)) @ d.T, "you add the two projections")
    fails_with(ch12.swiglu, lambda x, g, u, d: (F.silu(x @ u.T) + (x @ g.T)) @ d.T, "you add the two projections")
    fails_with(ch12.swiglu, lambda x, g, u, d: F.silu((x @ g.T) * (x @ u.T)) @ d.T, "product of both projections")


def test_the_new_messages_do_not_give_the_formula():
    for answer, exercise in ((lambda x, g, u, d: (F.silu(x @ g.T) + (x @ u.T)) @ d.T, ch12.swiglu),
                             (lambda x, w, eps: x / torch.sqrt(x.pow(2).mean(dim=0, keepdim=True) + eps) * w,
                              ch12.rms_norm)):
        message = repr(exercise.check(answer))
        assert "silu(" not in message.lower() and "sqrt" not in message and "dim=-1" not in message
