"""Chapter 13's experiment: training on repeated sequences, the drop step and the claims."""
import math

import pytest
import torch

from stepbystep.experiments.induction import (
    VOCAB_SIZE,
    ablation_claims,
    circuit_claims,
    composition_claims,
    copying_claims,
    drop_step,
    first_half_claims,
    first_half_losses,
    fixed_length_claims,
    group_claims,
    one_layer_claims,
    phase_change_claims,
    train_on_repeats,
)
from stepbystep.models import AttentionOnlyTransformer

LOG_V = math.log(VOCAB_SIZE)


def test_train_on_repeats_records_and_reproduces():
    probe = torch.randint(VOCAB_SIZE, (4, 10), generator=torch.Generator().manual_seed(0))
    model, history = train_on_repeats(n_layers=1, seed=3, steps=12, batch_size=4, probe=probe, probe_every=5)
    assert isinstance(model, AttentionOnlyTransformer) and not model.training and len(model.layers) == 1
    assert history["first"].shape == history["repeat"].shape == (12,)
    assert history["probe_steps"].tolist() == [0, 5, 10, 12]
    assert history["previous"].shape == history["induction"].shape == (4, 1, 4)
    assert abs(history["first"][0].item() - LOG_V) < 1.0  # an untrained model is near a uniform guess
    again, repeated = train_on_repeats(n_layers=1, seed=3, steps=12, batch_size=4)
    assert torch.equal(repeated["repeat"], history["repeat"])
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), again.parameters()))
    _, other = train_on_repeats(n_layers=1, seed=4, steps=12, batch_size=4)
    assert not torch.equal(other["repeat"], history["repeat"])
    with pytest.raises(ValueError):
        train_on_repeats(steps=0)
    with pytest.raises(ValueError):
        train_on_repeats(lengths=(8, 4))
    with pytest.raises(ValueError):
        train_on_repeats(lengths=(4, 17))


def test_train_on_repeats_fixed_length():
    _, history = train_on_repeats(n_layers=1, seed=0, steps=3, batch_size=2, lengths=(5, 5))
    assert history["first"].shape == (3,)


def test_drop_step():
    repeat = torch.cat([torch.full((30,), 3.0), torch.full((30,), 0.5)])
    # the mean of steps 25..34 is (5·3 + 5·0.5) / 10 = 1.75, of steps 26..35 (4·3 + 6·0.5) / 10 = 1.5
    assert drop_step(repeat, 1.7, window=10) == 35
    assert drop_step(repeat, 1.8, window=10) == 34
    assert drop_step(torch.full((20,), 3.0), 1.7) is None


def _histories(drop=150, steps=300):
    repeat = torch.cat([torch.full((drop,), 3.2), torch.full((steps - drop,), 0.3)])
    return [{"first": torch.full((steps,), LOG_V + 0.3), "repeat": repeat}] * 3


def test_phase_change_claims_hold_and_fail():
    assert all(c.holds for c in phase_change_claims(_histories(), [155] * 3, 300))
    failed = [c for c in phase_change_claims(_histories(), [None, 155, 155], 300) if not c.holds]
    assert len(failed) == 2


def test_circuit_claims():
    previous, induction = torch.zeros(3, 2, 4), torch.zeros(3, 2, 4)
    previous[:, 0, 1], induction[:, 1, 2] = 0.8, 0.9
    assert all(c.holds for c in circuit_claims(previous, induction))
    induction[1, 1, 2] = 0.5
    assert [c.holds for c in circuit_claims(previous, induction)] == [True, False, True]


def test_ablation_and_one_layer_claims():
    baseline = torch.full((3,), 0.6)  # three seeds: the other heads' control counts on 3 at least
    single = torch.full((3, 2, 4), 0.6)
    single[:, 0, 0] = 3.0
    single[:, 1, :] = 0.9
    circuit = torch.zeros(3, 2, 4, dtype=torch.bool)
    circuit[:, 0, 0] = circuit[:, 1, :] = True
    groups = {"previous-token heads off": torch.full((3,), 3.0), "other layer-0 heads off": torch.full((3,), 0.62),
              "induction heads off": torch.full((3,), 3.6)}
    assert all(c.holds for c in ablation_claims(single, baseline, circuit, groups, LOG_V))
    single[1, 0, 3] = 0.8  # a head outside the circuit matters
    assert not ablation_claims(single, baseline, circuit, groups, LOG_V)[0].holds
    assert all(c.holds for c in one_layer_claims(torch.full((3,), 2.6), torch.full((3,), 0.6), torch.full((3, 4), 0.2)))
    assert not all(c.holds for c in one_layer_claims(torch.full((3,), 1.0), torch.full((3,), 0.6),
                                                     torch.full((3, 4), 0.2)))


