"""Chapter 09's figures draw what they are given and refuse what does not fit."""
import matplotlib.pyplot as plt
import pytest
import torch

from stepbystep import plots
from stepbystep.data import CompletionDataset, completion_vocab, date_pairs


@pytest.fixture(scope="module")
def vocab():
    return completion_vocab(date_pairs(300, seed=0))


def test_completion_stream_greys_the_ignored_targets(vocab):
    inputs, targets = CompletionDataset([("Tue 10 Jul 2007", "2007-07-10")], vocab)[0]
    fig = plots.completion_stream(inputs, targets, vocab)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts.count("—") == len("Tue 10 Jul 2007") + 1  # the text and "=": ignored targets
    assert "<eos>" in texts and "<sos>" in texts
    with pytest.raises(ValueError, match="one shape"):
        plots.completion_stream(inputs, targets[:-1], vocab)


def test_stream_attention(vocab):
    weights = torch.softmax(torch.randn(2, 5, 5), dim=-1)
    fig = plots.stream_attention(weights, list("abcde"), first_row=2)
    assert len(fig.axes[0].get_yticklabels()) == 3
    with pytest.raises(ValueError, match="expected weights"):
        plots.stream_attention(weights, list("abc"))


def test_distributions_and_filters(vocab):
    logits = torch.randn(len(vocab))
    probs = torch.softmax(logits, dim=-1)
    kept = probs >= probs.sort(descending=True).values[2]
    fig = plots.token_distribution(probs, vocab, kept, title="x", top=10)
    bars = fig.axes[0].patches
    assert len(bars) == 10
    assert sum(bar.get_facecolor() != bars[-1].get_facecolor() for bar in bars) == 3  # three kept, in colour
    same = plots.token_distribution(probs, vocab, kept, fig=fig)
    assert same is fig and len(fig.axes) == 1
    fig = plots.temperature_effect(logits, vocab, [0, 0.5, 1, 2])
    assert len(fig.axes) == 4 and fig.axes[0].patches[0].get_height() == 1.0
    fig = plots.filtering_effect(probs, vocab, {"top-k 3": kept, "all": torch.ones_like(kept)})
    assert "3 kept" in fig.axes[0].get_title()


def test_smoothed_targets_and_comparisons():
    fig = plots.smoothed_targets(64, 5, 0.1)
    assert "0.902" in fig.axes[1].get_title()
    with pytest.raises(ValueError, match="target"):
        plots.smoothed_targets(64, 64, 0.1)
    fig = plots.run_comparison({"a": {"x": 1, "y": 2}, "b": {"x": 2, "y": 1}}, {"x": "X", "y": "Y"})
    assert len(fig.axes) == 2


def test_token_times():
    fig = plots.token_times([0.001] * 5, [0.001 * i for i in range(1, 6)], prompt_length=3)
    lines = fig.axes[0].get_lines()
    assert len(lines) == 2 and list(lines[0].get_xdata()) == [3, 4, 5, 6, 7]
    assert [t.get_text() for t in fig.axes[0].texts] == ["prefill"]
    plt.close(fig)


@pytest.mark.parametrize("target", [0, 16, 63])
def test_smoothed_targets_draws_the_target_and_the_small_bars(vocab, target):
    fig = plots.smoothed_targets(64, target, 0.1, n_shown=9)
    plain, smooth = fig.axes
    heights = [bar.get_height() for bar in smooth.patches]
    assert len(heights) == 9
    assert max(heights) == pytest.approx(0.9 + 0.1 / 64)  # the target is in view
    assert sum(h == pytest.approx(0.1 / 64) for h in heights) == 8  # ε/V on every other token shown
    assert smooth.get_yscale() == "log" and smooth.get_ylim()[0] < 0.1 / 64
    assert [t.get_text() for t in plain.texts].count("0") == 8  # the one-hot's zeros are written
    plain_heights = [bar.get_height() for bar in plain.patches]
    assert sum(h == 1.0 for h in plain_heights) == 1


def test_smoothed_targets_labels_ticks_with_symbols(vocab):
    fig = plots.smoothed_targets(len(vocab), vocab.stoi["7"], 0.1, vocab=vocab)
    labels = [t.get_text() for t in fig.axes[1].get_xticklabels()]
    assert "7" in labels


def test_temperature_effect_shows_the_tail(vocab):
    logits = torch.randn(len(vocab)) * 3
    fig = plots.temperature_effect(logits, vocab, [1.0, 2.0], top=12)
    for ax, temperature in zip(fig.axes, [1.0, 2.0]):
        heights = [bar.get_height() for bar in ax.patches]
        assert len(heights) == 13 and sum(heights) == pytest.approx(1.0, abs=1e-5)
        probs = torch.softmax(logits / temperature, dim=-1)
        assert heights[-1] == pytest.approx(1 - probs.sort(descending=True).values[:12].sum().item(), abs=1e-5)
        assert "others" in ax.get_xticklabels()[-1].get_text()


def test_stream_attention_names_the_layer_and_heads(vocab):
    weights = torch.softmax(torch.randn(4, 5, 5), dim=-1)
    fig = plots.stream_attention(weights, list("abcde"), first_row=2, layer_name="layer 2 of 2")
    assert fig.axes[0].get_title() == "layer 2 of 2, mean of 4 heads"
    assert fig.axes[1].get_ylabel() == "attention weight"


def test_completion_stream_legend_names_the_prompt_inputs(vocab):
    inputs, targets = CompletionDataset([("Tue 10 Jul 2007", "2007-07-10")], vocab)[0]
    fig = plots.completion_stream(inputs, targets, vocab)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert len(labels) == 3 and any("ignored" in label for label in labels)


def test_stream_attention_masks_the_future_and_bars_name_their_colours(vocab):
    weights = torch.softmax(torch.randn(2, 5, 5), dim=-1)
    fig = plots.stream_attention(weights, list("abcde"), first_row=2)
    shown = fig.axes[0].get_images()[0].get_array()
    assert shown.mask.tolist() == [[False] * 3 + [True] * 2, [False] * 4 + [True], [False] * 5]  # the staircase
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["masked: a later token"]
    probs = torch.softmax(torch.randn(len(vocab)), dim=-1)
    kept = probs >= probs.sort(descending=True).values[2]
    fig = plots.filtering_effect(probs, vocab, {"top-k 3": kept})
    assert fig.axes[0].get_xlabel() == "next token"
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["kept", "filtered out"]
    plain, smooth = plots.smoothed_targets(64, 5, 0.1).axes
    assert plain.get_xlim() == smooth.get_xlim() == (-0.8, 8.8)


def test_stream_attention_turns_long_key_labels_upright(vocab):
    weights = torch.softmax(torch.randn(2, 3, 3), dim=-1)
    fig = plots.stream_attention(weights, ["<sos>", "T", "u"])
    ticks = {t.get_text(): t.get_rotation() for t in fig.axes[0].get_xticklabels()}
    assert ticks == {"<sos>": 90.0, "T": 0.0, "u": 0.0}
