"""Chapter 13's stored study over twelve seeds: what it holds, one seed recomputed, the claims made on it,
and the pieces it is made of."""
import json
import math

import pytest
import torch

from stepbystep.devices import environment, torch_threads
from stepbystep.experiments.induction import VOCAB_SIZE, build_model, previous_token_heads, repeat_loss
from stepbystep.experiments.induction_seeds import (
    SEEDS,
    both_thread_counts,
    STEPS,
    early_rise_claims,
    fade_claims,
    k_composition_claims,
    load_induction_seeds,
    needed_claims,
    seed_circuit,
    study_claims,
    test_sequences as chapter_sequences,
    to_json,
    train_with_layer0_probe,
)
from stepbystep.exercises import ch13
from stepbystep.interpret import ablate_heads, head_scores

from induction_runs import with_run


def _close(stored, fresh, path=""):
    """Every number of ``fresh`` within 0.05 of ``stored`` (0.02 of a score), the same keys and lists."""
    if isinstance(stored, dict):
        assert set(stored) == {str(key) for key in fresh}, path
        for key, value in fresh.items():
            _close(stored[str(key)], value, f"{path}.{key}")
    elif isinstance(stored, list):
        assert len(stored) == len(fresh), path
        for i, (a, b) in enumerate(zip(stored, fresh)):
            _close(a, b, f"{path}[{i}]")
    elif isinstance(stored, float) or isinstance(fresh, float):
        assert fresh == pytest.approx(stored, abs=0.05), path
    else:
        assert stored == fresh, path


def test_the_stored_study_holds_twelve_seeds_and_every_measure():
    study = load_induction_seeds()
    assert study["seeds"] == list(SEEDS) and len(SEEDS) >= 10 and study["threads"] == 1
    assert [run["seed"] for run in study["runs"]] == list(SEEDS)
    assert all(len(run["probes"]["steps"]) == 31 and len(run["layer0_subsets"]) == 15 for run in study["runs"])


def test_one_seed_recomputed_matches_the_stored_one():
    study = load_induction_seeds()
    stored = study["runs"][SEEDS.index(6)]  # a seed whose second head scores under 0.5
    assert stored["previous_heads"] == [3, 2]
    with torch_threads(study["threads"]):
        fresh = seed_circuit(6)
        same_setting = environment() == study["environment"]
    if same_setting:  # the machine, release and threads that wrote the file: the same run
        assert fresh["previous_heads"] == stored["previous_heads"]
        assert abs(fresh["drop"] - stored["drop"]) <= 3
        _close({key: value for key, value in stored.items() if key != "drop"},
               {key: value for key, value in fresh.items() if key != "drop"})
    # anywhere (another CPU adds its sums in another order), the chapter's claims hold with this seed recomputed
    assert [claim.claim for claim in study_claims(with_run(both_thread_counts(), fresh, 1)) if not claim.holds] == []
    # a fresh study reads as the stored one does: its claims run without a JSON round trip
    fresh_claims = study_claims({"seeds": [6], "steps": STEPS, "runs": [fresh]})
    stored_claims = study_claims({"seeds": [6], "steps": STEPS, "runs": [stored]})
    assert [claim.claim for claim in fresh_claims] == [claim.claim for claim in stored_claims] != []


def test_every_claim_holds_on_the_stored_study():
    failed = [claim.claim for claim in study_claims(load_induction_seeds()) if not claim.holds]
    assert failed == []


def test_the_stored_claims_fail_where_they_should():
    study = load_induction_seeds()
    harmful = json.loads(json.dumps(study))
    harmful["runs"][0]["groups"]["other layer-0 heads off"] += 1.0  # the control is no longer harmless
    failed = [claim.claim for claim in study_claims(harmful) if not claim.holds]
    assert failed == ["with the other layer-0 heads switched off by zeroing, it rises by less than 0.1 and falls by "
                      "less than 0.25 in every seed that has any (two seeds in three at least)"]
    helpful = json.loads(json.dumps(study))
    helpful["runs"][0]["groups"]["other layer-0 heads off"] -= 0.3  # copying far better without them: not harmless
    assert [claim.claim for claim in study_claims(helpful) if not claim.holds] == failed
    queries = json.loads(json.dumps(study))
    queries["runs"][3]["paths"]["query"]["induction"] = 0.2  # the queries carry it too
    assert [claim.claim for claim in study_claims(queries) if not claim.holds] == [
        "off for the queries only, the score and the loss move by less than 0.1 in every seed"]


