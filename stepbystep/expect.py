"""Claims the text makes, checked where a learner reads them.

Each helper prints one line, ``✓ <claim>``, when the claim holds, and stops with
``✗ expected <claim>, got <what was seen>`` when it does not. The ✓ line holds only the claim's
words, never a measured number, so it reads the same on every machine; the number a run
measured appears only when the claim fails.
"""
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["Claim", "ClaimFailed", "expect", "expect_all", "expect_close"]


class ClaimFailed(AssertionError):
    """A claim did not hold; the message says which, and what was seen instead."""


@dataclass(frozen=True)
class Claim:
    """A named claim and whether it held: what experiment functions return to `expect_all`."""

    holds: bool
    claim: str
    got: Any = None


def _show(value):
    """A seen value as a short string: 4 significant digits for floats, lists for small tensors."""
    if isinstance(value, torch.Tensor):
        value = value.item() if value.numel() == 1 else value.tolist()
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_show(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return str(value)


def _failure(claim, got):
    return f"✗ expected {claim}" + ("" if got is None else f", got {_show(got)}")


def _holds(condition):
    """A Python or one-element tensor truth value; a tensor of many values is ambiguous."""
    if isinstance(condition, torch.Tensor) and condition.numel() != 1:
        raise TypeError(f"condition must be a single truth value, got a tensor of shape {tuple(condition.shape)}")
    return bool(condition)


def expect(condition, claim, got=None):
    """Print ``✓ claim`` if `condition` holds, else raise ClaimFailed naming the claim and `got`."""
    if not _holds(condition):
        raise ClaimFailed(_failure(claim, got))
    print(f"✓ {claim}")


def expect_close(actual, expected, claim, atol, rtol=0.0):
    """`actual` within ``atol + rtol·|expected|`` of `expected` everywhere (numbers or tensors).

    On failure the message gives the largest difference seen, so a learner sees how far off it was.
    """
    actual = torch.as_tensor(actual).detach().to("cpu", torch.float64)
    expected = torch.as_tensor(expected).detach().to("cpu", torch.float64).expand_as(actual)
    gap = (actual - expected).abs()
    holds = bool((gap <= atol + rtol * expected.abs()).all())
    expect(holds, claim, got=None if holds else f"a difference of {gap.max().item():.3g}")


def expect_all(claims):
    """Print a ✓ line for every claim that holds; raise ClaimFailed listing every one that does not."""
    claims = list(claims)
    for claim in claims:
        if not isinstance(claim, Claim):
            raise TypeError(f"claims must be Claim objects, got {type(claim).__name__}")
    failed = [_failure(c.claim, c.got) for c in claims if not _holds(c.holds)]
    for c in claims:
        if _holds(c.holds):
            print(f"✓ {c.claim}")
    if failed:
        raise ClaimFailed("\n".join(failed))
