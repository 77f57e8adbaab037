"""The head explorer of chapter 13: the state behind it, and the widget redrawing one figure in place."""
import pytest
import torch

from stepbystep.data import repeated_sequences
from stepbystep.interpret import (
    ablate_heads,
    attention_weights,
    induction_score,
    per_position_loss,
    previous_token_score,
)
from stepbystep.models import AttentionOnlyTransformer
from stepbystep.widgets import head_explorer, head_explorer_state, parse_tokens


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    model = AttentionOnlyTransformer(16, d_model=16, n_heads=2, n_layers=2, max_len=20, position_scheme="rope")
    return model.eval(), repeated_sequences(4, 6, 16, seed=0)


def test_state_matches_the_measures(setup):
    model, ids = setup
    state = head_explorer_state(model, ids[1:2], layer=1, head=1)
    weights = attention_weights(model, ids[1:2])[1][:, 1:2]  # (1, 1, 12, 12)
    assert torch.equal(state["weights"], weights[0, 0]) and state["weights"].shape == (12, 12)
    assert state["previous"] == pytest.approx(previous_token_score(weights).item())
    assert state["induction"] == pytest.approx(induction_score(weights, ids[1:2]).item())
    with torch.no_grad():
        assert torch.allclose(state["loss"], per_position_loss(model(ids[1:2]), ids[1:2]))
        with ablate_heads(model, [(1, 1)]):
            assert torch.allclose(state["ablated_loss"], per_position_loss(model(ids[1:2]), ids[1:2]))
    assert state["loss"].shape == (11,) and not torch.equal(state["loss"], state["ablated_loss"])


def test_state_without_a_repeat_has_no_induction_score(setup):
    model, _ = setup
    state = head_explorer_state(model, torch.tensor([[1, 2, 3, 4]]), layer=0, head=0)
    assert state["induction"] is None and state["loss"].shape == (3,)


def test_state_errors(setup):
    model, ids = setup
    with pytest.raises(ValueError, match="layer"):
        head_explorer_state(model, ids[:1], layer=2, head=0)
    with pytest.raises(ValueError, match="head"):
        head_explorer_state(model, ids[:1], layer=0, head=2)
    with pytest.raises(ValueError, match="ids"):
        head_explorer_state(model, ids[:2], layer=0, head=0)


def test_parse_tokens():
    assert torch.equal(parse_tokens("3, 14 15  3", 16, 20), torch.tensor([[3, 14, 15, 3]]))
    for text, words in (("3", "at least two"), ("3 x", "whole numbers"), ("3 16", "below 16"),
                        (" ".join(["1"] * 21), "at most 20")):
        with pytest.raises(ValueError, match=words):
            parse_tokens(text, 16, 20)


def test_widget_redraws_on_every_control(setup):
    model, ids = setup
    box = head_explorer(model, ids, layer=1, head=0)
    figure = box.figure
    assert "layer 1, head 0" in figure.axes[0].get_title()
    box.head.value = 1
    assert "layer 1, head 1" in figure.axes[0].get_title()

    def curves():  # the loss curves, drawn with dots; the other lines mark the repeat and ln V
        return [line for ax in box.figure.axes for line in ax.get_lines() if line.get_marker() == "o"]

    assert len(curves()) == 1  # the losses with every head on
    box.ablate.value = True
    assert len(curves()) == 2
    box.text.value = "1 2 3 1 2 3"
    assert box.figure.axes[0].images[0].get_array().shape == (6, 6)
    box.text.value = "1 2 99"
    assert "below 16" in box.message.value
    assert box.figure.axes[0].images[0].get_array().shape == (12, 12)  # back on the slider's sequence
