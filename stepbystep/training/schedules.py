"""Per-step learning-rate schedules: a warm-up, then what follows it, written once for the course.

Each function returns a torch scheduler to step after every optimizer step, which
``trainer.set_lr_scheduler(schedule)`` does by itself (``counts_steps`` tells it so). Step ``k``
counts from 0, ``w`` is ``warmup_steps`` and ``n`` is ``total_steps``; step ``k`` trains at ``lr * factor(k)``::

    warmup           min(1, (k+1)/w)                                  up to lr at step w-1, then flat
    warmup_linear    max(0, min((k+1)/w, (n-k)/(n-w)))                then down to 0 at step n, 0 after
    warmup_cosine    (k+1)/w, then (1 + cos(pi (k-w)/(n-w))) / 2      down to 0 at step n, 0 after
    inverse_sqrt     min((k+1)/w, sqrt(w/(k+1)))                      then 1/sqrt(step)
    linear_ramps     torch's LinearLR up (lr/w at step 0, lr at step w), then down to 0 at step n

A run of no more than ``w`` steps only rises (``n - w`` counts as at least 1).

``inverse_sqrt`` is the original Transformer's (Vaswani et al., "Attention Is All You Need",
2017), divided by its peak. ``linear_ramps`` is the schedule chapter 08 builds from torch's
pieces: the shape of ``warmup_linear`` one step later, computed step by step by the chained
schedulers (so its rates differ from a formula's in the last bits).
"""
import math
import weakref

from torch.optim.lr_scheduler import LambdaLR, LinearLR, SequentialLR

from ..checks import check_positive_int

__all__ = ["warmup", "warmup_linear", "warmup_cosine", "inverse_sqrt", "linear_ramps", "counts_steps"]

_PER_STEP = weakref.WeakSet()  # the schedulers built here: their steps are optimizer steps


def counts_steps(scheduler):
    """Whether ``scheduler`` was built by this module, so that its step counts optimizer steps."""
    return scheduler in _PER_STEP


def _per_step(scheduler):
    _PER_STEP.add(scheduler)
    return scheduler


def _check(warmup_steps, total_steps=None):
    """The steps after the warm-up (at least 1), once both counts are checked."""
    check_positive_int("warmup_steps", warmup_steps)
    if total_steps is not None:
        check_positive_int("total_steps", total_steps)
        return max(total_steps - warmup_steps, 1)


def warmup(optimizer, warmup_steps):
    """A linear rise to the optimizer's rate over ``warmup_steps`` steps, then the rate itself."""
    _check(warmup_steps)
    return _per_step(LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup_steps)))


def warmup_linear(optimizer, warmup_steps, total_steps):
    """The rise of ``warmup``, then a straight line down to zero at step ``total_steps``, and zero
    after it (a negative rate would climb the loss)."""
    decay = _check(warmup_steps, total_steps)

    def factor(step):
        return max(0.0, min((step + 1) / warmup_steps, (total_steps - step) / decay))

    return _per_step(LambdaLR(optimizer, factor))


def warmup_cosine(optimizer, warmup_steps, total_steps):
    """The rise of ``warmup``, then half a cosine down to zero at step ``total_steps``."""
    decay = _check(warmup_steps, total_steps)

    def factor(step):
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return (1 + math.cos(math.pi * min(step - warmup_steps, decay) / decay)) / 2

    return _per_step(LambdaLR(optimizer, factor))


def inverse_sqrt(optimizer, warmup_steps):
    """The rise of ``warmup``, then a decay as one over the square root of the step (counted from 1)."""
    _check(warmup_steps)

    def factor(step):
        return min((step + 1) / warmup_steps, math.sqrt(warmup_steps / (step + 1)))

    return _per_step(LambdaLR(optimizer, factor))


def linear_ramps(optimizer, warmup_steps, total_steps):
    """torch's ``LinearLR`` from ``lr / warmup_steps`` up to ``lr`` over ``warmup_steps`` steps, then
    another down to zero at step ``total_steps``, chained by ``SequentialLR``."""
    decay = _check(warmup_steps, total_steps)
    return _per_step(SequentialLR(optimizer, [
        LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps),
        LinearLR(optimizer, start_factor=1.0, end_factor=0.0, total_iters=decay),
    ], milestones=[warmup_steps]))
