"""PositionalEncoding: the sinusoidal table, its buffer, the input scaling and the shift-as-rotation property."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from stepbystep.models import PositionalEncoding, sinusoidal_table


def test_table_is_a_buffer_that_follows_the_module():
    pe = PositionalEncoding(max_len=10, d_model=4)
    assert "pe" in dict(pe.named_buffers())
    assert list(pe.parameters()) == []
    assert pe.pe.shape == (1, 10, 4)
    assert pe.to("meta").pe.device.type == "meta"


def test_values_at_a_few_positions():
    d_model = 6
    table = PositionalEncoding(max_len=50, d_model=d_model).pe[0]  # (50, 6)
    assert torch.equal(table[0], torch.tensor([0.0, 1.0, 0.0, 1.0, 0.0, 1.0]))
    for t in (1, 7, 49):
        for i in range(d_model // 2):
            omega = 1.0 / 10000 ** (2 * i / d_model)
            assert table[t, 2 * i].item() == pytest.approx(math.sin(t * omega), abs=1e-6)
            assert table[t, 2 * i + 1].item() == pytest.approx(math.cos(t * omega), abs=1e-6)


def test_forward_scales_the_input_only_when_asked():
    x = torch.randn(3, 5, 4)
    scaled = PositionalEncoding(10, 4)  # the book's behaviour
    plain = PositionalEncoding(10, 4, scale_input=False)
    table = scaled.pe[:, :5]  # (1, 5, 4)
    torch.testing.assert_close(scaled(x), x * 2.0 + table)  # sqrt(4) = 2
    torch.testing.assert_close(plain(x), x + table)


def test_odd_d_model_has_one_more_sine_than_cosines():
    table = sinusoidal_table(20, 5)  # (20, 5)
    assert table.shape == (20, 5)
    t = torch.arange(20.0)
    omega_last = 1.0 / 10000 ** (4 / 5)
    torch.testing.assert_close(table[:, 4], torch.sin(t * omega_last))
    assert PositionalEncoding(20, 5)(torch.zeros(2, 20, 5)).shape == (2, 20, 5)


@settings(max_examples=40, deadline=None)
@given(
    half=st.integers(1, 32),
    t1=st.integers(0, 60),
    t2=st.integers(0, 60),
    k=st.integers(0, 39),
)
def test_a_shift_by_k_is_the_same_rotation_at_every_position(half, t1, t2, k):
    d_model = 2 * half
    table = sinusoidal_table(100, d_model).double()  # (100, d_model)
    for i in range(half):
        omega = 10000 ** (-2 * i / d_model)
        c, s = math.cos(k * omega), math.sin(k * omega)
        rotation = torch.tensor([[c, s], [-s, c]], dtype=torch.float64)  # depends on k only
        for t in (t1, t2):
            pair_t = table[t, 2 * i : 2 * i + 2]  # (sin, cos) at t
            pair_tk = table[t + k, 2 * i : 2 * i + 2]  # (sin, cos) at t + k
            torch.testing.assert_close(rotation @ pair_t, pair_tk, atol=1e-5, rtol=0)


def test_too_long_a_sequence_names_length_and_max_len():
    with pytest.raises(ValueError, match=r"12.*max_len 10"):
        PositionalEncoding(10, 4)(torch.zeros(1, 12, 4))


def test_wrong_d_model_names_the_expected_shape():
    with pytest.raises(ValueError, match=r"\(N, L, 4\).*\(1, 3, 6\)"):
        PositionalEncoding(10, 4)(torch.zeros(1, 3, 6))


def test_bad_sizes_are_rejected():
    with pytest.raises(ValueError, match="d_model must be a positive int, got 0"):
        PositionalEncoding(10, 0)
    with pytest.raises(TypeError, match="max_len must be a positive int, got float 2.5"):
        PositionalEncoding(2.5, 4)


def _float32_table(max_len, d_model):
    """The table computed step by step in float32, written out here: angles t·ω rounded to float32."""
    t = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)
    omega = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    table = torch.empty(max_len, d_model)
    table[:, 0::2], table[:, 1::2] = torch.sin(t * omega), torch.cos(t * omega)
    return table


@pytest.mark.parametrize("max_len, d_model", [(100, 6), (100, 512), (5000, 16)])
def test_the_table_is_computed_in_float32_as_in_the_book(max_len, d_model):
    """Bit for bit: a float64 table differs by up to 1e-7·max_len, enough to move trained numbers."""
    table = sinusoidal_table(max_len, d_model)
    assert table.dtype == torch.float32
    assert torch.equal(table, _float32_table(max_len, d_model))


# ----------------------------------------------------------------------------- the book's state dicts
def test_our_state_dicts_carry_no_table():
    assert list(PositionalEncoding(10, 4).state_dict()) == []  # the book's, which do: test_book_attention.py


def test_start_adds_the_rows_of_the_later_positions():
    encoding = PositionalEncoding(10, 4, scale_input=False)
    x = torch.randn(2, 3, 4)
    torch.testing.assert_close(encoding(x, start=5), x + sinusoidal_table(10, 4)[5:8], atol=0, rtol=0)
    whole = encoding(torch.zeros(1, 10, 4))
    pieces = torch.cat([encoding(torch.zeros(1, 6, 4)), encoding(torch.zeros(1, 4, 4), start=6)], dim=1)
    assert torch.equal(pieces, whole)  # two pieces read one after the other = the whole sequence


def test_a_start_past_max_len_or_not_an_int_is_refused():
    with pytest.raises(ValueError, match=r"sequence length 11 exceeds.*max_len 10"):
        PositionalEncoding(10, 4)(torch.zeros(1, 2, 4), start=9)
    with pytest.raises(ValueError, match="start must be a non-negative int, got -1"):
        PositionalEncoding(10, 4)(torch.zeros(1, 2, 4), start=-1)
    with pytest.raises(TypeError, match="start must be a non-negative int, got float 1.0"):
        PositionalEncoding(10, 4)(torch.zeros(1, 2, 4), start=1.0)
