"""Training: the StepByStep core and the callbacks that extend its loop."""
from .callbacks import Callback
from .captures import Captures, named_layers
from .clipping import GradientClipping
from .lr_finder import lr_range_test
from .schedulers import LRScheduler
from .tensorboard import TensorBoard, summary_writer
from .trainer import StepByStep

__all__ = ["StepByStep", "Callback", "GradientClipping", "LRScheduler", "TensorBoard", "summary_writer",
           "Captures", "named_layers", "lr_range_test"]
