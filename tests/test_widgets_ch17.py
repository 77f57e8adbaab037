"""Chapter 17's memory calculator: its numbers are the package's, and its controls redraw it."""
import pytest
import torch

from stepbystep.models import kv_cache_bytes, latent_cache_bytes, published_cache_bytes
from stepbystep.widgets import FigureBox, memory_explorer, memory_state
from stepbystep.widgets.ch17_memory import MARKED_CONFIGS, preset


def test_defaults_are_llama_3_8b_and_each_kind_counts_its_heads():
    assert memory_state()["per_token_bytes"] == 128 * 1024
    assert memory_state(kind="multi-head")["per_token_bytes"] == 512 * 1024  # n_kv_heads ignored: one per query head
    assert memory_state(kind="multi-query")["per_token_bytes"] == kv_cache_bytes(32, 1, 128, 1, dtype=torch.bfloat16)
    latent = memory_state(kind="latent", n_layers=61, n_heads=128, kv_latent_dim=512, rope_head_dim=64, context=1000)
    assert latent["per_token_bytes"] == 70_272
    assert latent["context_bytes"] == latent_cache_bytes(61, 512, 64, 1000, dtype=torch.bfloat16)


def test_a_window_bounds_the_windowed_layers_and_the_curve_flattens():
    state = memory_state(n_layers=4, n_heads=4, n_kv_heads=2, head_dim=8, window=16, sinks=2, full_layers=1,
                         context=100, dtype="float32", n_points=11)
    assert state["contexts"].tolist() == list(range(0, 101, 10))
    per_layer_token = 2 * 2 * 8 * 4
    wanted = [per_layer_token * (n + 3 * min(n, 18)) for n in range(0, 101, 10)]
    assert state["curve"].tolist() == wanted
    assert state["context_bytes"] == kv_cache_bytes(1, 2, 8, 100) + kv_cache_bytes(3, 2, 8, 100, window=16, sinks=2)
    assert torch.equal(state["mha_curve"], state["contexts"] * kv_cache_bytes(4, 4, 8, 1))
    every_layer = memory_state(window=4096, context=32768)
    assert every_layer["context_bytes"] == published_cache_bytes("Mistral 7B v0.1", 32768) == 2 ** 29


@pytest.mark.parametrize("name", MARKED_CONFIGS)
def test_each_published_configuration_filled_in_gives_the_package_s_number(name):
    settings = preset(name)
    state = memory_state(**settings)
    assert state["context_bytes"] == published_cache_bytes(name, settings["context"])
    assert state["published"][name] == (settings["context"], state["context_bytes"])
    assert state["per_token_bytes"] == published_cache_bytes(name, 1)


def test_bad_settings_are_refused_with_what_arrived():
    with pytest.raises(ValueError, match="n_kv_heads must divide n_heads, got n_heads=32 and n_kv_heads=6"):
        memory_state(n_kv_heads=6)
    with pytest.raises(ValueError, match="latent attention has no window"):
        memory_state(kind="latent", window=512)
    with pytest.raises(ValueError, match="sinks and full_layers need a window"):
        memory_state(sinks=4)
    with pytest.raises(ValueError, match="full_layers must be at most n_layers"):
        memory_state(n_layers=4, window=8, full_layers=5)
    with pytest.raises(ValueError, match="kind must be one of"):
        memory_state(kind="sparse")
    with pytest.raises(ValueError, match="name must be one of"):
        memory_explorer("GPT-5")


def test_the_menu_fills_the_controls_and_a_moved_control_leaves_it():
    widget = memory_explorer()
    assert isinstance(widget, FigureBox)
    figure = widget.figure
    assert widget.kind.value == "latent" and widget.state["per_token_bytes"] == 70_272
    assert "DeepSeek-V3</b> as published" in widget.summary.value and "68.62 KiB per token" in widget.summary.value
    widget.config.value = "Gemma 3 4B"
    assert (widget.kind.value, widget.n_layers.value, widget.window.value, widget.full_layers.value) == (
        "grouped-query", 34, 1024, 5)
    assert widget.state["context_bytes"] == published_cache_bytes("Gemma 3 4B", 131072)
    assert "Gemma 3 4B</b> as published" in widget.summary.value
    widget.sinks.value = 4
    assert widget.config.value == "(your own)" and "as published" not in widget.summary.value
    assert widget.state["sinks"] == 4
    widget.dtype.value = "float32"
    assert widget.state["per_token_bytes"] == 2 * published_cache_bytes("Gemma 3 4B", 1)
    assert widget.figure is figure and len(figure.axes) == 1
    labels = [text.get_text() for text in figure.axes[0].texts]
    assert sorted(labels) == sorted(MARKED_CONFIGS)


def test_a_refused_setting_is_reported_not_drawn():
    widget = memory_explorer("Mistral 7B v0.1")
    before = widget.state
    widget.kind.value = "latent"
    assert "not drawn" in widget.summary.value and "no window" in widget.summary.value and widget.state is before


def test_the_plot_draws_the_curve_the_comparison_and_each_published_point():
    import matplotlib.pyplot as plt

    from stepbystep.plots import cache_kinds_memory
    state = memory_state(window=4096, context=32768, n_points=9)
    fig = cache_kinds_memory(state)
    ax = fig.axes[0]
    curve, mha = ax.lines[0], ax.lines[1]
    assert curve.get_ydata().tolist() == (state["curve"].double() / 2 ** 30).tolist()
    assert curve.get_ydata()[-1] == curve.get_ydata()[-2] == 0.5  # flat past the window: 512 MiB
    assert mha.get_ydata()[-1] == 16.0 and mha.get_linestyle() == "--"
    points = {text.get_text(): text.xy for text in ax.texts}
    assert points["DeepSeek-V3"] == (160.0, published_cache_bytes("DeepSeek-V3", 163840) / 2 ** 30)
    assert set(points) == set(MARKED_CONFIGS)
    plt.close(fig)
