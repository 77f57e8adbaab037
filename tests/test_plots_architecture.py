"""The course's architecture diagram: what each model's diagram draws."""
import matplotlib
import pytest
import torch
from torch import nn

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from stepbystep.models import (  # noqa: E402
    DecoderLayer, DecoderOnlyTransformer, DecoderSelfAttn, EncoderDecoderSelfAttn, EncoderLayer, EncoderPe,
    EncoderSelfAttn, EncoderTransf, TransformerModel, ViT, build_transformer,
)
from stepbystep.plots.architecture import COLORS, HIGHLIGHT, architecture_diagram  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _boxes(fig):
    """(text, face colour) of every box, bottom to top within a column as drawn."""
    return [(t.get_text(), to_hex(t.get_bbox_patch().get_facecolor()))
            for t in fig.axes[0].texts if t.get_bbox_patch() is not None and t.get_text()
            and t.get_bbox_patch().get_edgecolor()[:3] != (1.0, 1.0, 1.0)]


def _arrows(fig):
    return [t for t in fig.axes[0].texts if t.get_text() == "" and getattr(t, "arrow_patch", None) is not None]


def _find(fig, fragment):
    matches = [(text, color) for text, color in _boxes(fig) if fragment in text]
    assert matches, f"no box contains {fragment!r}: {[t for t, _ in _boxes(fig)]}"
    return matches


def test_encoder_decoder_transformer_reads_sizes_and_highlights():
    model = build_transformer(n_features=3, input_len=4, target_len=5, d_model=8, n_heads=2, ff_units=7,
                              n_layers=3, seed=0)
    fig = architecture_diagram(model, highlight=("cross-attention",))
    texts = "\n".join(t for t, _ in _boxes(fig))
    assert "proj: Linear(3 → 8)" in texts and "linear: Linear(8 → 3)" in texts
    assert "(N, 4, 3)" in texts and "(N, 4, 8)" in texts and "(N, 1 → 5, 3)" in texts
    assert "3 × encoder layer" in texts and "self-attention (2 heads)" in texts and "feed-forward (8 → 7 → 8)" in texts
    assert texts.count("× √8, + positional encoding") == 2 and texts.count("final LayerNorm") == 2
    assert "x + drop(f(norm(x)))" in texts
    # only the decoder stack holds a cross-attention: it alone is highlighted
    highlighted = [t for t, c in _boxes(fig) if c == HIGHLIGHT]
    assert len(highlighted) == 1 and "3 × decoder layer" in highlighted[0]
    assert _find(fig, "3 × encoder layer")[0][1] == COLORS["encoder"]
    assert len(_arrows(fig)) == 5 + 6 + 1  # up each side (6 and 7 boxes), states -> decoder layers
    assert "d_model = 8, 2 heads, 3 + 3 layers" in fig.axes[0].get_title()


def test_norm_last_stack_has_no_final_norm():
    fig = architecture_diagram(build_transformer(norm_first=False, seed=0))
    texts = "\n".join(t for t, _ in _boxes(fig))
    assert "final LayerNorm" not in texts and "norm(x + drop(f(x)))" in texts


def test_chapter02_model_has_no_residuals_or_norms():
    model = EncoderDecoderSelfAttn(EncoderSelfAttn(3, 2, 10, n_features=2), DecoderSelfAttn(3, 2, 10, n_features=2),
                                   input_len=2, target_len=2)
    fig = architecture_diagram(model, highlight="self-attention")
    texts = [t for t, _ in _boxes(fig)]
    assert not any("LayerNorm" in t or "residual" in t for t in texts)
    assert "no residual connections, no norms" in fig.axes[0].get_title()
    colors = dict(_boxes(fig))
    assert colors["self-attention (3 heads, 2 → 2)\nsource mask"] == HIGHLIGHT
    assert colors["masked self-attention (3 heads, 2 → 2)\ncausal mask"] == HIGHLIGHT
    assert colors["cross-attention (3 heads)\nsource mask"] == COLORS["decoder"]
    assert [c for t, c in _boxes(fig) if t == "feed-forward (2 → 10 → 2)"] == [COLORS["encoder"], COLORS["decoder"]]
    assert len(_arrows(fig)) == 3 + 4 + 1


def test_chapter02_positions_appear_only_with_pe():
    texts = [t for t, _ in _boxes(architecture_diagram(EncoderPe(3, 2, 10, n_features=2, max_len=4)))]
    assert texts[1] == "× √2, + positional encoding"
    assert not any("positional" in t for t, _ in _boxes(architecture_diagram(EncoderSelfAttn(3, 2, 10))))


@pytest.mark.parametrize("norm_first, order", [
    (True, ["input", "LayerNorm", "self-attention", "dropout, + residual", "LayerNorm", "feed-forward",
            "dropout, + residual", "output"]),
    (False, ["input", "self-attention", "dropout, + residual", "LayerNorm", "feed-forward",
             "dropout, + residual", "LayerNorm", "output"]),
])
def test_layer_shows_the_wrappers_placement(norm_first, order):
    fig = architecture_diagram(EncoderLayer(2, 8, 16, norm_first=norm_first), highlight="wrapper")
    boxes = _boxes(fig)
    assert [t for t, _ in boxes] == [next(t for t, _ in boxes[i:i + 1] if t.startswith(o)) for i, o in enumerate(order)]
    for text, color in boxes:
        assert (color == HIGHLIGHT) == (text.startswith("LayerNorm") or text.startswith("dropout"))
    # 7 arrows up the column and two residual arrows into the add boxes
    assert len(_arrows(fig)) == 7 + 2
    assert sum(t.get_text() == "residual" for t in fig.axes[0].texts) == 2


