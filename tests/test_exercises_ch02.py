"""Chapter 02's exercises: the worked solutions pass, typical mistakes get a helpful message."""
import math

import torch

from stepbystep.exercises import ch02


def _solution(exercise):
    return exercise._solution


# ---------------------------------------------------------------- causal mask
def test_causal_mask_solution_passes():
    assert ch02.causal_mask.check(_solution(ch02.causal_mask))


def test_causal_mask_transposed_is_caught():
    result = ch02.causal_mask.check(lambda size: torch.ones(size, size, dtype=torch.bool).triu().unsqueeze(0))
    assert not result and "transpose" in repr(result)


def test_causal_mask_inverted_is_caught():
    result = ch02.causal_mask.check(lambda size: ~torch.ones(size, size, dtype=torch.bool).tril().unsqueeze(0))
    assert not result and "inverted" in repr(result)


def test_causal_mask_without_the_diagonal_is_caught():
    result = ch02.causal_mask.check(lambda size: torch.ones(size, size, dtype=torch.bool).tril(-1).unsqueeze(0))
    assert not result and "attend to itself" in repr(result)


def test_causal_mask_wrong_shape_and_dtype_are_caught():
    result = ch02.causal_mask.check(lambda size: torch.ones(size, size).tril().bool())
    assert not result and "expected shape (1, 3, 3)" in repr(result)
    result = ch02.causal_mask.check(lambda size: torch.ones(size, size).tril().unsqueeze(0))
    assert not result and "bool" in repr(result)
    assert "Stuck? .hint() gives a nudge" in repr(result) and "Hint:" not in repr(result)


def test_causal_mask_messages_never_show_the_right_mask():
    placeholder = ch02.causal_mask.check(lambda size: torch.ones(1, size, size, dtype=torch.bool))
    assert not placeholder and "lets a query read a key that comes after it" in repr(placeholder)
    assert "tensor" not in repr(placeholder)  # no expected mask printed

    def too_strict(size):  # only the diagonal: hides earlier keys
        return torch.eye(size, dtype=torch.bool).unsqueeze(0)

    result = ch02.causal_mask.check(too_strict)
    assert not result and "hides from a query a key" in repr(result)

    def mixed(size):  # the lower triangle shifted: sees key i + 1, hides key 0 from the last query
        mask = torch.eye(size, dtype=torch.bool) | torch.eye(size, dtype=torch.bool).roll(1, dims=1)
        return mask.unsqueeze(0)

    result = ch02.causal_mask.check(mixed)
    assert not result and "later keys and hides some earlier ones" in repr(result)


def test_hints_come_on_request(capsys):
    ch02.causal_mask.hint()
    ch02.masked_attention.hint()
    printed = capsys.readouterr().out
    assert "torch.tril" in printed and "weights.sum(-1)" in printed


# ---------------------------------------------------------------- masked attention
def test_masked_attention_solution_passes():
    assert ch02.masked_attention.check(_solution(ch02.masked_attention))


def _attention(scale=True, softmax_dim=-1, use_mask=True):
    def attention(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1)  # (N, L_q, L_k)
        if scale:
            scores = scores / math.sqrt(q.shape[-1])
        if mask is not None and use_mask:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=softmax_dim)
        return weights @ v, weights

    return attention


def test_masked_attention_missing_scale_is_caught():
    result = ch02.masked_attention.check(_attention(scale=False))
    assert not result and "missing their scaling" in repr(result)


def test_masked_attention_softmax_over_queries_is_caught():
    result = ch02.masked_attention.check(_attention(softmax_dim=1))
    assert not result and "sum to 1" in repr(result)


def test_masked_attention_ignoring_the_mask_is_caught():
    result = ch02.masked_attention.check(_attention(use_mask=False))
    assert not result and "blocked keys still get weight" in repr(result)


def test_masked_attention_inverted_mask_is_named(fails_with):
    def inverted(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))  # the mask not inverted: blocks the allowed keys
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights

    message = fails_with(ch02.masked_attention, inverted, "go to the keys the mask blocks")
    assert "True in the mask means 'may attend'" in message and "-inf" not in message


def test_masked_attention_masking_after_the_softmax_is_named(fails_with):
    message = fails_with(ch02.masked_attention, ch02.suspect_attention, "rows no longer sum to 1")
    assert "before the softmax" not in message  # the repair is not spelled out
    assert "softmax over the keys" not in message  # not misdiagnosed as a softmax over the wrong dimension


def test_masked_attention_suspect_is_right_without_a_mask():
    q, k, v = torch.randn(2, 3, 8), torch.randn(2, 4, 8), torch.randn(2, 4, 5)
    context, weights = ch02.suspect_attention(q, k, v)
    expected_context, expected_weights = _solution(ch02.masked_attention)(q, k, v)
    assert torch.allclose(weights, expected_weights, atol=1e-6) and torch.allclose(context, expected_context, atol=1e-6)


def test_masked_attention_renormalised_after_the_softmax_passes():
    def renormalised(q, k, v, mask=None):  # zero the blocked weights, then share the rest again: also right
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
        if mask is not None:
            weights = weights * mask
            weights = weights / weights.sum(-1, keepdim=True)
        return weights @ v, weights

    assert ch02.masked_attention.check(renormalised)


def test_masked_attention_placeholder_reveals_nothing(fails_with):
    message = fails_with(ch02.masked_attention, lambda q, k, v, mask=None: (None, None), "expected two tensors")
    assert "scal" not in message and "mask" not in message


def test_masked_attention_wrong_return_is_caught():
    result = ch02.masked_attention.check(lambda q, k, v, mask=None: q)
    assert not result and "pair (context, weights)" in repr(result)


# ---------------------------------------------------------------- shift as a rotation
def test_shift_rotation_solution_passes():
    assert ch02.shift_rotation.check(_solution(ch02.shift_rotation))


def test_shift_rotation_transposed_is_caught():
    def transposed(omega, k):
        return _solution(ch02.shift_rotation)(omega, k).T

    result = ch02.shift_rotation.check(transposed)
    assert not result and "wrong way" in repr(result)


def test_shift_rotation_identity_is_caught():
    result = ch02.shift_rotation.check(lambda omega, k: torch.eye(2))
    assert not result and "depend on the angle" in repr(result)


def test_shift_rotation_wrong_angle_reports_pair_and_error():
    def half_angle(omega, k):
        return _solution(ch02.shift_rotation)(omega / 2, k)

    result = ch02.shift_rotation.check(half_angle)
    assert not result and "for pair 0" in repr(result) and "off by up to" in repr(result)


def test_solutions_print_their_source(capsys):
    ch02.shift_rotation.solution()
    assert "def _shift_rotation_solution(omega, k):" in capsys.readouterr().out
