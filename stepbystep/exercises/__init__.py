"""Self-checks for the "Your turn" exercises at the end of each chapter.

Each chapter has a module (``ch01``, ``ch02``, ...) holding :class:`Exercise` objects. In a
notebook::

    from stepbystep.exercises import ch01
    ch01.loo_sigma.check(my_answer)   # says what is wrong and gives a hint, or confirms
    ch01.loo_sigma.solution()         # prints a worked solution
"""
from .exercise import CheckResult, Exercise
