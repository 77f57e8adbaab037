"""A trainer's checkpoints: everything needed to resume exactly, loaded all or nothing."""
import copy

from ..checkpoint import atomic_save, safe_load

__all__ = ["save_checkpoint", "read_checkpoint", "restore_checkpoint", "check_keys"]

KEYS = ("epoch", "model_state_dict", "optimizer_state_dict", "loss", "val_loss",
        "scheduler_state_dict", "learning_rates", "rng_state")


def save_checkpoint(trainer, path):
    """Write the model, optimizer, scheduler, epoch count, histories and random streams, atomically."""
    atomic_save({
        "epoch": trainer.total_epochs,
        "model_state_dict": trainer.model.state_dict(),
        "optimizer_state_dict": trainer.optimizer.state_dict(),
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


def restore_checkpoint(trainer, checkpoint):
    """Load ``checkpoint`` into ``trainer``; on any error the trainer is left as it was."""
    saved_scheduler = checkpoint["scheduler_state_dict"]
    if (saved_scheduler is None) != (trainer.scheduler is None):
        raise ValueError(
            "the checkpoint was saved " + ("with" if saved_scheduler is not None else "without")
            + " a learning-rate scheduler and this trainer has " + ("one" if trainer.scheduler else "none")
            + ": call set_lr_scheduler(...) to match before load_checkpoint"
        )
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
