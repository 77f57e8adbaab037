"""stepbystep: the helper package of the course on attention and the Transformer.

The trainer, data generators, models, plots and widgets that the notebooks in
``notebooks/`` import. Everything is tested under ``tests/``. Importing the trainer loads no
plotting or widget library: those come in only when a figure or a widget is drawn.
"""

__version__ = "0.1.0"

from .devices import evaluating
from .seeding import set_seed
from .trainer import StepByStep

__all__ = ["StepByStep", "evaluating", "set_seed", "__version__"]
