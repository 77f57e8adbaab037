"""The sampling explorer of chapter 09: the sliders redraw the kept tokens and the samples."""
import matplotlib.pyplot as plt
from matplotlib.colors import to_rgba
import pytest
import torch

from stepbystep.data import completion_vocab, date_pairs
from stepbystep.models import DecoderOnlyTransformer
from stepbystep.widgets import FigureBox, sampling_explorer, sampling_explorer_state


@pytest.fixture(scope="module")
def setup():
    vocab = completion_vocab(date_pairs(300, seed=0))
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(len(vocab), d_model=16, n_heads=2, ff_units=32, dropout=0.0, max_len=48,
                                   tie_weights=False)
    return model, vocab


def _coloured(widget):
    orange = to_rgba("tab:orange")
    return sum(bar.get_facecolor() == orange for bar in widget.figure.axes[0].patches)


def test_state_kept_tokens_follow_the_settings(setup):
    model, vocab = setup
    everything = sampling_explorer_state(model, vocab, "March", temperature=1.0)
    assert everything["kept"].all() and everything["probs"].shape == (len(vocab),)
    assert int(sampling_explorer_state(model, vocab, "March", top_k=3)["kept"].sum()) == 3
    assert int(sampling_explorer_state(model, vocab, "March", temperature=0)["kept"].sum()) == 1
    nucleus = sampling_explorer_state(model, vocab, "March", top_p=0.5)
    assert nucleus["probs"][nucleus["kept"]].sum() >= 0.5
    assert nucleus["probs"][nucleus["kept"]].sum() - nucleus["probs"][nucleus["kept"]].min() < 0.5


def test_state_samples_repeat_with_the_seed_and_start_with_the_prompt(setup):
    model, vocab = setup
    first = sampling_explorer_state(model, vocab, "March", temperature=1.5, n_samples=4, seed=3)["samples"]
    again = sampling_explorer_state(model, vocab, "March", temperature=1.5, n_samples=4, seed=3)["samples"]
    assert first == again and len(first) == 4
    assert all(text.startswith("March") for text, _, _, _ in first)
    assert all(isinstance(date_shaped, bool) and isinstance(right, bool) for _, _, date_shaped, right in first)
    greedy = sampling_explorer_state(model, vocab, "March", temperature=0, n_samples=3)["samples"]
    assert greedy[0] == greedy[1] == greedy[2]


def test_sliders_redraw_in_place(setup):
    model, vocab = setup
    widget = sampling_explorer(model, vocab, n_samples=3)
    assert isinstance(widget, FigureBox)
    figure = widget.figure
    assert _coloured(widget) == len(widget.figure.axes[0].patches)  # all kept at first (top 20 shown)
    widget.top_k.value = 4
    assert widget.figure is figure and len(figure.axes) == 1
    assert _coloured(widget) == 4 and "top-k 4" in figure.axes[0].get_title()
    widget.temperature.value = 0.0
    assert _coloured(widget) == 1
    assert widget.samples.value.count("<br>") == 2  # three samples listed
    widget.top_k.value = 0
    widget.temperature.value = 1.0
    widget.top_p.value = 0.3
    assert "top-p 0.3" in figure.axes[0].get_title()
    assert plt.get_fignums() == []


def test_state_at_temperature_zero_draws_the_greedy_choice(setup):
    model, vocab = setup
    state = sampling_explorer_state(model, vocab, "March", temperature=0)
    assert state["probs"].max() == 1.0 and int((state["probs"] > 0).sum()) == 1


def test_prompt_box_redraws(setup):
    model, vocab = setup
    widget = sampling_explorer(model, vocab, n_samples=2)
    widget.prompt.value = "Tue"
    assert "'Tue'" in widget.figure.axes[0].get_title()
    assert "Tue" in widget.samples.value
