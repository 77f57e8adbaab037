"""Chapter 17's calculator plot: the dashed comparison gives its value at the context in the legend
(it leaves the plot for DeepSeek-V3 within a few thousand tokens), and the legend sits below the
axes, where no curve runs under it."""
import matplotlib.pyplot as plt
import pytest

from stepbystep.models import published_attention
from stepbystep.plots import cache_kinds_memory
from stepbystep.widgets.ch17_memory import MARKED_CONFIGS, memory_explorer, memory_state


def test_the_dashed_line_s_value_at_the_context_is_in_the_legend():
    state = memory_state(kind="multi-head", n_layers=2, n_heads=4, head_dim=8, context=1024, dtype="float32")
    fig = cache_kinds_memory(state)
    assert fig.axes[0].get_legend() is None and len(fig.legends) == 1
    texts = [text.get_text() for text in fig.legends[0].get_texts()]
    assert texts[1].endswith(f"{state['mha_bytes'] / 2 ** 30:,.1f} GiB at 1,024 tokens")
    assert state["mha_bytes"] == 2 * 2 * 4 * 8 * 4 * 1024  # layers, keys and values, heads, head_dim, bytes, tokens
    plt.close(fig)


@pytest.mark.parametrize("name", MARKED_CONFIGS)
def test_every_preset_names_its_dashed_line_s_value(name):
    widget = memory_explorer(name)
    texts = [text.get_text() for text in widget.figure.legends[0].get_texts()]
    context = published_attention(name)["context"]
    assert f"{widget.state['mha_bytes'] / 2 ** 30:,.1f} GiB at {context:,} tokens" in texts[1]
    legend_box = widget.figure.legends[0].get_window_extent()
    axes_box = widget.figure.axes[0].get_window_extent()
    assert legend_box.y1 <= axes_box.y0  # below the axes, not over a curve
    plt.close(widget.figure)


def test_deepseek_v3_s_dashed_line_reads_610_gib():
    texts = [text.get_text() for text in memory_explorer("DeepSeek-V3").figure.legends[0].get_texts()]
    assert "610.0 GiB at 163,840 tokens" in texts[1]  # 61 layers x 2 x 128 heads x 128 x 2 bytes x 163,840
