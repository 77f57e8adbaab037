"""Chapter 09's label-smoothing runs: the committed file holds what the study computes."""
import json

import pytest

from stepbystep.devices import torch_threads
from stepbystep.experiments.label_smoothing import RESULTS_FILE, load_smoothing_results, smoothing_from_scratch

MEASURES = ("val_loss", "confidence", "accuracy", "ece", "target_probability", "whole_answer", "exact")


def test_the_file_holds_five_seeds_of_both_settings_and_how_it_was_written():
    written = json.loads(RESULTS_FILE.read_text())
    assert written["written_by"] == "python -m stepbystep.experiments.label_smoothing"
    results = load_smoothing_results()
    assert sorted(results) == [0.0, 0.1]
    for runs in results.values():
        assert [run["seed"] for run in runs] == [0, 1, 2, 3, 4]
        assert all(set(MEASURES) <= set(run) for run in runs)
        assert all(0 <= run[key] <= 1 for run in runs for key in MEASURES if key != "val_loss")


def test_the_study_refuses_settings_that_are_not_lists():
    with pytest.raises(TypeError, match="epsilons"):
        smoothing_from_scratch(epsilons=0.1)
    with pytest.raises(TypeError, match="seeds"):
        smoothing_from_scratch(seeds=3)


def test_one_committed_run_is_computed_again():
    """The smoothed run of seed 0, trained again on the CPU at one thread as the command trains it:
    the file's numbers, up to the last digits of float32 sums (a stale file, or one written at
    another thread count, differs by far more: a whole training path)."""
    with torch_threads(1):
        (run,) = smoothing_from_scratch(epsilons=(0.1,), seeds=(0,), device="cpu")
    committed = load_smoothing_results()[0.1][0]
    assert (run["epsilon"], run["seed"]) == (committed["epsilon"], committed["seed"])
    tolerance = {"val_loss": 1e-4, "confidence": 1e-4, "accuracy": 1e-4, "ece": 1e-4, "target_probability": 1e-4,
                 "whole_answer": 1e-3, "exact": 0.0005}  # exact: one date of 2,000
    for key, allowed in tolerance.items():
        assert run[key] == pytest.approx(committed[key], abs=allowed), key


def test_the_file_was_written_at_one_thread_on_the_cpu():
    written = json.loads(RESULTS_FILE.read_text())
    assert (written["device"], written["threads"]) == ("cpu", 1)
