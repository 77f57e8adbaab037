"""Everything that exists only so the code of *Deep Learning with PyTorch Step-by-Step* (Godoy)
runs unchanged: the book's model names, its complete trainer and its checkpoints.

The course imports the trainer core (``stepbystep.StepByStep``); a reader of the book imports
``from stepbystep.book import StepByStep`` and gets every method of the book's class, with the
book's arguments and numbers.
"""
from . import models as _models
from .models import *  # noqa: F403  (the book's model names, listed in book/models.py)
from .training import ChannelNormalizer, StepByStep, from_book

__all__ = [*_models.__all__, "ChannelNormalizer", "StepByStep", "from_book"]
