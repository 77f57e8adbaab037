"""Chapter 07's figures: a padded batch with its masks, the learning-rate schedule, reversal attention."""
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from stepbystep.data import Seq2SeqDataset, Vocab, pad_collate
from stepbystep.models import TokenTransformer
from stepbystep.plots import learning_rate_schedule, padded_batch, reversal_attention
from stepbystep.plots.tokens import beam_tree


def small_batch():
    vocab = Vocab("abc")
    dataset = Seq2SeqDataset([("abc", "cba"), ("a", "a"), ("ab", "ba")], vocab, vocab)
    (source, target_in), target_out = pad_collate([dataset[i] for i in range(3)])
    model = TokenTransformer(len(vocab), len(vocab), d_model=8, n_heads=2, ff_units=8, n_layers=1, max_len=8)
    return vocab, source, target_in, target_out, model.source_mask(source), model.target_mask(target_in)


def test_padded_batch_shows_tokens_and_masks():
    vocab, source, target_in, target_out, source_mask, target_mask = small_batch()
    fig = padded_batch(source, target_in, target_out, vocab, source_mask, target_mask, index=1)
    assert isinstance(fig, Figure) and len(fig.axes) == 4
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0].startswith("source (3, 3)") and titles[1].startswith("target_in (3, 4)")
    assert titles[3] == "target mask of sequence 1"
    assert sum(text.get_text() == "<pad>" for text in fig.axes[0].texts) == 3
    drawn = fig.axes[3].collections[0].get_array()
    assert np.array_equal(np.asarray(drawn), target_mask[1].float().numpy())
    assert [label.get_text() for label in fig.axes[3].get_xticklabels()] == ["<sos>", "a", "<eos>", "<pad>"]
    assert fig.axes[0].get_xlabel() == "position" and fig.axes[3].get_ylabel() == "query (decoder input)"


def test_padded_batch_rejects_a_wrong_source_mask():
    vocab, source, target_in, target_out, source_mask, target_mask = small_batch()
    with pytest.raises(ValueError, match="source_mask"):
        padded_batch(source, target_in, target_out, vocab, source_mask[:, :, :2], target_mask)


def test_learning_rate_schedule():
    rates = [0.001 * min(1.0, (step + 1) / 10) for step in range(30)]
    fig = learning_rate_schedule(rates, steps_per_epoch=10, warmup_steps=10)
    ax = fig.axes[0]
    assert np.allclose(ax.lines[0].get_ydata(), rates)
    assert len(ax.lines) == 1 + 2  # the curve and two epoch boundaries
    assert ax.get_xlabel() == "optimizer step" and ax.get_ylabel() == "learning rate"
    assert "warm-up (10 steps)" in [text.get_text() for text in ax.get_legend().get_texts()]
    with pytest.raises(ValueError, match="non-empty"):
        learning_rate_schedule([])


def test_reversal_attention_draws_each_head_and_the_anti_diagonal():
    alphas = torch.softmax(torch.randn(2, 5, 4), dim=-1)  # (heads, L_t, L_s)
    fig = reversal_attention(alphas, "abcd", "dcba⏎", title="reversal")
    maps = [ax for ax in fig.axes if ax.images]
    assert len(maps) == 2 and len(fig.axes) == 3  # two heads and a colour bar
    assert [ax.get_title() for ax in maps] == ["head 0", "head 1"]
    line = maps[0].lines[0]
    assert list(line.get_xdata()) == [3, 2, 1, 0] and list(line.get_ydata()) == [0, 1, 2, 3]
    assert [label.get_text() for label in maps[0].get_xticklabels()] == list("abcd")
    assert fig._suptitle.get_text() == "reversal"
    with pytest.raises(ValueError, match="labels"):
        reversal_attention(alphas, "abc", "dcba⏎")


TOY = {"<sos>": {"a": 0.5, "b": 0.4, "c": 0.1}, "a": {"a": 0.4, "b": 0.35, "c": 0.25},
       "b": {"a": 0.9, "b": 0.05, "c": 0.05}, "c": {"a": 0.34, "b": 0.33, "c": 0.33}}


def test_beam_tree_draws_every_candidate_and_keeps_the_best():
    fig = beam_tree(TOY, beam_width=2, n_steps=3)
    assert isinstance(fig, Figure)
    texts = [text for text in fig.axes[0].texts]
    assert len(texts) == 1 + 3 + 2 * 3 * 2  # <sos>; its V children; then B·V candidates at steps 2 and 3
    kept = [text.get_text() for text in texts if text.get_fontweight() == "bold"]
    assert len(kept) == 3 * 2
    assert f"ba  {np.log(0.4) + np.log(0.9):.2f}" in kept  # the sure second letter wins step 2
    assert not any(text.startswith("ab ") or text.startswith("ac ") for text in kept)
    assert [tick.get_text() for tick in fig.axes[0].get_xticklabels()] == ["start", "step 1", "step 2", "step 3"]


def test_beam_tree_rejects_a_table_without_start():
    with pytest.raises(ValueError, match="<sos>"):
        beam_tree({"a": {"a": 1.0}})
