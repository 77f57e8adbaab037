"""A trainer's checkpoints: its ``state_dict`` in a file, written atomically, checked and loaded
all or nothing; files of earlier releases are brought up to date as they are read."""
import copy
import dataclasses

from ..serialization import atomic_save, safe_load
from .batches import OpenEpoch
from .callbacks import stateful

__all__ = ["BOOK_KEYS", "save_checkpoint", "read_checkpoint", "upgrade", "check_keys", "check_compatible",
           "load_all_or_nothing"]

# what the book's save_checkpoint writes; ours add the rates, the streams, the callbacks' states and the open epoch
BOOK_KEYS = ("epoch", "model_state_dict", "optimizer_state_dict", "loss", "val_loss")
KEYS = (*BOOK_KEYS, "learning_rates", "rng_state", "callbacks", "steps", "open_epoch")


def save_checkpoint(trainer, path):
    """Write ``trainer.state_dict()`` to ``path``, atomically."""
    atomic_save(trainer.state_dict(), path)


def upgrade(checkpoint):
    """A checkpoint of an earlier release in today's format; others as they are. Before callbacks
    had a state, a file held the scheduler's alone (``scheduler_state_dict``), and no step count
    or open epoch: it was saved between epochs."""
    if not isinstance(checkpoint, dict) or "scheduler_state_dict" not in checkpoint or "callbacks" in checkpoint:
        return checkpoint
    checkpoint = dict(checkpoint)
    scheduler = checkpoint.pop("scheduler_state_dict")
    return {**checkpoint, "callbacks": {} if scheduler is None else {"LRScheduler": {"scheduler": scheduler}},
            "steps": len(checkpoint.get("learning_rates", [])), "open_epoch": None}


def check_keys(checkpoint, path):
    """``checkpoint`` if it holds everything ``save_checkpoint`` writes; a ValueError naming what it lacks."""
    missing = [key for key in KEYS if not isinstance(checkpoint, dict) or key not in checkpoint]
    if missing:
        from_the_book = not set(missing) & set(BOOK_KEYS)
        hint = " (the book's files load with stepbystep.book.training.StepByStep)" if from_the_book else ""
        raise ValueError(f"{str(path)!r} is not a StepByStep checkpoint: it lacks {missing}{hint}")
    return checkpoint


def read_checkpoint(path, device):
    """The checkpoint at ``path``, on ``device``, read with ``weights_only=True``, upgraded and checked."""
    return check_keys(upgrade(safe_load(path, map_location=device)), path)


def _listed(items, limit=4):
    return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _holding(keys):
    return ", ".join("a learning-rate scheduler" if key == "LRScheduler" else f"the callback {key}"
                     for key in sorted(keys))


def check_compatible(trainer, checkpoint):
    """Raise a ``ValueError`` naming what differs when ``checkpoint`` was saved with other callbacks
    holding state, from another model (other parameter names or shapes) or with another optimizer
    class; nothing is loaded."""
    for key in ("model_state_dict", "optimizer_state_dict", "callbacks"):
        if not isinstance(checkpoint[key], dict):
            raise ValueError(f"the checkpoint's {key} must be a dict, got {type(checkpoint[key]).__name__}")
    _check_open_epoch(checkpoint["open_epoch"])
    saved, own = set(checkpoint["callbacks"]), set(stateful(trainer.callbacks))
    if saved != own:  # first: a scheduler's keys join the optimizer's groups
        raise ValueError(f"the checkpoint was saved with {_holding(saved) or 'no callback holding state'} and this "
                         f"trainer has {_holding(own) or 'none'}: add the same callbacks (set_lr_scheduler(...) "
                         "for a scheduler) before load_checkpoint")
    saved, own = checkpoint["model_state_dict"], trainer.model.state_dict()
    differences = []
    for name, value in own.items():
        if name in saved and hasattr(value, "shape") and hasattr(saved[name], "shape") and saved[name].shape != value.shape:
            differences.append(f"{name} {tuple(saved[name].shape)} in the file, {tuple(value.shape)} here")
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
    if saved_class is not None:
        return
    settings = set(trainer.optimizer.defaults)  # older files, without optimizer_class: their settings tell the class
    for group, own_group in zip(groups, own_groups):  # a scheduler adds keys (initial_lr, max_lr...) to a group
        only_saved, only_own = sorted(set(group) - set(own_group)), sorted(settings - set(group))
        if only_saved and only_own:  # a release may add a setting; another class has others
            raise ValueError(f"the checkpoint was saved with another optimizer (settings {only_saved}) than this "
                             f"trainer's {own_class} ({only_own}): {hint}")


def _check_open_epoch(open_epoch):
    """The open epoch must be None or an ``OpenEpoch`` as a dict (files of earlier releases lack the loader's size)."""
    fields, needed = {field.name for field in dataclasses.fields(OpenEpoch)}, {"batches", "loss_sum", "rng_state"}
    if open_epoch is not None and not (isinstance(open_epoch, dict) and needed <= set(open_epoch) <= fields):
        got = sorted(open_epoch, key=str) if isinstance(open_epoch, dict) else type(open_epoch).__name__
        raise ValueError(f"the checkpoint's open_epoch must be None or a dict of {sorted(needed)} (and optionally "
                         f"{sorted(fields - needed)}), got {got}")


def load_all_or_nothing(parts, states):
    """``part.load_state_dict(state)`` for each pair; if one fails, every part gets its own state back."""
    previous = [copy.deepcopy(part.state_dict()) for part in parts]
    try:
        for part, state in zip(parts, states):
            part.load_state_dict(state)
    except Exception:
        for part, state in zip(parts, previous):
            part.load_state_dict(state)
        raise