def test_fixed_length_claims():
    at_trained = {"repeat": torch.full((3,), 0.05), "induction": torch.full((3,), 0.8)}
    at_other = {"repeat": torch.full((3,), 5.0), "induction": torch.full((3,), 0.1)}
    assert all(c.holds for c in fixed_length_claims(at_trained, at_other, LOG_V))
    at_other["repeat"][2] = 3.0
    assert [c.holds for c in fixed_length_claims(at_trained, at_other, LOG_V)] == [True, True, False, True]


def test_first_half_losses_split_by_the_token_just_read():
    ids = torch.tensor([[3, 5, 3, 7, 3, 5, 3, 7]])  # length 4: predictions of tokens 1..3 read 3, 5, 3
    model = AttentionOnlyTransformer(VOCAB_SIZE, d_model=8, n_heads=2, n_layers=1, max_len=8)
    seen, fresh = first_half_losses(model, ids, 4)
    with torch.no_grad():
        losses = torch.nn.functional.cross_entropy(model.eval()(ids)[0, :3], ids[0, 1:4], reduction="none")
    assert seen.item() == pytest.approx(losses[2].item())  # the third prediction reads the second 3
    assert fresh.item() == pytest.approx(losses[:2].mean().item())


def test_composition_group_and_first_half_claims():
    five = torch.ones(5)
    intact = {"induction": 0.9 * five, "repeat": 0.6 * five}
    through = {"key": {"induction": 0.3 * five, "repeat": 2.5 * five},
               "query": {"induction": 0.92 * five, "repeat": 0.62 * five},
               "value": {"induction": 0.91 * five, "repeat": 0.5 * five}}
    assert all(c.holds for c in composition_claims(intact, through))
    through["query"]["induction"] = 0.3 * five  # the queries matter too: not K-composition alone
    assert [c.holds for c in composition_claims(intact, through)] == [True, True, False, True]
    groups = {"previous-token heads off": 2.5 * five, "other layer-0 heads off": 0.55 * five,
              "induction heads off": 3.6 * five}
    assert all(c.holds for c in group_claims(0.6 * five, groups, LOG_V, how="by their mean"))
    assert "by their mean" in group_claims(0.6 * five, groups, LOG_V, how="by their mean")[0].claim
    claims = first_half_claims(4.3 * five, 3.9 * five, 3.95 * five, 3.7 * five, 3.67 * five)
    assert all(c.holds for c in claims)
    assert not first_half_claims(4.3 * five, 3.9 * five, 3.95 * five, 4.0 * five, 3.67 * five)[2].holds
    one_rises, two_rise = 3.7 * five, 3.7 * five  # with the induction heads off: a tendency, not every seed
    one_rises[0], two_rise[:2] = 4.0, 4.0
    assert first_half_claims(4.3 * five, 3.9 * five, 3.95 * five, one_rises, 3.67 * five)[2].holds
    assert not first_half_claims(4.3 * five, 3.9 * five, 3.95 * five, two_rise, 3.67 * five)[2].holds


def test_first_half_claims_print_their_counts():
    three = torch.ones(3)
    fresh, first_off = 3.9 * three, 3.7 * three
    fresh[0], first_off[1:] = 3.68, 3.96  # one seed near the one-layer level; two where the heads off raise the loss
    claims = first_half_claims(4.3 * three, fresh, 3.95 * three, first_off, 3.67 * three)
    assert claims[1].claim.endswith("(2 of 3 here)") and not claims[1].holds
    assert claims[2].claim.endswith("(1 of 3 here)") and not claims[2].holds


def test_copying_claims():
    copying = torch.full((3, 2, 4), 0.1)
    copying[:, 1] = torch.tensor([0.95, 0.8, 0.7, 0.5])
    assert all(c.holds for c in copying_claims(copying))
    copying[1, 1] = torch.tensor([0.7, 0.68, 0.65, 0.4])  # seed 1: no head copies 3 tokens in 4; median (lower) 0.65
    copying[2, 0, 0] = 0.4
    assert [c.holds for c in copying_claims(copying)] == [False, True, False]
    copying = torch.full((3, 2, 4), 0.1)
    copying[:, 1] = torch.tensor([0.8, 0.8, 0.7, 0.5])  # every seed at least 3 in 4, but the median seed not over 90%
    assert [c.holds for c in copying_claims(copying)] == [False, True, True]
