"""The StepByStep trainer: the book's small training class, made safe to resume and hard to misuse.

A learner who read "Deep Learning with PyTorch Step-by-Step" finds the same methods here
(``set_loaders``, ``train``, ``predict``, ``plot_losses``, checkpoints, schedulers, clipping,
hooks). What changed is what happens at the edges: a progress bar, batches moved whole to the
device, seeded runs that continue exactly where they stopped (across checkpoints too), atomic
and safe checkpoint files, and clear errors before anything goes wrong deep inside PyTorch.
Plotting libraries are imported only when a figure is drawn.
"""
import copy
import math
from datetime import datetime

import numpy as np
import torch
from torch import nn
from torch.optim import lr_scheduler
from tqdm.auto import trange

from .checkpoint import atomic_save, safe_load
from .checks import check_choice, check_instance, check_positive_int, check_positive_number
from .containers import map_structure
from .devices import default_device, evaluating, move_to
from .seeding import get_rng_state, set_rng_state
from .seeding import set_seed as seed_everything

__all__ = ["StepByStep"]

# Schedulers whose schedule is written in optimizer steps rather than epochs.
_PER_BATCH_SCHEDULERS = (lr_scheduler.OneCycleLR, lr_scheduler.CyclicLR)
_INTERVALS = ("batch", "epoch")
_CHECKPOINT_KEYS = ("epoch", "model_state_dict", "optimizer_state_dict", "scheduler_state_dict",
                    "loss", "val_loss", "learning_rates", "rng_state")


def _split_batch(batch):
    """A loader's batch -> ``(x, y)``, refusing anything that is not a pair."""
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        length = f" of length {len(batch)}" if hasattr(batch, "__len__") else ""
        raise TypeError(f"loaders must yield (x, y) batches, got {type(batch).__name__}{length}")
    return batch


def _to_numpy(output):
    """Model output (tensors in any nesting of tuples, lists and dicts) -> NumPy, same nesting."""
    return map_structure(lambda leaf: leaf.detach().cpu().numpy() if isinstance(leaf, torch.Tensor) else leaf,
                         output)


def _numpy_to_tensor(leaf):
    """A NumPy array becomes a tensor (floats in the default dtype); anything else is kept."""
    if isinstance(leaf, np.ndarray):
        tensor = torch.as_tensor(leaf)
        return tensor.to(torch.get_default_dtype()) if tensor.is_floating_point() else tensor
    return leaf


def _append_leaf(recorded, new):
    if isinstance(recorded, np.ndarray) and isinstance(new, np.ndarray):
        return np.concatenate([recorded, new])  # along the batch dimension
    return new  # None stays None; anything else is not batched


def _concat(recorded, new):
    """Append a hook's new output to what it recorded before, along the batch dimension."""
    return new if recorded is None else map_structure(_append_leaf, recorded, new)


def _check_optimizer(model, optimizer):
    check_instance("optimizer", optimizer, torch.optim.Optimizer, "a torch.optim.Optimizer")
    owned = {id(p) for p in model.parameters()}
    foreign = sum(id(p) not in owned for group in optimizer.param_groups for p in group["params"])
    if foreign:
        raise ValueError(
            f"the optimizer updates {foreign} tensor(s) that are not parameters of this model: "
            "build it from model.parameters() (after rebuilding a model, rebuild its optimizer too)"
        )


