"""Chapter 02's exercises: the worked solutions pass, typical mistakes get a helpful message."""
import math

import pytest
import torch

from stepbystep.exercises import ch02


def _solution(exercise):
    return exercise._solution


# ---------------------------------------------------------------- causal and padding mask
def _causal(size):
    return torch.ones(size, size, dtype=torch.bool).tril()  # (L, L)


def _real(lengths, size):
    return torch.arange(size) < lengths[:, None]  # (N, L)


def test_decoder_mask_solution_passes():
    assert ch02.decoder_mask.check(_solution(ch02.decoder_mask))


@pytest.mark.parametrize("wrong, words", [
    (lambda lengths, size: _causal(size).expand(len(lengths), size, size), "a padded query can still read"),
    (lambda lengths, size: _real(lengths, size)[:, None, :].expand(len(lengths), size, size),
     "the causal part is missing"),
    (lambda lengths, size: ~(_causal(size)[None] & _real(lengths, size)[:, None, :]), "inverted"),
    (lambda lengths, size: _causal(size)[None] | _real(lengths, size)[:, None, :], "it has to pass both"),
    (lambda lengths, size: _causal(size)[None] & _real(lengths, size)[:, :, None], "hides keys (columns), not queries"),
    (lambda lengths, size: _causal(size)[None] & _real(lengths, size)[:, :, None] & _real(lengths, size)[:, None, :],
     "hides keys (columns), not queries"),
    (lambda lengths, size: _causal(size).T[None] & _real(lengths, size)[:, None, :], "which triangle"),
    (lambda lengths, size: _causal(size)[None] & _real(lengths - 1, size)[:, None, :], "hides the last real key"),
    (lambda lengths, size: (_causal(size)[None] & _real(lengths, size)[:, None, :]).transpose(1, 2), "transpose"),
    (lambda lengths, size: _causal(size)[None], "one mask per sequence"),
    (lambda lengths, size: (_causal(size)[None] & _real(lengths, size)[:, None, :]).float(), "bool"),
    (lambda lengths, size: _causal(size).tril(-1)[None] & _real(lengths, size)[:, None, :], "attend to itself"),
    (lambda lengths, size: torch.ones(len(lengths), size, size, dtype=torch.bool), "read a key it must not"),
])
def test_decoder_mask_typical_mistakes(fails_with, wrong, words):
    message = fails_with(ch02.decoder_mask, wrong, words)
    assert "tensor(" not in message and "Hint:" not in message  # no right mask printed, hint on request


@pytest.mark.parametrize("wrong", [
    lambda lengths, size: _causal(size).T[None] & _real(lengths, size)[:, None, :],  # the upper triangle
    lambda lengths, size: _causal(size)[None] & _real(lengths - 1, size)[:, None, :],  # the last real key hidden
])
def test_decoder_mask_slips_that_block_no_query_are_not_blamed_on_queries(wrong):
    result = ch02.decoder_mask.check(wrong)
    assert not result and "not queries" not in repr(result)


def test_decoder_mask_not_a_tensor():
    result = ch02.decoder_mask.check(lambda lengths, size: [[True]])
    assert not result and "expected a tensor" in repr(result)


def test_hints_come_on_request(capsys):
    ch02.decoder_mask.hint()
    ch02.masked_attention.hint()
    printed = capsys.readouterr().out
    assert "a key must pass both" in printed and "weights.sum(-1)" in printed


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
