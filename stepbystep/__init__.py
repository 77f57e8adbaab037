"""stepbystep: the helper package of the course on attention and the Transformer.

The trainer, data generators, models, plots and widgets that the notebooks in
``notebooks/`` import. Everything is tested under ``tests/``.
"""

__version__ = "0.1.0"

from .seeding import set_seed
from .trainer import StepByStep

__all__ = ["StepByStep", "set_seed", "__version__"]