def test_decoder_layer_has_three_wrapped_sublayers():
    fig = architecture_diagram(DecoderLayer(2, 8, 16))
    texts = [t for t, _ in _boxes(fig)]
    assert [t.split(" (")[0] for t in texts if "attention" in t or "feed" in t] == [
        "masked self-attention", "cross-attention", "feed-forward"]
    assert texts.count("LayerNorm") == 3 and texts.count("dropout, + residual") == 3


def test_stack_reads_layers_and_positions():
    fig = architecture_diagram(EncoderTransf(EncoderLayer(2, 8, 16), n_layers=3, scale_input=False))
    texts = [t for t, _ in _boxes(fig)]
    assert texts == ["input (N, L, 8)", "+ positional encoding", texts[2], "final LayerNorm", "output (N, L, 8)"]
    assert texts[2].startswith("3 × encoder layer")


def test_torch_wrapper_colours_pytorchs_part_and_the_wrappers():
    model = TransformerModel(nn.Transformer(6, 2, 1, 2, 10, batch_first=True), 2, 3, 2)
    colors = dict(_boxes(architecture_diagram(model)))
    torch_parts = [t for t, c in colors.items() if c == COLORS["torch"]]
    assert len(torch_parts) == 2 and torch_parts[0].startswith("nn.TransformerEncoder\n1 × layer")
    assert torch_parts[1].startswith("nn.TransformerDecoder\n2 × layer")
    wrapper = {t for t, c in colors.items() if c == COLORS["wrapper"]}
    assert {"proj: Linear(2 → 6)", "× √6, + positional encoding", "norm: LayerNorm (the book's)",
            "linear: Linear(6 → 2)"} <= wrapper
    # one proj, one positional encoding and one norm serve both sides: the target side says "the same"
    assert {"proj (the same layer)", "× √6, + positional encoding (the same)", "norm (the same LayerNorm)"} <= wrapper
    assert torch_parts[1] == ("nn.TransformerDecoder\n2 × layer: masked self-attention (2 heads),\n"
                              "cross-attention to the memory (2 heads),\nfeed-forward (6 → 10 → 6), norm-last\n"
                              "+ final LayerNorm")
    assert any("causal_blocked_mask (3, 3)" in t and "True = blocked" in t for t in wrapper)
    no_norm = dict(_boxes(architecture_diagram(TransformerModel(nn.Transformer(6, 2, 1, 1, 10, batch_first=True),
                                                                2, 2, 2, input_norm=False))))
    assert "norm: LayerNorm (the book's)" not in no_norm and "norm (the same LayerNorm)" not in no_norm
    transf = nn.Transformer(6, 2, 1, 1, 10, batch_first=True)
    transf.decoder.norm = None  # a decoder stack without its final norm: the box no longer claims one
    stacks = [t for t, c in _boxes(architecture_diagram(TransformerModel(transf, 2, 2, 2))) if c == COLORS["torch"]]
    assert stacks[0].endswith("+ final LayerNorm") and "final LayerNorm" not in stacks[1]


def test_decoder_only_reads_vocabulary_and_ties():
    model = DecoderOnlyTransformer(20, d_model=16, n_heads=2, ff_units=32, n_layers=3)
    fig = architecture_diagram(model, highlight="head")
    colors = dict(_boxes(fig))
    assert colors["embed: Embedding(V = 20 → d_model = 16)"] == COLORS["decoder"]
    assert colors["head: Linear(16 → V = 20), tied to embed"] == HIGHLIGHT
    assert "next-token logits (N, L, V = 20)" in colors
    assert any(t.get_text() == "the same matrix" for t in fig.axes[0].texts)
    untied = architecture_diagram(DecoderOnlyTransformer(20, d_model=16, n_heads=2, n_layers=1, tie_weights=False))
    assert "head: Linear(16 → V = 20)" in dict(_boxes(untied))
    assert not any(t.get_text() == "the same matrix" for t in untied.axes[0].texts)


def test_vit_reads_patches_and_reads_the_head_from_cls():
    model = ViT(EncoderTransf(EncoderLayer(4, 16, 20, dropout=0.0), n_layers=1), img_size=12, in_channels=1,
                patch_size=4, n_outputs=3)
    fig = architecture_diagram(model, highlight=("cls",))
    texts = [t for t, _ in _boxes(fig)]
    assert texts[0] == "images (N, 1, 12, 12)" and texts[1] == "patch embedding: Conv2d 4×4, stride 4\n(N, 9, 16)"
    assert texts[2] == "prepend the CLS token\n(N, 10, 16)" and texts[-2:] == ["mlp: Linear(16 → 3)", "logits (N, 3)"]
    assert [t for t, c in _boxes(fig) if c == HIGHLIGHT] == [texts[2], "the CLS token's state (N, 16)"]
    assert len(_arrows(fig)) == len(texts) - 1


def test_bad_input_is_refused():
    with pytest.raises(TypeError, match="architecture_diagram draws the course's models"):
        architecture_diagram(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="highlight must name parts"):
        architecture_diagram(EncoderLayer(2, 8, 16), highlight="attention")
