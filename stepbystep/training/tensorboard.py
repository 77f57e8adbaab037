"""TensorBoard as a callback: every epoch's losses, logged and flushed."""
from datetime import datetime

from .callbacks import Callback

__all__ = ["TensorBoard", "summary_writer"]


def summary_writer(name, folder="runs"):
    """A ``SummaryWriter`` logging to ``folder/name_<timestamp>`` (tensorboard is optional)."""
    try:
        from torch.utils.tensorboard import SummaryWriter  # an optional dependency, not a layer
    except ImportError as error:
        raise ImportError("set_tensorboard needs the tensorboard package: pip install tensorboard") from error
    return SummaryWriter(f"{folder}/{name}_{datetime.now().strftime('%Y%m%d%H%M%S')}")


class TensorBoard(Callback):
    """Log the training (and validation) loss of every epoch to ``writer``, a ``SummaryWriter``."""

    def __init__(self, writer):
        self.writer = writer

    def on_epoch_end(self, trainer, epoch, loss, val_loss):
        scalars = {"training": loss} if val_loss is None else {"training": loss, "validation": val_loss}
        self.writer.add_scalars("loss", scalars, epoch)
        self.writer.flush()
