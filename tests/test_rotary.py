"""RoPE (Su et al. 2021): a rotation per pair of dimensions, so norms are kept and scores see offsets only."""
import math

import pytest
import torch

from stepbystep.models import RotaryEmbedding, rotary_frequencies, rotate_pairs


def test_frequencies_follow_the_sinusoidal_speeds():
    theta = rotary_frequencies(8, base=10000.0)
    assert theta.shape == (4,)
    torch.testing.assert_close(theta, torch.tensor([10000.0 ** (-2 * i / 8) for i in range(4)], dtype=torch.float64))
    assert theta[0] == 1.0  # pair 0 turns one radian per position


def test_one_pair_is_rotated_by_position_times_theta():
    rotary = RotaryEmbedding(4, base=100.0)
    x = torch.tensor([[1.0, 0.0, 0.0, 1.0]])  # (L=1, d): pair 0 along its first axis, pair 1 along its second
    out = rotary(x, torch.tensor([3]))
    theta1 = 100.0 ** -0.5
    expected = torch.tensor([[math.cos(3), math.sin(3), -math.sin(3 * theta1), math.cos(3 * theta1)]])
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=0)


def test_rotate_pairs_by_hand():
    x = torch.tensor([2.0, 1.0])
    out = rotate_pairs(x, torch.tensor([0.0]), torch.tensor([1.0]))  # a quarter turn
    torch.testing.assert_close(out, torch.tensor([-1.0, 2.0]))


def test_position_zero_changes_nothing_and_values_keep_their_shape():
    rotary = RotaryEmbedding(8)
    x = torch.randn(2, 3, 5, 8)
    out = rotary(x)
    assert out.shape == x.shape and out.dtype == x.dtype
    torch.testing.assert_close(out[:, :, 0], x[:, :, 0])


