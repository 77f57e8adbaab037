"""Chapter 09's stored tied-embedding runs: the file, and one seed computed again."""
import math

import pytest

from stepbystep.experiments.tie_seeds import EVAL_EVERY, N_STEPS, RESULTS, SEEDS, load_tie_seeds, tie_seeds


def test_the_file_holds_every_run_and_how_it_was_written():
    assert '"written_by": "python -m stepbystep.experiments.tie_seeds"' in RESULTS.read_text()
    runs = load_tie_seeds()
    assert list(runs) == ["untied", "tied"]
    for seed_runs in runs.values():
        assert [run.seed for run in seed_runs] == list(SEEDS)
        for run in seed_runs:
            assert run.steps == list(range(0, N_STEPS + 1, EVAL_EVERY)) and len(run.val_losses) == len(run.steps)
            assert all(math.isfinite(loss) and loss > 0 for loss in run.val_losses) and run.initial_logit_std > 0


def test_one_stored_seed_is_computed_again():
    """Seed 0, tied and untied, on one thread as the command ran it (another CPU may add its sums in
    another order, so the losses are compared to 1e-3)."""
    fresh = tie_seeds(seeds=(0,))
    stored = load_tie_seeds()
    for name in ("untied", "tied"):
        (run,) = fresh[name]
        assert run.steps == stored[name][0].steps
        assert run.val_losses == pytest.approx(stored[name][0].val_losses, abs=1e-3)
        assert run.initial_logit_std == pytest.approx(stored[name][0].initial_logit_std, rel=1e-4)
