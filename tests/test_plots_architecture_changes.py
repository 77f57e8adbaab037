"""Chapter 12's diagrams: RoPE drawn inside the attention layer, and the lines that changed marked."""
import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from stepbystep.models import DecoderConfig, EncoderLayer  # noqa: E402
from stepbystep.plots.architecture import MARK, architecture_diagram  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _texts(fig):
    return [t.get_text() for t in fig.axes[0].texts if t.get_bbox_patch() is not None and t.get_text()
            and t.get_bbox_patch().get_edgecolor()[:3] != (1.0, 1.0, 1.0)]


BEFORE = DecoderConfig(20, d_model=16, n_heads=4, ff_units=64, n_layers=2, dropout=0.0, max_len=32)
AFTER = BEFORE.replace(norm="rmsnorm", mlp="swiglu", ff_units=42, bias=False, head_bias=False,
                       position_scheme="rope", n_kv_heads=1)


def test_rope_is_drawn_inside_the_attention_layer_not_on_the_residual_path():
    texts = _texts(architecture_diagram(AFTER.build()))
    assert not any("RoPE" in text and "decoder-only layer" not in text for text in texts)  # no box of its own
    layer = next(text for text in texts if "decoder-only layer" in text).split("\n")
    attention = next(i for i, line in enumerate(layer) if line.startswith("causal self-attention"))
    assert layer[attention + 1] == "queries, keys rotated by position (RoPE)"
    assert texts[1].startswith("embed:") and texts[2].startswith("2 × decoder-only layer")  # embed, then the layers
    sinusoidal = _texts(architecture_diagram(BEFORE.build()))
    assert sinusoidal[2] == "+ sinusoidal positions"  # added to the embedding: a box on the residual path
    half = _texts(architecture_diagram(AFTER.replace(rope_pairing="rotate_half").build()))
    assert any("queries, keys rotated by position (RoPE, rotate_half pairs)" in text for text in half)


def test_changed_from_marks_only_the_lines_that_differ():
    texts = _texts(architecture_diagram(AFTER.build(), changed_from=BEFORE.build()))
    marked = [line for text in texts for line in text.split("\n") if line.startswith(MARK)]
    assert marked == [f"{MARK} causal self-attention (4 heads, 1 KV head: multi-query)",
                      f"{MARK} queries, keys rotated by position (RoPE)",
                      f"{MARK} SwiGLU feed-forward (16 → 42 → 16)", f"{MARK} norm = RMSNorm", f"{MARK} no biases",
                      f"{MARK} final RMSNorm", f"{MARK} head: Linear(16 → V = 20), no bias, tied to embed"]
    assert any(text.startswith("embed:") for text in texts)  # unchanged lines unmarked
    same = _texts(architecture_diagram(BEFORE.build(), changed_from=BEFORE.build()))
    assert not any(MARK in text for text in same)
    legend = architecture_diagram(AFTER.build(), changed_from=BEFORE.build()).legends[0]
    assert f"{MARK} a line that changed" in [t.get_text() for t in legend.get_texts()]


def test_changed_from_must_be_drawn_alike():
    with pytest.raises(TypeError, match="changed_from must be drawn like model"):
        architecture_diagram(AFTER.build(), changed_from=EncoderLayer(2, 8, 16))
    with pytest.raises(TypeError, match="changed_from"):
        architecture_diagram(AFTER.build(), changed_from="2017")


def test_a_tall_box_gets_room_and_the_other_diagrams_keep_their_size():
    before = architecture_diagram(BEFORE.build()).get_size_inches()  # its layer box: 5 lines
    after = architecture_diagram(AFTER.build(), changed_from=BEFORE.build()).get_size_inches()  # 8 lines, 1 row less
    assert before[1] == pytest.approx(0.9 + 0.62 * 7 + 0.25 * 2)  # 7 rows: the size every earlier diagram had
    assert after[1] > before[1]