def test_train_with_layer0_probe_records_the_score_with_layer_0_off():
    probe = chapter_sequences()[0][:8]  # (8, 24)
    model, history = train_with_layer0_probe(seed=1, probe=probe, steps=20, probe_every=10)
    assert history["probe_steps"].tolist() == [0, 10, 20] and history["induction_layer0_off"].shape == (3,)
    untrained = build_model(2, 1)
    layer0 = [(0, head) for head in range(4)]
    with ablate_heads(untrained, layer0):
        at_start = head_scores(untrained, probe)[1][1].max()
        with ablate_heads(model, layer0):
            at_end = head_scores(model, probe)[1][1].max()
    assert history["induction_layer0_off"][0] == pytest.approx(at_start.item())
    assert history["induction_layer0_off"][-1] == pytest.approx(at_end.item())
    with pytest.raises(ValueError, match="multiple of probe_every"):
        train_with_layer0_probe(seed=1, probe=probe, steps=15, probe_every=10)


def test_previous_token_heads_are_the_best_scores_until_copying_breaks():
    model, ids = ch13._trained_model()  # exercise 4's model
    found = previous_token_heads(model, ids)
    scores = head_scores(model, ids)[0][0]
    assert [head for _, head in found] == scores.argsort(descending=True)[:len(found)].tolist()
    line = math.log(VOCAB_SIZE) / 2 - 0.1  # within 0.1 of half of ln V counts as broken
    assert repeat_loss(model, ids, found) > line > repeat_loss(model, ids, found[:-1])


def test_the_new_claims_hold_and_fail():
    steps = torch.arange(0, 301, 10)
    previous = torch.full((2, 31), 0.2)
    induction, off = torch.full((2, 31), 0.3), torch.full((2, 31), 0.2)
    assert all(c.holds for c in early_rise_claims(steps, previous, induction, off, [150, 200]))
    off[1, 5] = 0.4  # layer 1 alone reaches 0.4 once
    assert [bool(c.holds) for c in early_rise_claims(steps, previous, induction, off, [150, 200])] == [False, True,
                                                                                                       True]
    assert all(c.holds for c in fade_claims(torch.full((3,), 0.9), torch.full((3,), 0.7), torch.full((3,), 0.72)))
    assert not fade_claims(torch.full((3,), 0.9), torch.full((3,), 0.7), torch.full((3,), 0.8))[2].holds
    needed = torch.tensor([[True, True, False], [True, False, False]])
    assert all(c.holds for c in needed_claims(torch.tensor([[0.8, 0.45, 0.1], [0.9, 0.2, 0.1]]), needed))
    assert not needed_claims(torch.tensor([[0.8, 0.55, 0.1], [0.9, 0.2, 0.1]]), needed)[1].holds
    composition = torch.full((3, 3, 2, 2), 0.1)
    composition[:, 1, 0], composition[:, 0, 0], composition[:, 2, 0] = 0.3, 0.08, 0.08
    in_previous = torch.tensor([[True, False]] * 3)
    diagonal = torch.tensor([0.9, 0.8, 0.85])
    assert all(c.holds for c in k_composition_claims(composition, in_previous, diagonal, 64))
    composition[1, 0, 0] = 0.4  # seed 1's queries read it more
    assert not k_composition_claims(composition, in_previous, diagonal, 64)[0].holds


def test_to_json_writes_one_line_per_seed_and_rounds():
    study = {"seeds": [0], "steps": 3, "runs": [{"seed": 0, "x": [0.123456789, {"y": 2.0}]}, {"seed": 1, "x": []}]}
    text = to_json(study)
    assert len(text.splitlines()) == 4 and json.loads(text)["runs"][0]["x"] == [0.12346, {"y": 2.0}]
