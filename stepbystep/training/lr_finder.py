"""The learning-rate range test: train briefly with a growing rate, then put everything back."""
import copy
import math
from collections.abc import Iterable

from ..checks import check_choice, check_fraction, check_instance, check_positive_int, check_positive_number
from .batches import endless

__all__ = ["lr_range_test"]


def lr_range_test(trainer, data_loader, end_lr, num_iter=100, step_mode="exp", alpha=0.05):
    """The smoothed loss of ``num_iter`` training steps at rates from the optimizer's to ``end_lr``.

    The rate grows geometrically (``step_mode='exp'``) or evenly (``'linear'``); other
    parameter groups are scaled by the same factor. The loss is smoothed exponentially with
    weight ``alpha`` on the newest value; the test stops early at a non-finite loss. Each step
    is a training step (gradients zeroed, callbacks' ``on_after_backward`` run, so clipping
    applies). Afterwards the weights, buffers, modes and optimizer state are what they were.
    Returns ``{'loss': [...], 'lr': [...]}``.
    """
    check_instance("data_loader", data_loader, Iterable, "an iterable of (x, y) batches")
    check_positive_number("end_lr", end_lr)
    check_positive_int("num_iter", num_iter)
    check_choice("step_mode", step_mode, ("exp", "linear"))
    check_fraction("alpha", alpha, allow_one=True)
    model, optimizer = trainer.model, trainer.optimizer
    groups = optimizer.param_groups
    start_lr = groups[0]["lr"]
    if not start_lr > 0:
        raise ValueError(f"the optimizer's learning rate must be positive (the test starts there), got {start_lr!r}")
    base_lrs = [group["lr"] for group in groups]
    saved_model = copy.deepcopy(model.state_dict())
    saved_optimizer = copy.deepcopy(optimizer.state_dict())
    modes = [(module, module.training) for module in model.modules()]
    tracking = {"loss": [], "lr": []}
    batches = endless(data_loader)
    try:
        model.train()
        for iteration in range(num_iter):
            progress = iteration / max(num_iter - 1, 1)  # 0 at the first step, 1 at the last
            ratio = end_lr / start_lr
            factor = ratio**progress if step_mode == "exp" else 1 + progress * (ratio - 1)
            for group, base_lr in zip(groups, base_lrs):
                group["lr"] = base_lr * factor
            loss = trainer.batch_loss(next(batches))
            value = loss.item()
            if not math.isfinite(value):
                break
            trainer.step(loss)
            previous = tracking["loss"][-1] if tracking["loss"] else value
            tracking["loss"].append(alpha * value + (1 - alpha) * previous)
            tracking["lr"].append(groups[0]["lr"])
    finally:
        model.load_state_dict(saved_model)
        optimizer.load_state_dict(saved_optimizer)
        optimizer.zero_grad(set_to_none=True)
        for module, training in modes:
            module.training = training
    return tracking
