"""Chapter 12's figures draw what they are given and refuse what does not fit."""
import numpy as np
import pytest
import torch

from stepbystep import plots
from stepbystep.models import DecoderConfig
from stepbystep.widgets import kv_cache_state


def test_block_study_draws_each_seed_and_the_median():
    results = {"a": torch.tensor([[1.0, 0.5], [2.0, 0.6], [3.0, 0.7]]), "b": torch.tensor([[0.5, 0.9]] * 3)}
    fig = plots.block_study(results)
    loss_axis, accuracy_axis = fig.axes
    assert [bar.get_height() for bar in loss_axis.patches] == [2.0, 0.5]  # the medians
    assert [bar.get_height() for bar in accuracy_axis.patches] == pytest.approx([0.6, 0.9])
    assert sorted(loss_axis.collections[0].get_offsets()[:, 1].tolist()) == [1.0, 2.0, 3.0]  # a dot per seed
    assert [t.get_text() for t in accuracy_axis.get_xticklabels()] == ["a", "b"]  # under the lower panel
    assert loss_axis.get_ylabel() == "validation loss" and accuracy_axis.get_ylabel() == "token accuracy"
    with pytest.raises(ValueError, match="at least one value per seed"):
        plots.block_study({"a": []})


def test_prefill_decode_plots_times_and_times_per_token():
    fig = plots.prefill_decode([10, 20], [5.0, 8.0], [1.0, 1.5])
    left, right = fig.axes
    assert left.lines[0].get_ydata().tolist() == [5.0, 8.0] and left.lines[1].get_ydata().tolist() == [1.0, 1.5]
    assert right.lines[0].get_ydata().tolist() == [0.5, 0.4]  # per prompt token
    assert right.get_ylabel() == "time per token (ms)" and left.get_xlabel() == "prompt length (tokens)"
    with pytest.raises(ValueError, match="of one length"):
        plots.prefill_decode([10, 20], [5.0], [1.0, 1.5])


def test_kv_cache_memory_draws_the_curves_and_marks_the_published_models():
    state = kv_cache_state(batch_size=4)
    fig = plots.kv_cache_memory(state)
    ax = fig.axes[0]
    one, batch = ax.lines[0], ax.lines[1]
    assert one.get_ydata()[-1] == pytest.approx(1.0) and batch.get_ydata()[-1] == pytest.approx(4.0)  # GiB
    assert one.get_xdata()[-1] == pytest.approx(8.0)  # thousands of tokens
    names = [text.get_text() for text in ax.texts]
    assert "Llama 3 8B" in names and "GPT-2 small" in names
    assert ax.get_xlim()[1] > 8.0  # room for the rightmost label
    assert ax.get_ylabel() == "KV cache (GiB)"
    single = plots.kv_cache_memory(kv_cache_state(), fig=fig)
    assert single is fig and len(fig.axes) == 1 and len([l for l in fig.axes[0].lines if l.get_label().startswith("your")]) == 1
    with pytest.raises(TypeError, match="state must be a dict"):
        plots.kv_cache_memory([1])


def test_architecture_diagram_names_todays_block():
    model = DecoderConfig.llama(40, d_model=32, n_heads=4, n_layers=2, max_len=16, n_kv_heads=2).build()
    texts = "\n".join(text.get_text() for text in plots.architecture_diagram(model).axes[0].texts)
    assert "2 KV heads: grouped-query" in texts and "SwiGLU feed-forward (32 → 85 → 32)" not in texts
    assert f"SwiGLU feed-forward (32 → {model.layers[0].ffn.hidden} → 32)" in texts
    assert "final RMSNorm" in texts and "no biases" in texts and "rotate_half pairs" in texts
    old = DecoderConfig(40, d_model=32, n_heads=4, n_layers=2, max_len=16).build()
    old_texts = "\n".join(text.get_text() for text in plots.architecture_diagram(old).axes[0].texts)
    assert "KV head" not in old_texts and "final LayerNorm" in old_texts and "no biases" not in old_texts
    assert "feed-forward (32 → 128 → 32)" in old_texts


def test_the_seed_study_figure_names_its_seeds_and_draws_the_kv_reference():
    from stepbystep.experiments.todays_block import BLOCK_GROUPS, KV_REFERENCE, with_kv_reference
    from stepbystep.experiments.todays_block_seeds import load_block_seeds
    _, stored = load_block_seeds()
    shown, groups = with_kv_reference(stored)
    assert list(shown)[-4:] == [KV_REFERENCE, "2 KV heads", "1 KV head", "1 KV head, wider FFN"]
    assert torch.equal(shown[KV_REFERENCE], stored["+ RoPE"]) and len(shown) == len(stored) + 1
    assert groups[list(BLOCK_GROUPS)[-1]][0] == KV_REFERENCE
    fig = plots.block_study(shown, groups=groups, seeds="the ten stored seeds (0 to 9)")
    assert fig._suptitle.get_text().startswith("the ten stored seeds (0 to 9): each seed (dots)")
    loss_axis = fig.axes[0]
    labels = [t.get_text() for t in fig.axes[1].get_xticklabels()]
    assert labels[-4] == KV_REFERENCE
    bars = loss_axis.patches
    median = float(stored["+ RoPE"][:, 0].median()) if len(stored["+ RoPE"]) % 2 else \
        float(stored["+ RoPE"][:, 0].sort().values[4:6].mean())
    assert bars[-4].get_height() == pytest.approx(median)  # the reference: + RoPE's median, again
    assert bars[-4].get_facecolor() == bars[-3].get_facecolor() != bars[4].get_facecolor()  # in the KV group's colour
    assert bars[4].get_height() == pytest.approx(median)  # + RoPE itself, in the steps' group
    assert not plots.block_study(shown)._suptitle.get_text().startswith("the ten")
