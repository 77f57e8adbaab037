"""Training: the StepByStep core and the callbacks that extend its loop."""
from .callbacks import Callback
from .captures import Captures
from .clipping import GradientClipping
from .lr_finder import lr_range_test
from .schedulers import LRScheduler
from .tensorboard import TensorBoard
from .trainer import StepByStep

__all__ = ["StepByStep", "Callback", "GradientClipping", "LRScheduler", "TensorBoard", "Captures", "lr_range_test"]
