"""ALiBi (Press, Smith and Lewis 2022): the paper's slopes, and a bias that is -slope x distance."""
import pytest
import torch

from stepbystep.models import alibi_bias, alibi_bias_at, alibi_slopes


def test_slopes_for_eight_heads_are_one_half_to_one_256th():
    torch.testing.assert_close(alibi_slopes(8), torch.tensor([1 / 2 ** h for h in range(1, 9)]), atol=0, rtol=0)


@pytest.mark.parametrize("n_heads", [1, 2, 4, 16])
def test_slopes_for_a_power_of_two_are_geometric_from_2_to_the_minus_8_over_n(n_heads):
    slopes = alibi_slopes(n_heads)
    start = 2 ** (-8 / n_heads)
    torch.testing.assert_close(slopes, torch.tensor([start ** (h + 1) for h in range(n_heads)]))
    assert abs(float(slopes[-1]) - 2 ** -8) < 1e-9  # whatever the heads, the last is 1/256


def test_slopes_for_six_heads_follow_the_papers_rule():
    """4 heads' slopes, then every other slope of 8 heads: 1/2 and 1/8."""
    expected = torch.tensor([1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8])
    torch.testing.assert_close(alibi_slopes(6), expected, atol=0, rtol=0)
    assert len(alibi_slopes(12)) == 12 and len(set(alibi_slopes(12).tolist())) == 12


def test_bias_is_zero_on_the_diagonal_and_linear_in_distance():
    bias = alibi_bias(4, 6)
    assert bias.shape == (4, 6, 6)
    assert torch.equal(torch.diagonal(bias, dim1=-2, dim2=-1), torch.zeros(4, 6))
    slopes = alibi_slopes(4)
    for distance in range(6):
        row = torch.diagonal(bias, offset=-distance, dim1=-2, dim2=-1)  # (h, 6 - distance): query - key = distance
        torch.testing.assert_close(row, (-slopes * distance).unsqueeze(1).expand_as(row), atol=0, rtol=0)
    steps = bias[:, -1, 1:] - bias[:, -1, :-1]  # the last query: one step nearer raises the bias by the slope
    torch.testing.assert_close(steps, slopes.unsqueeze(1).expand_as(steps))


def test_fewer_queries_are_the_last_positions():
    full = alibi_bias(2, 7)
    torch.testing.assert_close(alibi_bias(2, 1, 7), full[:, -1:])
    torch.testing.assert_close(alibi_bias(2, 3, 7), full[:, -3:])


def test_bias_at_per_row_positions():
    slopes = alibi_slopes(2)
    positions = torch.tensor([[0, 0, 1, 2], [0, 1, 2, 3]])
    bias = alibi_bias_at(slopes, positions, positions)
    assert bias.shape == (2, 2, 4, 4)
    torch.testing.assert_close(bias[1], alibi_bias(2, 4))
    torch.testing.assert_close(bias[0, :, 1:, 1:], alibi_bias(2, 3))  # padding does not move the distances


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="n_heads must be a positive int"):
        alibi_slopes(0)
    with pytest.raises(TypeError, match="n_heads must be a positive int"):
        alibi_slopes(2.0)
    with pytest.raises(ValueError, match="length_q must be at most length_k=3"):
        alibi_bias(2, 4, 3)
    with pytest.raises(TypeError, match="slopes must be a tensor"):
        alibi_bias_at([0.5], torch.arange(3), torch.arange(3))
