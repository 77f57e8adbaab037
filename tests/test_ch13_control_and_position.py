"""Chapter 13: the previous-token heads always leave a control, the first half's band, the keys' preference
for the previous-token heads over the other layer-0 heads, and the fixed-length head that reads a distance."""
import math

import pytest
import torch

from stepbystep.experiments import induction
from stepbystep.experiments.induction import (
    VOCAB_SIZE,
    build_model,
    enough_controls,
    key_weight,
    phase_claims,
    position_claims,
    previous_token_heads,
)
from stepbystep.experiments.induction_seeds import k_composition_claims, test_sequences as chapter_sequences
from stepbystep.interpret import attention_weights

HALF = math.log(VOCAB_SIZE) / 2


def _fake_model(monkeypatch, scores, losses):
    """A model whose layer-0 scores are ``scores`` and whose repeat loss with a set of heads off is
    ``losses[that set]`` (the sets as sorted strings of head indices; intact otherwise)."""
    previous = torch.zeros(2, len(scores))
    previous[0] = torch.tensor(scores)
    monkeypatch.setattr(induction, "head_scores", lambda model, ids: (previous, previous))

    def repeat_loss(model, ids, heads=(), how="zero"):
        return torch.tensor(losses.get("".join(sorted(str(head) for _, head in heads)), 0.6))

    monkeypatch.setattr(induction, "repeat_loss", repeat_loss)
    return build_model(2, seed=0)


def test_a_set_just_short_of_the_line_counts_as_breaking_and_leaves_a_control(monkeypatch):
    # like seed 16 at two threads: the best three leave the loss a few hundredths short of ln V / 2
    model = _fake_model(monkeypatch, [0.74, 0.41, 0.36, 0.75], {"3": 0.9, "03": 1.2, "013": HALF - 0.04, "0123": 2.9})
    assert previous_token_heads(model, None) == [(0, 3), (0, 0), (0, 1)]  # head 2 stays on, the control
    assert previous_token_heads(model, None, margin=0) == [(0, 3), (0, 0), (0, 1), (0, 2)]  # no margin: none left


def test_a_set_far_short_of_the_line_takes_the_next_head_too(monkeypatch):
    # like a seed whose four layer-0 heads all share the job: no control, and none is made up
    model = _fake_model(monkeypatch, [0.74, 0.41, 0.36, 0.75], {"3": 0.6, "03": 0.7, "013": 0.9, "0123": 2.6})
    assert previous_token_heads(model, None) == [(0, 3), (0, 0), (0, 1), (0, 2)]
    model = _fake_model(monkeypatch, [0.74, 0.41, 0.36, 0.75], {"3": 0.9, "03": 2.2})
    assert previous_token_heads(model, None) == [(0, 3), (0, 0)]  # stops where the copying breaks


def test_the_control_must_exist_in_two_seeds_in_three():
    assert enough_controls(torch.tensor([True, True, False]))
    assert not enough_controls(torch.tensor([True, False, False]))
    assert not enough_controls(torch.tensor([True, True, False, False]))  # half is not enough
    assert not enough_controls(torch.tensor([True]))  # one seed is never enough
    assert enough_controls(torch.ones(24, dtype=torch.bool))


def test_the_first_half_must_sit_above_ln_v_and_within_0_6_of_it():
    log_v = math.log(VOCAB_SIZE)
    numbers = [{"late_first": log_v + 0.45, "early_repeat": 3.2, "late_repeat": 0.7, "sharp": 1.1}] * 3
    assert phase_claims(numbers, [160] * 3, 300)[0].holds
    for late_first in (log_v + 0.65, log_v - 0.05):  # a model 20% worse, or one below the floor
        changed = [dict(numbers[0], late_first=late_first)] + numbers[1:]
        assert not phase_claims(changed, [160] * 3, 300)[0].holds, late_first


def _composition(keys_others=0.17, queries_others=0.10, values_others=0.11):
    composition = torch.full((3, 3, 4, 4), 0.0)
    composition[:, 0, 0], composition[:, 1, 0], composition[:, 2, 0] = 0.09, 0.24, 0.08  # head 0: previous-token
    composition[:, 0, 1:], composition[:, 1, 1:], composition[:, 2, 1:] = queries_others, keys_others, values_others
    return composition


def test_the_keys_prefer_the_previous_token_heads_and_the_queries_and_values_turn_from_all_of_layer_0():
    in_previous = torch.tensor([[True, False, False, False]] * 3)
    diagonal = torch.full((3,), 0.9)

    def held(**others):
        return [bool(c.holds) for c in k_composition_claims(_composition(**others), in_previous, diagonal, 64)]
    assert all(held())
    assert held(keys_others=0.3) == [True, True, False, True, True, True, True]  # the others read more by the keys
    assert held(queries_others=0.13) == [True, True, True, True, False, True, True]  # others' queries above random
    assert held(values_others=0.07) == [True, True, True, True, True, False, True]  # values prefer the previous


def test_the_keys_preference_needs_other_heads_in_two_seeds_in_three():
    in_previous = torch.tensor([[True, False, False, False]] + [[True] * 4] * 2)  # one seed of three
    claims = k_composition_claims(_composition(), in_previous, torch.full((3,), 0.9), 64)
    assert not claims[2].holds


def test_key_weight_is_the_diagonal_offset_back_over_the_second_half():
    model = build_model(1, seed=0)
    ids = chapter_sequences()[2][:8]  # (8, 24): sequences that never repeat
    weights = attention_weights(model, ids)[0][:, 2]  # (8, 24, 24)
    by_hand = torch.stack([weights[:, q, q - 11] for q in range(12, 24)]).mean()
    assert key_weight(model, ids, 0, 2, 11).item() == pytest.approx(by_hand.item())
    with pytest.raises(ValueError):
        key_weight(model, ids, 0, 2, 13)  # further back than half the sequence


def test_position_claims_hold_and_fail():
    assert all(c.holds for c in position_claims(torch.tensor([0.74, 0.84, 0.65]), torch.tensor([0.05, 0.04, 0.06])))
    assert [c.holds for c in position_claims(torch.tensor([0.74, 0.45, 0.65]), torch.full((3,), 0.05))] == [False, True]
    assert [c.holds for c in position_claims(torch.full((3,), 0.7), torch.tensor([0.05, 0.3, 0.04]))] == [True, False]
