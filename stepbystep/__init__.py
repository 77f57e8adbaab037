"""stepbystep: the helper package of the course on attention and the Transformer.

The trainer, data generators, models, plots and widgets that the notebooks in
``notebooks/`` import. Everything is tested under ``tests/``. Importing the trainer loads no
plotting or widget library; the book's complete trainer, with its figures, is
``stepbystep.book.training.StepByStep``.
"""

__version__ = "0.1.0"

from .devices import evaluating
from .seeding import set_seed
from .training import StepByStep

__all__ = ["StepByStep", "evaluating", "set_seed", "__version__"]
