"""Learned positions (GPT-2, BERT): a trainable table, one row per position, nothing past it."""
import pytest
import torch

from stepbystep.models import LearnedPositionalEmbedding


def test_the_table_has_max_len_times_d_model_parameters():
    table = LearnedPositionalEmbedding(64, 32)
    assert sum(p.numel() for p in table.parameters()) == 64 * 32
    assert table.weight.shape == (64, 32) and table.weight.requires_grad


def test_adds_each_positions_row():
    table = LearnedPositionalEmbedding(10, 4)
    x = torch.randn(2, 5, 4)
    torch.testing.assert_close(table(x), x + table.weight[:5])
    positions = torch.tensor([[0, 0, 1, 2, 3], [0, 1, 2, 3, 4]])
    out = table(x, positions)
    torch.testing.assert_close(out[0], x[0] + table.weight[[0, 0, 1, 2, 3]])


def test_only_the_rows_used_get_gradients():
    table = LearnedPositionalEmbedding(10, 4)
    table(torch.randn(3, 6, 4)).sum().backward()
    assert table.weight.grad[:6].abs().sum() > 0
    assert torch.equal(table.weight.grad[6:], torch.zeros(4, 4))


def test_a_position_past_the_table_is_a_clear_error():
    table = LearnedPositionalEmbedding(8, 4)
    with pytest.raises(ValueError, match=r"positions must be in 0..7 \(the table has max_len=8 rows"):
        table(torch.randn(1, 9, 4))


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="max_len must be a positive int"):
        LearnedPositionalEmbedding(0, 4)
    with pytest.raises(ValueError, match="std must be a positive number"):
        LearnedPositionalEmbedding(4, 4, std=0)
    table = LearnedPositionalEmbedding(4, 4)
    with pytest.raises(ValueError, match=r"x must have shape \(N, L, 4\)"):
        table(torch.randn(2, 3))
    with pytest.raises(TypeError, match="integer positions"):
        table(torch.randn(1, 2, 4), torch.tensor([0.0, 1.0]))
