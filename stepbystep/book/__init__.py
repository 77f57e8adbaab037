"""Everything that exists only so the code of *Deep Learning with PyTorch Step-by-Step* runs
unchanged: the book's names, its trainer methods and its checkpoints.

The course itself imports the newer names; the book's readers import from here or from the
top-level package, and get the same numbers as the book.
"""
from .training import ChannelNormalizer, StepByStep, from_book
