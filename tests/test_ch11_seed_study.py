"""Chapter 11's stored five-seed study of its first ViT: what it holds, a seed recomputed, the claims made on it."""
import copy
import math

import pytest
import torch

from stepbystep.data import line_datasets
from stepbystep.devices import environment
from stepbystep.experiments.vit_positions import fit, small_vit
from stepbystep.experiments.vit_seeds import (
    N_ORDERS,
    SEEDS,
    accuracy_claims,
    attention_claims,
    clean_claims,
    clean_run,
    clean_seed_study,
    line_patches,
    line_shares,
    load_clean_seed_study,
    shuffle_claims,
    shuffled_accuracies,
)

KEYS = {"seed", "accuracy", "shuffled", "head_shares", "untrained_shares"}


@pytest.fixture(scope="module")
def study():
    return load_clean_seed_study()


def test_the_stored_study_holds_five_seeds_of_every_measure(study):
    assert [run["seed"] for run in study["runs"]] == list(SEEDS) == [0, 1, 2, 3, 4]
    assert study["command"] == "python -m stepbystep.experiments.vit_seeds" and study["n_epochs"] == 16
    assert set(study["environment"]) == {"torch", "device", "cpu_capability", "threads"}
    for run in study["runs"]:
        assert set(run) == KEYS
        assert len(run["shuffled"]) == N_ORDERS and len(run["head_shares"]) == len(run["untrained_shares"]) == 4
        assert all(0 <= value <= 1 for value in [run["accuracy"], *run["shuffled"], *run["head_shares"]])


def test_every_claim_holds_on_the_stored_study(study):
    assert [claim.claim for claim in clean_claims(study["runs"]) if not claim.holds] == []


def test_a_recomputed_seed_matches_the_stored_one(study):
    fresh = clean_seed_study(seeds=(1,))
    stored = study["runs"][1]
    assert fresh["runs"][0]["seed"] == stored["seed"] == 1
    if environment() == study["environment"]:  # the machine, release and threads that wrote the file: the same run
        for key in KEYS - {"seed"}:
            got, wanted = fresh["runs"][0][key], stored[key]
            got, wanted = (got, wanted) if isinstance(got, list) else ([got], [wanted])
            assert all(math.isclose(a, b, abs_tol=1e-4) for a, b in zip(got, wanted)), key
    # anywhere, the recomputed run bears out every claim made of each run
    assert [claim.claim for claim in clean_claims(fresh["runs"]) if not claim.holds] == []


def _changed(runs, seed, **values):
    return [dict(run, **values) if run["seed"] == seed else run for run in runs]


def test_the_claims_fail_where_they_should(study):
    runs = study["runs"]
    failing = lambda claims: [claim.claim for claim in claims if not claim.holds]  # noqa: E731
    assert len(failing(accuracy_claims(_changed(runs, 2, accuracy=0.979)))) == 1
    assert len(failing(shuffle_claims(_changed(runs, 3, shuffled=[0.99, 0.99, 0.89, 0.99, 0.99])))) == 1
    weak_head = failing(attention_claims(_changed(runs, 0, head_shares=[0.6, 0.6, 0.6, 0.35])))
    assert weak_head == ["in every run, every trained head puts a larger share on the line than any untrained head"]
    weak_median = runs
    for seed in (1, 2, 3):
        weak_median = _changed(weak_median, seed, head_shares=[0.6, 0.6, 0.6, 0.4])
    assert failing(attention_claims(weak_median)) == ["in the median run, even the weakest trained head is more than "
                                                      "10 points above every untrained head"]
    no_strong_head = failing(attention_claims(_changed(runs, 4, head_shares=[0.5, 0.5, 0.5, 0.5])))
    assert no_strong_head == ["in every run, at least one head gives more than half its patch attention to the "
                              "line's patches"]
    looking_untrained = failing(attention_claims(_changed(runs, 1, untrained_shares=[0.3, 0.3, 0.46, 0.3])))
    assert "no untrained head puts more than 45% on the line's patches" in looking_untrained
    assert failing(clean_claims(runs)) == []


def test_line_patches_marks_the_patches_that_hold_a_line_pixel():
    images = torch.full((1, 1, 12, 12), 0.2)
    images[0, 0, 5, :] = 1.0  # a horizontal line through the middle row of patches
    assert line_patches(images).tolist() == [[0, 0, 0, 1, 1, 1, 0, 0, 0]]


def test_line_shares_are_one_share_per_head_between_zero_and_one():
    _, val_data = line_datasets(n_train=10, n_val=40)
    shares = line_shares(small_vit(0, n_outputs=3), val_data.tensors[0])
    assert shares.shape == (4,) and bool(((shares > 0) & (shares < 1)).all())


def test_the_orders_come_from_their_own_generator():
    _, val_data = line_datasets(n_train=10, n_val=60)
    vit = small_vit(0, n_outputs=3)
    torch.manual_seed(1)
    first = shuffled_accuracies(vit, val_data)
    torch.manual_seed(2)  # the global stream does not choose the orders
    assert len(first) == N_ORDERS and first == shuffled_accuracies(vit, val_data)


def test_clean_run_refuses_what_is_not_a_vit():
    _, val_data = line_datasets(n_train=10, n_val=20)
    vit = small_vit(0, n_outputs=3)
    with pytest.raises(TypeError):
        clean_run(torch.nn.Linear(2, 2), vit, val_data, seed=0)
    run = clean_run(fit(copy.deepcopy(vit), line_datasets(n_train=64, n_val=1)[0], n_epochs=1), vit, val_data, 0)
    assert set(run) == KEYS
