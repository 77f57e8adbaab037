"""Chapter 13: the previous-token heads are found on sequences of their own, the controls on the
other layer-0 heads are two-sided, and layer 1's lack of a control head is stated and checked."""
import torch

from stepbystep.experiments.induction import VOCAB_SIZE, first_half_loss, group_claims, repeat_loss
from stepbystep.experiments.induction_seeds import (
    TEST_LENGTH,
    dependence_claims,
    layer1_claims,
    load_induction_seeds,
    selection_sequences,
    test_sequences as chapter_sequences,
)
from stepbystep.exercises import ch13
from stepbystep.interpret import ablate_heads, half_losses, per_position_loss


def test_selection_sequences_repeat_and_share_no_sequence_with_the_test_sets():
    selection = selection_sequences()
    assert selection.shape == (256, 2 * TEST_LENGTH)
    assert torch.equal(selection[:, :TEST_LENGTH], selection[:, TEST_LENGTH:])
    assert int(selection.max()) < VOCAB_SIZE
    test_ids, prompts, unrepeated = chapter_sequences()
    rows = {tuple(row.tolist()) for row in test_ids}
    assert not any(tuple(row.tolist()) in rows for row in selection)
    assert torch.equal(selection_sequences(), selection)  # the same on every call


def test_the_other_heads_control_fails_on_a_large_move_either_way():
    baseline = torch.tensor([0.3, 0.4, 0.5])
    groups = {"previous-token heads off": baseline + 1.5, "induction heads off": torch.full((3,), 3.4)}
    name = "with the other layer-0 heads switched off by zeroing, it rises by less than 0.1 and falls by less than " \
           "0.25 in every seed that has any (two seeds in three at least)"
    for change, holds in ((0.0, True), (-0.2, True), (0.05, True), (0.15, False), (-0.3, False)):
        claims = group_claims(baseline, dict(groups, **{"other layer-0 heads off": baseline + change}), 3.47)
        assert {c.claim: bool(c.holds) for c in claims}[name] is holds, change


def test_the_dependence_control_is_two_sided():
    best = torch.tensor([0.9, 0.95, 0.92])  # three seeds, each with a control
    without_previous = torch.tensor([0.2, 0.3, 0.25])
    assert all(c.holds for c in dependence_claims(best, without_previous, best - 0.05))
    assert not dependence_claims(best, without_previous, best - 0.15)[1].holds  # falls
    assert not dependence_claims(best, without_previous, best + 0.15)[1].holds  # rises: not left alone either
    assert not dependence_claims(best, torch.tensor([0.2, 0.3, 0.58]), best - 0.05)[0].holds  # one keeps over 60%
    assert not dependence_claims(best, torch.tensor([0.2, 0.5, 0.52]), best - 0.05)[0].holds  # median over half
    assert not dependence_claims(best, torch.tensor([0.2, 0.45, 0.5]), best - 0.05, median_below=0.4)[0].holds


def test_layer1_claims_count_the_seeds_whose_every_layer_1_head_is_an_induction_head():
    every = torch.ones(4, 4, dtype=torch.bool)
    assert layer1_claims(every)[0].holds
    every[:2, 0] = False  # two seeds of four keep a head outside the circuit
    assert not layer1_claims(every)[0].holds
    stored = load_induction_seeds()["runs"]
    inductions = torch.tensor([[h in run["induction_heads"] for h in range(4)] for run in stored])
    assert layer1_claims(inductions)[0].holds


def test_first_half_loss_is_the_first_half_of_the_per_position_loss_with_heads_off():
    model, ids = ch13._trained_model()
    heads = [(1, 0), (1, 2)]
    with ablate_heads(model, heads), torch.no_grad():
        losses = per_position_loss(model(ids), ids)
    first, repeat = half_losses(losses, ids.shape[1] // 2)
    assert first_half_loss(model, ids, heads) == first and repeat_loss(model, ids, heads) == repeat
    assert first_half_loss(model, ids) != first  # the heads matter to it


def test_head_score_dots_draws_readable_digits_spread_across_each_seed():
    from stepbystep import plots
    scores = torch.full((2, 4), 0.9)  # four heads at one score: only their x tells them apart
    fig = plots.head_score_dots({"s": scores}, marked={"s": torch.zeros(2, 4, dtype=torch.bool)})
    texts = fig.axes[0].texts
    assert min(t.get_fontsize() for t in texts) >= 9
    xs = sorted(t.get_position()[0] for t in texts[:4])  # seed 0's four heads
    assert min(b - a for a, b in zip(xs, xs[1:])) >= 0.19
    assert {t.get_color() for t in texts} == {"grey"}  # nothing marked: nothing red


def test_k_composition_names_the_random_level_in_its_legend():
    from stepbystep import plots
    scores = torch.full((2, 3, 4, 4), 0.1)
    in_previous = torch.tensor([[True, False, False, False]] * 2)
    fig = plots.k_composition(scores, in_previous, torch.eye(5), 0.125, title="QK")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["a previous-token head", "another layer-0 head", "two random matrices"]
    assert "median of the previous-token heads" in fig.axes[0].get_title()
