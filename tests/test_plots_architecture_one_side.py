"""The diagrams' colour key names the sides only where there are two: a decoder-only model has no
encoder side, so a legend saying "decoder side" would tell the reader nothing."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from stepbystep.models import DecoderConfig, build_transformer  # noqa: E402
from stepbystep.plots.architecture import MARK, architecture_diagram  # noqa: E402


def _legend_texts(fig):
    return [text.get_text() for legend in fig.legends for text in legend.get_texts()]


def test_a_decoder_only_model_gets_no_side_legend_and_keeps_the_changed_line_key():
    before = DecoderConfig(20, d_model=16, n_heads=4, ff_units=64, n_layers=2, dropout=0.0, max_len=32)
    after = before.replace(norm="rmsnorm", n_kv_heads=1)
    assert _legend_texts(architecture_diagram(before.build())) == []
    texts = _legend_texts(architecture_diagram(after.build(), changed_from=before.build()))
    assert texts == [f"{MARK} a line that changed"]
    plt.close("all")


def test_an_encoder_decoder_model_names_both_sides():
    model = build_transformer(n_features=3, input_len=4, target_len=5, d_model=8, n_heads=2, ff_units=7, seed=0)
    texts = _legend_texts(architecture_diagram(model))
    assert "encoder side" in texts and "decoder side" in texts
    plt.close("all")
