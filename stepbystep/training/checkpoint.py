"""A trainer's checkpoints: everything needed to resume exactly, loaded all or nothing."""
import copy

from ..checkpoint import atomic_save, safe_load

__all__ = ["save_checkpoint", "read_checkpoint", "restore_checkpoint", "check_keys", "check_compatible"]

KEYS = ("epoch", "model_state_dict", "optimizer_state_dict", "loss", "val_loss",
        "scheduler_state_dict", "learning_rates", "rng_state")


def save_checkpoint(trainer, path):
    """Write the model, optimizer, scheduler, epoch count, histories and random streams, atomically."""
    atomic_save({
        "epoch": trainer.total_epochs,
        "model_state_dict": trainer.model.state_dict(),
        "optimizer_state_dict": trainer.optimizer.state_dict(),
        "optimizer_class": type(trainer.optimizer).__name__,  # optional on loading: older files lack it
        "scheduler_state_dict": None if trainer.scheduler is None else trainer.scheduler.state_dict(),
        "loss": list(trainer.losses),
        "val_loss": list(trainer.val_losses),
        "learning_rates": list(trainer.learning_rates),
        "rng_state": trainer._rng_state,
    }, path)


def check_keys(checkpoint, path):
    """``checkpoint`` if it holds everything ``save_checkpoint`` writes; a ValueError naming what it lacks."""
    missing = [key for key in KEYS if not isinstance(checkpoint, dict) or key not in checkpoint]
    if missing:
        from_the_book = set(missing) <= set(KEYS[5:])  # the book's class writes the first five only
        hint = " (the book's files load with stepbystep.book.training.StepByStep)" if from_the_book else ""
        raise ValueError(f"{str(path)!r} is not a StepByStep checkpoint: it lacks {missing}{hint}")
    return checkpoint


def read_checkpoint(path, device):
    """The checkpoint at ``path``, on ``device``, read with ``weights_only=True`` and checked."""
    return check_keys(safe_load(path, map_location=device), path)


def _listed(items, limit=4):
    return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def check_compatible(trainer, checkpoint):
    """Raise a ``ValueError`` naming what differs when ``checkpoint`` was saved from another model
    (other parameter names or shapes) or with another optimizer class; nothing is loaded."""
    for key in ("model_state_dict", "optimizer_state_dict"):
        if not isinstance(checkpoint[key], dict):
            raise ValueError(f"the checkpoint's {key} must be a state dict, got {type(checkpoint[key]).__name__}")
    saved, own = checkpoint["model_state_dict"], trainer.model.state_dict()
    differences = [f"{name} {tuple(saved[name].shape)} in the file, {tuple(value.shape)} here" for name, value in
                   own.items() if name in saved and hasattr(value, "shape") and hasattr(saved[name], "shape")
                   and saved[name].shape != value.shape]
    missing, unexpected = [name for name in own if name not in saved], [name for name in saved if name not in own]
    if missing:
        differences.append(f"no {_listed(missing)} in the file")
    if unexpected:
        differences.append(f"{_listed(unexpected)} in the file only")
    if differences:
        raise ValueError(f"the checkpoint was saved from another model: {'; '.join(differences)}. "
                         "Build the model as it was when saved, then load_checkpoint")
    own_class, saved_class = type(trainer.optimizer).__name__, checkpoint.get("optimizer_class")
    hint = "build the trainer's optimizer as it was when saved, then load_checkpoint"
    if saved_class is not None and saved_class != own_class:
        raise ValueError(f"the checkpoint was saved with the optimizer {saved_class} and this trainer has "
                         f"{own_class}: {hint}")
    groups, own_groups = checkpoint["optimizer_state_dict"].get("param_groups", []), trainer.optimizer.param_groups
    if len(groups) != len(own_groups) or any(len(g["params"]) != len(o["params"]) for g, o in zip(groups, own_groups)):
        raise ValueError(f"the checkpoint's optimizer has {len(groups)} parameter group(s) of "
                         f"{[len(g['params']) for g in groups]} tensors, this trainer's {len(own_groups)} of "
                         f"{[len(o['params']) for o in own_groups]}: {hint}")
    settings = set(trainer.optimizer.defaults)  # the class's own: a scheduler adds keys (initial_lr, max_lr...)
    for group, own_group in zip(groups, own_groups):  # files without optimizer_class: their settings tell
        only_saved, only_own = sorted(set(group) - set(own_group)), sorted(settings - set(group))
        if only_saved and only_own:  # a release may add a setting; another class has others
            raise ValueError(f"the checkpoint was saved with another optimizer (settings {only_saved}) than this "
                             f"trainer's {own_class} ({only_own}): {hint}")


def restore_checkpoint(trainer, checkpoint):
    """Load ``checkpoint`` into ``trainer``; on any error the trainer is left as it was (a checkpoint
    of another model, optimizer or scheduler set-up is refused before anything is loaded)."""
    saved_scheduler = checkpoint["scheduler_state_dict"]
    if (saved_scheduler is None) != (trainer.scheduler is None):  # first: a scheduler's keys join the groups
        raise ValueError(
            "the checkpoint was saved " + ("with" if saved_scheduler is not None else "without")
            + " a learning-rate scheduler and this trainer has " + ("one" if trainer.scheduler else "none")
            + ": call set_lr_scheduler(...) to match before load_checkpoint"
        )
    check_compatible(trainer, checkpoint)
    stateful = [trainer.model, trainer.optimizer] + ([trainer.scheduler] if saved_scheduler is not None else [])
    states = [checkpoint["model_state_dict"], checkpoint["optimizer_state_dict"], saved_scheduler]
    previous = [copy.deepcopy(part.state_dict()) for part in stateful]
    try:
        for part, state in zip(stateful, states):
            part.load_state_dict(state)
    except Exception:
        for part, state in zip(stateful, previous):
            part.load_state_dict(state)
        raise
    trainer.total_epochs = int(checkpoint["epoch"])
    trainer.losses = [float(loss) for loss in checkpoint["loss"]]
    trainer.val_losses = [float(loss) for loss in checkpoint["val_loss"]]
    trainer.learning_rates = [float(lr) for lr in checkpoint["learning_rates"]]
    trainer._rng_state = checkpoint["rng_state"]