@pytest.mark.parametrize("base", [10.0, 10000.0])
def test_rotation_preserves_norms(base):
    rotary = RotaryEmbedding(16, base=base)
    x = torch.randn(3, 2, 40, 16, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(rotary(x).norm(dim=-1), x.norm(dim=-1), atol=1e-5, rtol=0)


@pytest.mark.parametrize("shift", [1, 7, 100])
def test_scores_depend_only_on_the_offset(shift):
    """The same q and k placed at (m, n) and at (m + s, n + s) give the same score, to 1e-5."""
    rotary = RotaryEmbedding(16, base=10000.0)
    generator = torch.Generator().manual_seed(1)
    q, k = torch.randn(1, 16, generator=generator), torch.randn(1, 16, generator=generator)
    for m, n in [(0, 0), (3, 1), (5, 9), (20, 2)]:
        score = rotary(q, torch.tensor([m])) @ rotary(k, torch.tensor([n])).T
        shifted = rotary(q, torch.tensor([m + shift])) @ rotary(k, torch.tensor([n + shift])).T
        torch.testing.assert_close(shifted, score, atol=1e-5, rtol=0)


def test_per_row_positions_rotate_each_row_at_its_own_positions():
    rotary = RotaryEmbedding(8)
    x = torch.randn(2, 3, 4, 8)
    positions = torch.tensor([[0, 0, 1, 2], [0, 1, 2, 3]])  # row 0 left-padded by one
    out = rotary(x, positions)
    torch.testing.assert_close(out[0], rotary(x[0], torch.tensor([0, 0, 1, 2])))
    torch.testing.assert_close(out[1], rotary(x[1]))


@pytest.mark.parametrize("pairing", ["interleaved", "rotate_half"])
def test_tables_looked_up_once_rotate_as_positions_do(pairing):
    rotary = RotaryEmbedding(8, pairing=pairing)
    x = torch.randn(2, 3, 4, 8)  # (N, h, L, d_head)
    for positions in (torch.tensor([2, 3, 4, 5]), torch.tensor([[0, 0, 1, 2], [5, 6, 7, 8]])):
        cos, sin = rotary.at(positions)
        width = 4 if pairing == "interleaved" else 8
        assert cos.shape == sin.shape == ((4, width) if positions.dim() == 1 else (2, 1, 4, width))
        torch.testing.assert_close(rotary.rotate_with(x, (cos, sin)), rotary(x, positions), atol=0, rtol=0)
    assert rotary.rotate_with(x.double(), rotary.at(positions)).dtype == torch.float64  # turned in x's dtype


def test_a_position_past_the_table_is_a_clear_error_and_the_table_is_not_saved():
    rotary = RotaryEmbedding(4, max_len=8)
    x = torch.randn(1, 1, 4)
    with pytest.raises(ValueError, match=r"positions must be in 0..7 \(the table has max_len=8 rows"):
        rotary(x, torch.tensor([20]))
    torch.testing.assert_close(rotary(x, torch.tensor([7])), RotaryEmbedding(4, max_len=64)(x, torch.tensor([7])))
    assert rotary.state_dict() == {} and list(rotary.parameters()) == []


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="d_head must be an even int"):
        RotaryEmbedding(5)
    with pytest.raises(ValueError, match="base must be a positive number"):
        RotaryEmbedding(4, base=0)
    with pytest.raises(TypeError, match="d_head must be a positive int"):
        RotaryEmbedding(4.0)
    rotary = RotaryEmbedding(4)
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., L, 4\)"):
        rotary(torch.randn(2, 3, 6))
    with pytest.raises(ValueError, match="one entry per vector"):
        rotary(torch.randn(2, 3, 4), torch.arange(4))
    with pytest.raises(ValueError, match=r"positions must be in 0..511.*got -1"):
        rotary(torch.randn(2, 3, 4), torch.tensor([0, -1, 2]))
    with pytest.raises(TypeError, match="integer positions"):
        rotary(torch.randn(2, 3, 4), torch.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(TypeError, match="x must be a tensor"):
        rotary([1.0, 2.0, 3.0, 4.0])


def test_module_apply_still_reaches_the_rotary_of_a_rope_model():
    from stepbystep.models import DecoderOnlyTransformer

    model = DecoderOnlyTransformer(12, d_model=16, n_heads=2, ff_units=32, max_len=8, position_scheme="rope")
    visited = []
    model.apply(lambda module: visited.append(type(module).__name__))  # e.g. a weight initialiser
    assert "RotaryEmbedding" in visited and visited[-1] == "DecoderOnlyTransformer"


@pytest.mark.parametrize("kind", ["DecoderOnlyLayer", "AttentionOnlyLayer"])
def test_a_layer_rotates_at_the_positions_it_is_given_or_by_the_tables_looked_up_once(kind):
    from stepbystep.models import AttentionOnlyLayer, DecoderOnlyLayer

    torch.manual_seed(0)
    rotary = RotaryEmbedding(8, max_len=16)
    if kind == "DecoderOnlyLayer":
        layer = DecoderOnlyLayer(2, 16, 32, dropout=0.0, rotary=rotary).eval()
    else:
        layer = AttentionOnlyLayer(2, 16, dropout=0.0, rotary=rotary).eval()
    x, positions = torch.randn(2, 5, 16), torch.tensor([[0, 0, 1, 2, 3], [4, 5, 6, 7, 8]])
    by_positions = layer(x, rotation=rotary.at(positions))
    torch.testing.assert_close(layer(x, None, None, rotary.at(positions)), by_positions, atol=0, rtol=0)  # (query, mask, bias, rotation)
    assert not torch.allclose(layer(x), by_positions)  # the positions matter: 0..4 for both rows differs


def test_under_autocast_the_cache_keeps_rotated_keys_in_the_projections_dtype():
    from stepbystep.models import DecoderOnlyTransformer

    model = DecoderOnlyTransformer(12, d_model=16, n_heads=2, ff_units=32, max_len=8, position_scheme="rope").eval()
    cache = model.new_cache()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        model(torch.tensor([[1, 2, 3]]), cache=cache)
    assert cache.layers[0].keys.dtype == cache.layers[0].values.dtype == torch.bfloat16


def test_a_vector_per_row_turns_at_each_rows_position_and_the_tables_keep_their_dtype():
    rotary = RotaryEmbedding(8)
    x, positions = torch.randn(3, 8), torch.tensor([[0, 1, 2], [3, 4, 5]])  # (L, d) at (N, L)
    out = rotary(x, positions)
    assert out.shape == (2, 3, 8)
    torch.testing.assert_close(out[1], rotary(x, torch.tensor([3, 4, 5])), atol=0, rtol=0)
    assert rotary.at(positions)[0].dtype == torch.float32
    assert RotaryEmbedding(8).double().at(positions)[0].dtype == torch.float64  # the table's own dtype
    half = rotary(x.bfloat16(), positions)
    assert half.dtype == torch.bfloat16