class StepByStep:
    """Trains a model with a loss function and an optimizer, and keeps the whole history.

    Args:
        model: the ``nn.Module`` to train.
        loss_fn: called as ``loss_fn(prediction, y)``; returns a scalar tensor.
        optimizer: a ``torch.optim.Optimizer`` built on ``model``'s parameters.
        device: where to train; by default CUDA, then MPS, then the CPU.

    Batches from the loaders are ``(x, y)`` pairs, moved whole to the device (tensors inside
    tuples, lists and dicts too). A tensor ``x`` is passed as ``model(x)``, a tuple or list as
    ``model(*x)`` and a dict as ``model(**x)``.

    Attributes:
        losses, val_losses: the mean training and validation loss of every completed epoch.
        learning_rates: the learning rate (of the first parameter group) used in every step.
        total_epochs: how many epochs the model has been trained for, across calls.
        device: the ``torch.device`` the model lives on.
        visualization: what the hooks recorded, by layer name (see ``attach_hooks``).

    Seeds: the first ``train`` call seeds every random generator with 42 (or ``seed=``);
    later calls continue the same streams, so ``train(2); train(2)`` repeats ``train(4)``
    exactly, even with other random code run in between. Checkpoints carry the streams.
    """

    def __init__(self, model, loss_fn, optimizer, device=None):
        check_instance("model", model, nn.Module, "an nn.Module")
        if not callable(loss_fn):
            raise TypeError(f"loss_fn must be callable, as loss_fn(prediction, y), got {type(loss_fn).__name__}")
        _check_optimizer(model, optimizer)
        self.model = model
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.device = None
        self.to(default_device() if device is None else device)

        self.train_loader = None
        self.val_loader = None
        self.scheduler = None
        self.scheduler_interval = None
        self.clip_value = None
        self.clip_norm = None
        self.writer = None

        self.losses = []
        self.val_losses = []
        self.learning_rates = []
        self.total_epochs = 0

        self.visualization = {}
        self.handles = {}
        self._rng_state = None  # the training streams between calls; None until first seeded

    # ----------------------------------------------------------------------------- set-up
    def to(self, device):
        """Move the model (and any optimizer state) to ``device``; returns the trainer."""
        check_instance("device", device, (str, int, torch.device), "like 'cpu', 'cuda', 'cuda:1' or 'mps'")
        try:
            device = torch.device(device)
        except RuntimeError as error:
            raise ValueError(f"device must be like 'cpu', 'cuda', 'cuda:1' or 'mps', got {device!r}") from error
        self.model.to(device)
        self.device = device
        # reloading its own state makes the optimizer cast its buffers to the parameters' device
        self.optimizer.load_state_dict(self.optimizer.state_dict())
        return self

    def set_seed(self, seed=42):
        """Seed every random generator now; the next ``train`` call starts from these streams."""
        seed_everything(seed, self.train_loader)
        self._rng_state = get_rng_state(self.train_loader)

    def set_loaders(self, train_loader, val_loader=None):
        """Use ``train_loader`` for training and ``val_loader`` (optional) for validation."""
        for name, loader in (("train_loader", train_loader), ("val_loader", val_loader)):
            if loader is None and name == "val_loader":
                continue
            if loader is None or not hasattr(loader, "__iter__"):
                raise TypeError(f"{name} must be an iterable of (x, y) batches, such as a DataLoader; "
                                f"got {type(loader).__name__}")
        self.train_loader = train_loader
        self.val_loader = val_loader

    def set_lr_scheduler(self, scheduler, interval=None):
        """Step ``scheduler`` during training, recording the learning rate of every step.

        ``interval`` says when it steps: ``'batch'`` after every optimizer step (for warm-up
        and one-cycle schedules written in steps), ``'epoch'`` after every epoch. ``None``
        picks ``'batch'`` for ``OneCycleLR`` and ``CyclicLR`` and ``'epoch'`` otherwise.
        ``ReduceLROnPlateau`` steps once per epoch with the validation loss, so it needs a
        validation loader.
        """
        if not (hasattr(scheduler, "step") and hasattr(scheduler, "optimizer")):
            raise TypeError(f"scheduler must be a learning-rate scheduler from torch.optim.lr_scheduler, "
                            f"got {type(scheduler).__name__}")
        if scheduler.optimizer is not self.optimizer:
            raise ValueError("the scheduler was built on another optimizer: build it on this trainer's "
                             "optimizer (sbs.optimizer)")
        if interval is None:
            interval = "batch" if isinstance(scheduler, _PER_BATCH_SCHEDULERS) else "epoch"
        check_choice("interval", interval, (*_INTERVALS, None))
        if isinstance(scheduler, lr_scheduler.ReduceLROnPlateau) and interval != "epoch":
            raise ValueError("ReduceLROnPlateau follows the validation loss, which exists once per epoch: "
                             "use interval='epoch'")
        self.scheduler = scheduler
        self.scheduler_interval = interval

    def set_clip_grad_value(self, clip_value):
        """Clip every gradient element to ``[-clip_value, clip_value]`` before each step."""
        self.clip_value = check_positive_number("clip_value", clip_value)

    def set_clip_grad_norm(self, max_norm, norm_type=2):
        """Rescale the gradients so their total ``norm_type``-norm is at most ``max_norm``.

        Combined with ``set_clip_grad_value``, values are clipped first, then the norm.
        """
        self.clip_norm = (check_positive_number("max_norm", max_norm), check_positive_number("norm_type", norm_type))

    def remove_clip(self):
        """Stop clipping gradients (both kinds)."""
        self.clip_value = None
        self.clip_norm = None

    def set_tensorboard(self, name, folder="runs"):
        """Also log every epoch's losses to TensorBoard, under ``folder/name_<timestamp>``."""
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as error:
            raise ImportError("set_tensorboard needs the tensorboard package: pip install tensorboard") from error
        suffix = datetime.now().strftime("%Y%m%d%H%M%S")
        self.writer = SummaryWriter(f"{folder}/{name}_{suffix}")

    # ----------------------------------------------------------------------------- training
    def _forward(self, x):
        if isinstance(x, dict):
            return self.model(**x)
        if isinstance(x, (tuple, list)):
            return self.model(*x)
        return self.model(x)

    def _clip_gradients(self):
        if self.clip_value is None and self.clip_norm is None:
            return
        parameters = [p for p in self.model.parameters() if p.grad is not None]
        if self.clip_value is not None:
            nn.utils.clip_grad_value_(parameters, self.clip_value)
        if self.clip_norm is not None:
            max_norm, norm_type = self.clip_norm
            nn.utils.clip_grad_norm_(parameters, max_norm, norm_type=norm_type)

    def _train_epoch(self, epoch):
        """One pass over the training loader; returns the mean batch loss."""
        self.model.train()
        total, n_done = 0.0, 0
        for batch_index, batch in enumerate(self.train_loader, start=1):
            x, y = move_to(_split_batch(batch), self.device)
            loss = self.loss_fn(self._forward(x), y)
            value = loss.item()
            if not math.isfinite(value):
                raise FloatingPointError(
                    f"the training loss became {value} at epoch {epoch}, batch {batch_index}; training "
                    f"stopped before this step, and the history keeps the {self.total_epochs} completed "
                    "epoch(s). Try a lower learning rate, gradient clipping, or check the data."
                )
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self._clip_gradients()
            self.learning_rates.append(self.optimizer.param_groups[0]["lr"])
            self.optimizer.step()
            if self.scheduler is not None and self.scheduler_interval == "batch":
                self.scheduler.step()
            total += value
            n_done += 1
        if n_done == 0:
            raise ValueError("the training loader yielded no batches")
        return total / n_done

    def _validate(self):
        """Mean batch loss over the validation loader, in eval mode and without gradients."""
        total, n_batches = 0.0, 0
        with evaluating(self.model):
            for batch in self.val_loader:
                x, y = move_to(_split_batch(batch), self.device)
                total += self.loss_fn(self._forward(x), y).item()
                n_batches += 1
        if n_batches == 0:
            raise ValueError("the validation loader yielded no batches")
        return total / n_batches

    def _start_streams(self, seed):
        if seed is not None:
            seed_everything(seed, self.train_loader)
        elif self._rng_state is None:
            seed_everything(42, self.train_loader)
        else:
            set_rng_state(self._rng_state, self.train_loader)

    def train(self, n_epochs, seed=None, progress=True):
        """Train for ``n_epochs`` more epochs, validating after each one.

        Args:
            n_epochs: how many epochs to run now.
            seed: reseed every generator with it first. By default the first call seeds with 42
                and later calls continue the streams where the previous call (or the loaded
                checkpoint) left them.
            progress: show a progress bar over epochs with the latest losses (a widget in
                JupyterLab, text elsewhere).

        A NaN or infinite loss raises ``FloatingPointError`` naming the epoch and batch.
        Ctrl-C stops after cleaning up: every completed epoch stays in the history. The model
        is left in eval mode.
        """
        check_positive_int("n_epochs", n_epochs)
        if self.train_loader is None:
            raise RuntimeError("no data to train on: call set_loaders(train_loader, val_loader=None) first")
        if isinstance(self.scheduler, lr_scheduler.ReduceLROnPlateau) and self.val_loader is None:
            raise ValueError("ReduceLROnPlateau steps with the validation loss: pass a val_loader to set_loaders")
        self._start_streams(seed)
        bar = trange(n_epochs, desc="epochs", unit="epoch", disable=not progress)
        try:
            for _ in bar:
                epoch = self.total_epochs + 1
                loss = self._train_epoch(epoch)
                val_loss = self._validate() if self.val_loader is not None else None
                self.losses.append(loss)
                if val_loss is not None:
                    self.val_losses.append(val_loss)
                self.total_epochs = epoch
                self._end_of_epoch(epoch, loss, val_loss)
                bar.set_postfix(loss=f"{loss:.4f}", **({} if val_loss is None else {"val_loss": f"{val_loss:.4f}"}))
        except KeyboardInterrupt:
            print(f"Training interrupted: the history keeps the {self.total_epochs} completed epoch(s).")
        finally:
            bar.close()
            self._rng_state = get_rng_state(self.train_loader)
            self.model.eval()

    def _end_of_epoch(self, epoch, loss, val_loss):
        if self.scheduler is not None and self.scheduler_interval == "epoch":
            if isinstance(self.scheduler, lr_scheduler.ReduceLROnPlateau):
                self.scheduler.step(val_loss)
            else:
                self.scheduler.step()
        if self.writer is not None:
            scalars = {"training": loss} if val_loss is None else {"training": loss, "validation": val_loss}
            self.writer.add_scalars("loss", scalars, epoch)
            self.writer.flush()

    # ----------------------------------------------------------------------------- using the model
    def predict(self, x):
        """The model's output for ``x`` as NumPy, computed in eval mode without gradients.

        Every submodule's mode is restored afterwards. Tensors keep their dtype (token ids stay
        integers); NumPy floating arrays become PyTorch's default float dtype, other NumPy
        arrays keep theirs. ``x`` may be a tuple or dict, as for the loaders; the output may be
        a tensor or any nesting of them (tuples, named tuples, lists, dicts), kept as it is.
        """
        x = map_structure(_numpy_to_tensor, x)
        with evaluating(self.model):
            output = self._forward(move_to(x, self.device))
        return _to_numpy(output)

    def count_parameters(self):
        """The number of trainable parameters."""
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad)

    def plot_losses(self):
        """Training and validation losses per epoch; returns the Figure."""
        from .plots.training import loss_curves

        return loss_curves(self.losses, self.val_losses)

    def loader_apply(self, loader, func, reduce="sum"):
        """Apply ``func(x, y)`` to every batch of ``loader`` (on the device, without gradients).

        Each call returns a tensor; the results are stacked and summed (``reduce='sum'``) or
        averaged (``'mean'``) over batches.
        """
        check_choice("reduce", reduce, ("sum", "mean"))
        with torch.no_grad():
            results = [torch.as_tensor(func(*move_to(_split_batch(batch), self.device))) for batch in loader]
        if not results:
            raise ValueError("the loader yielded no batches")
        stacked = torch.stack(results)  # (n_batches, ...)
        return stacked.sum(dim=0) if reduce == "sum" else stacked.float().mean(dim=0)

    # ----------------------------------------------------------------------------- hooks
    def _layers(self, layers_to_hook):
        """Layer names (one string or a list) -> ``{name: module}``, refusing unknown names."""
        if isinstance(layers_to_hook, str):
            layers_to_hook = [layers_to_hook]
        modules = dict(self.model.named_modules())
        unknown = [name for name in layers_to_hook if name not in modules or name == ""]
        if unknown:
            available = ", ".join(name for name in modules if name) or "none"
            raise ValueError(f"no layer named {unknown} in the model; its layers are: {available}")
        return {name: modules[name] for name in layers_to_hook}

    def attach_hooks(self, layers_to_hook, hook_fn=None):
        """Register forward hooks on the named layers (names as in ``model.named_modules()``).

        Without ``hook_fn``, each layer's outputs in eval mode (``predict``, validation) are
        recorded in ``self.visualization[name]`` as NumPy, concatenated over calls along the
        batch dimension. A layer that returns a tuple, named tuple, list or dict is recorded in
        the same container, each tensor concatenated (``None`` entries kept). With
        ``hook_fn(module, inputs, outputs)``, that function is registered.
        """
        for name, module in self._layers(layers_to_hook).items():
            if name in self.handles:
                self.handles.pop(name).remove()
            self.visualization[name] = None
            hook = hook_fn if hook_fn is not None else self._recorder(name)
            self.handles[name] = module.register_forward_hook(hook)

    def _recorder(self, name):
        def record(module, inputs, outputs):
            if self.model.training:
                return
            self.visualization[name] = _concat(self.visualization[name], _to_numpy(outputs))
        return record

    def remove_hooks(self):
        """Remove every hook (what they recorded stays in ``visualization``)."""
        for handle in self.handles.values():
            handle.remove()
        self.handles = {}

    # ----------------------------------------------------------------------------- checkpoints
    def save_checkpoint(self, path):
        """Save everything needed to resume exactly: model, optimizer, scheduler, epoch count,
        loss histories and every random stream. The file is written atomically."""
        checkpoint = {
            "epoch": self.total_epochs,
            "model_state_dict": self.model.state_dict(),
            "optimizer_state_dict": self.optimizer.state_dict(),
            "scheduler_state_dict": None if self.scheduler is None else self.scheduler.state_dict(),
            "loss": list(self.losses),
            "val_loss": list(self.val_losses),
            "learning_rates": list(self.learning_rates),
            "rng_state": self._rng_state,
        }
        atomic_save(checkpoint, path)

    def load_checkpoint(self, path):
        """Restore a checkpoint saved by ``save_checkpoint`` onto this trainer's device.

        Set the loaders (and the scheduler, if the run had one) first: the next ``train`` call
        continues the saved random streams, the train loader's shuffling included. Files are
        read with ``weights_only=True``: one that would run code is refused. Everything is
        checked before anything changes: a refused checkpoint leaves the trainer as it was.
        """
        checkpoint = safe_load(path, map_location=self.device)
        missing = [key for key in _CHECKPOINT_KEYS if not isinstance(checkpoint, dict) or key not in checkpoint]
        if missing:
            raise ValueError(f"{str(path)!r} is not a StepByStep checkpoint: it lacks {missing}")
        saved_scheduler = checkpoint["scheduler_state_dict"]
        if (saved_scheduler is None) != (self.scheduler is None):
            raise ValueError(
                "the checkpoint was saved " + ("with" if saved_scheduler is not None else "without")
                + " a learning-rate scheduler and this trainer has " + ("one" if self.scheduler else "none")
                + ": call set_lr_scheduler(...) to match before load_checkpoint"
            )
        previous = self._module_states()
        try:
            self.model.load_state_dict(checkpoint["model_state_dict"])
            self.optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
            if saved_scheduler is not None:
                self.scheduler.load_state_dict(saved_scheduler)
        except Exception:
            self._restore_module_states(previous)
            raise
        self.total_epochs = checkpoint["epoch"]
        self.losses = list(checkpoint["loss"])
        self.val_losses = list(checkpoint["val_loss"])
        self.learning_rates = list(checkpoint["learning_rates"])
        self._rng_state = checkpoint["rng_state"]

    def _module_states(self):
        """Copies of the model's, optimizer's and scheduler's states, to roll back a failed load."""
        return {
            "model": copy.deepcopy(self.model.state_dict()),
            "optimizer": copy.deepcopy(self.optimizer.state_dict()),
            "scheduler": None if self.scheduler is None else copy.deepcopy(self.scheduler.state_dict()),
        }

    def _restore_module_states(self, states):
        self.model.load_state_dict(states["model"])
        self.optimizer.load_state_dict(states["optimizer"])
        if states["scheduler"] is not None:
            self.scheduler.load_state_dict(states["scheduler"])
