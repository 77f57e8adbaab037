"""Chapter 12's "after" diagram: the output layer's lost bias is drawn, and marked as a change."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from stepbystep.models import DecoderConfig  # noqa: E402
from stepbystep.plots.architecture import MARK, architecture_diagram  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _lines(fig):
    return [line for t in fig.axes[0].texts for line in t.get_text().split("\n")]


BEFORE = DecoderConfig(20, d_model=16, n_heads=4, ff_units=64, n_layers=2, dropout=0.0, max_len=32, tie_weights=False)


def test_a_head_without_its_bias_says_so_and_is_marked_against_one_with_it():
    no_head_bias = BEFORE.replace(head_bias=False).build()
    assert "head: Linear(16 → V = 20), no bias" in _lines(architecture_diagram(no_head_bias))
    assert "head: Linear(16 → V = 20)" in _lines(architecture_diagram(BEFORE.build()))  # with its bias: unchanged
    marked = [line for line in _lines(architecture_diagram(no_head_bias, changed_from=BEFORE.build()))
              if line.startswith(MARK)]
    assert marked == [f"{MARK} head: Linear(16 → V = 20), no bias"]  # the only change, and it is marked


def test_the_head_line_names_both_a_missing_bias_and_a_tie():
    tied = BEFORE.replace(head_bias=False, tie_weights=True).build()
    assert "head: Linear(16 → V = 20), no bias, tied to embed" in _lines(architecture_diagram(tied))


def test_the_chapters_after_diagram_marks_the_head():
    from stepbystep.experiments.todays_block import block_configs
    configs = block_configs(20)
    after = architecture_diagram(configs["1 KV head"].build(), changed_from=configs["2017 block"].build())
    assert f"{MARK} head: Linear(32 → V = 20), no bias" in _lines(after)


def _legend(fig):
    return [text.get_text() for legend in fig.legends for text in legend.get_texts()]


def test_the_after_diagram_names_the_box_it_removed():
    from stepbystep.experiments.todays_block import block_configs
    configs = block_configs(20)
    after, before = configs["1 KV head"].build(), configs["2017 block"].build()
    fig = architecture_diagram(after, changed_from=before, removed=("+ sinusoidal positions",))
    assert _legend(fig) == [f"{MARK} a line that changed", "removed: + sinusoidal positions"]
    assert "+ sinusoidal positions" not in _lines(fig)
    assert _legend(architecture_diagram(after, changed_from=before)) == [f"{MARK} a line that changed"]
    with pytest.raises(ValueError, match="pass changed_from too"):
        architecture_diagram(after, removed=("+ sinusoidal positions",))
    with pytest.raises(ValueError, match="model's does not have"):  # still there: not removed
        architecture_diagram(after, changed_from=before, removed=("token ids (N, L)",))
    with pytest.raises(ValueError, match="model's does not have"):  # never there
        architecture_diagram(after, changed_from=before, removed=("+ learned positions",))
