"""Gradient accumulation: the gradient of a batch k times larger than memory holds, from k micro-batches.

The loss of a batch is the mean over its samples, so its gradient is the mean of the k micro-batches'
gradients when they are equally large: backpropagate each micro-batch's loss divided by k, and
``backward`` adds the k gradients up in ``.grad``. One optimizer step then takes the large batch's
step. Forgetting the ``/ k`` takes a step k times longer with SGD (Adam, which divides by the
gradient's own size, barely notices).
"""
from .batches import forward, split_batch

__all__ = ["accumulate_gradients"]


def accumulate_gradients(model, loss_fn, micro_batches, mean=True):
    """Add up in ``.grad`` the gradient of the mean loss over ``micro_batches``, ``(x, y)`` pairs of
    equal size; returns that mean loss (a float). ``mean=False`` sums the k losses instead.
    Zero the gradients before, step the optimizer after."""
    micro_batches = list(micro_batches)
    if not micro_batches:
        raise ValueError("micro_batches must hold at least one (x, y) batch, got none")
    sizes = {len(split_batch(batch)[1]) for batch in micro_batches}
    if len(sizes) > 1:
        raise ValueError(f"the micro-batches must be equally large for their mean to be the large batch's, got sizes "
                         f"{sorted(sizes)}")
    k, total = len(micro_batches), 0.0
    for batch in micro_batches:
        x, y = split_batch(batch)
        loss = loss_fn(forward(model, x), y) / (k if mean else 1)  # scalar
        loss.backward()  # adds this micro-batch's share to .grad
        total += loss.item()
    return total if mean else total / k
