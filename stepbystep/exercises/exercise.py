"""The ``Exercise`` object: check a learner's answer, hint at what is wrong, reveal a solution."""
import functools
import inspect
import numbers
import textwrap

import torch

__all__ = ["Exercise", "CheckResult", "as_number"]


class CheckResult:
    """Outcome of a check: truthy when the answer passed; shows its message in a notebook."""

    def __init__(self, passed, message):
        self.passed = bool(passed)
        self.message = message

    def __bool__(self):
        return self.passed

    def __repr__(self):
        return self.message


class Exercise:
    """One "Your turn" exercise.

    Args:
        title: a short name shown in messages.
        checker: ``checker(answer)`` returns ``None`` when the answer is right, otherwise a
            sentence saying what is wrong (what was expected, what arrived). It may raise;
            an exception inside the learner's code is reported, not propagated.
        hint: a nudge towards the idea, printed only on request by ``hint()``.
        solution: a function holding the worked solution; ``solution()`` prints its source.

    A failed check says what is wrong with the answer, never what the answer is; deeper help
    comes only when the learner asks for it, first ``hint()``, then ``solution()``.
    """

    def __init__(self, title, checker, hint, solution):
        self.title = title
        self.checker = checker
        self._hint = hint
        self._solution = solution

    def check(self, answer):
        """Check ``answer``; returns a :class:`CheckResult` that prints as a one-line verdict."""
        try:
            problem = self.checker(answer)
        except Exception as error:  # the learner's code failed: report it, keep the notebook going
            problem = f"your answer raised {type(error).__name__}: {error}"
        if problem is None:
            return CheckResult(True, f"✓ {self.title}: correct.")
        return CheckResult(
            False, f"✗ {self.title}: {problem}\n  Stuck? .hint() gives a nudge, .solution() a worked answer."
        )

    def hint(self):
        """Print a nudge towards the idea, without the answer."""
        print(self._hint)

    def solution(self):
        """Print the worked solution's source code."""
        print(textwrap.dedent(inspect.getsource(self._solution)))


def expects_function(signature):
    """Decorate a checker whose answer is a function: anything else gets one clear message.

    ``signature`` words the function the exercise asks for, e.g. ``"scores(queries, keys, sigma)"``.
    """
    def decorate(checker):
        @functools.wraps(checker)
        def check(answer):
            if not callable(answer):
                return f"expected a function {signature}, got {type(answer).__name__}"
            return checker(answer)
        return check
    return decorate


def as_number(value):
    """A learner's answer as a float when it is one number (a Python number or a one-element
    tensor), ``None`` otherwise, so checkers can say "expected a number" instead of crashing."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value.detach())
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return None


def gib_slips(right):
    """The unit slips of an answer asked for in GiB, as ``(wrong value, message)`` pairs: GB, MiB, bytes."""
    return ((right * 2 ** 30 / 1e9, "that is in GB (10⁹ bytes): the question asks for GiB (2³⁰ bytes)"),
            (right * 1024, "that is in MiB: the question asks for GiB (1 GiB = 1,024 MiB)"),
            (right * 2 ** 30, "that is in bytes: the question asks for GiB"))
