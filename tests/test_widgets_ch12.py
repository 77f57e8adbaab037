"""The KV-cache calculator of chapter 12: the computation behind the sliders, and the redraw."""
import pytest
import torch

from stepbystep.models import PUBLISHED_CACHES, kv_cache_bytes
from stepbystep.widgets import FigureBox, kv_cache_explorer, kv_cache_state


def test_state_defaults_are_llama_3_8b_in_bfloat16():
    state = kv_cache_state()
    assert state["per_token_bytes"] == 128 * 1024
    assert state["per_sequence_bytes"] == state["batch_bytes"] == 2 ** 30
    assert state["mha_bytes"] == 4 * 2 ** 30  # 32 KV heads instead of 8
    assert state["published"]["Llama 3 8B"] == (8192, 2 ** 30)
    assert set(state["published"]) == set(PUBLISHED_CACHES)


def test_state_curves_grow_with_the_context_and_the_batch():
    state = kv_cache_state(n_layers=2, n_heads=4, n_kv_heads=2, head_dim=8, context=100, batch_size=3,
                           dtype="float32", n_points=11)
    assert state["contexts"].tolist() == list(range(0, 101, 10))
    assert torch.equal(state["per_sequence_curve"], state["contexts"] * 256)
    assert torch.equal(state["batch_curve"], 3 * state["per_sequence_curve"])
    assert state["batch_bytes"] == kv_cache_bytes(2, 2, 8, 100, batch_size=3)
    assert state["published"]["GPT-2 small"] == (1024, kv_cache_bytes(12, 12, 64, 1024))


def test_state_dtype_halves_and_errors():
    assert kv_cache_state(dtype="float16")["per_token_bytes"] * 2 == kv_cache_state(dtype="float32")["per_token_bytes"]
    assert kv_cache_state(dtype="float8_e4m3fn")["per_token_bytes"] == 64 * 1024
    with pytest.raises(ValueError, match="n_kv_heads must divide n_heads, got n_heads=32 and n_kv_heads=6"):
        kv_cache_state(n_kv_heads=6)
    with pytest.raises(ValueError, match="dtype must be one of"):
        kv_cache_state(dtype="int4")


def test_sliders_update_the_state_and_redraw_in_place():
    widget = kv_cache_explorer()
    assert isinstance(widget, FigureBox)
    figure = widget.figure
    assert "128.00 KiB per token" in widget.summary.value
    widget.n_kv_heads.value = 32
    assert widget.state["per_token_bytes"] == 512 * 1024 and "512.00 KiB per token" in widget.summary.value
    widget.dtype.value = "float32"
    assert widget.state["per_token_bytes"] == 1024 * 1024
    widget.batch_size.value = 4
    line_labels = [line.get_label() for line in figure.axes[0].lines]
    assert "your configuration, batch of 4" in line_labels
    assert widget.figure is figure and len(figure.axes) == 1


def test_a_kv_head_count_that_does_not_divide_is_reported_not_drawn():
    widget = kv_cache_explorer()
    before = widget.state
    widget.n_kv_heads.value = 5
    assert "do not divide" in widget.summary.value and widget.state is before
