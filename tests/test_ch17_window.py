"""Chapter 17's sliding-window study: the tasks, streaming through the bounded cache, the claims
on hand-made numbers, and the stored studies (one thread and PyTorch's default) holding them."""
import pytest
import torch

from stepbystep.data.special_tokens import IGNORE_INDEX
from stepbystep.experiments.after_llama.window import (FAR, LENGTH, VARIANTS, WINDOW, load_window_study, stream_through,
                                                       task_batch, window_claims, window_config, window_run,
                                                       window_table)


def test_the_tasks_targets():
    ids, targets = task_batch("start", 4, torch.Generator().manual_seed(0), length=12)
    assert (targets[:, 1:] == ids[:, :1]).all() and (targets[:, 0] == IGNORE_INDEX).all()
    ids, targets = task_batch("recent", 4, torch.Generator().manual_seed(0), length=12)
    assert (targets[:, 3:] == ids[:, :-3]).all()
    with pytest.raises(ValueError, match="task must be one of"):
        task_batch("middle", 4, torch.Generator())


@pytest.mark.parametrize("variant, bound", [("full attention", None), (f"window {WINDOW}", WINDOW),
                                            (f"window {WINDOW} + 1 sink", WINDOW + 1)])
def test_streaming_equals_the_full_pass_and_the_cache_stays_bounded(variant, bound):
    torch.manual_seed(0)
    model = window_config(**VARIANTS[variant]).build().eval()
    ids = torch.randint(1, 16, (2, 30))
    logits, held = stream_through(model, ids)
    with torch.no_grad():
        assert torch.allclose(logits, model(ids), atol=1e-5)  # the same window, read through the cache
    expected = [t + 1 if bound is None else min(t + 1, bound) for t in range(30)]
    assert held.tolist() == expected


def test_a_toy_run_records_what_the_study_keeps():
    run = window_run("start", f"window {WINDOW} + 1 sink", seed=0, steps=3, n_test=4)
    assert len(run["losses"]) == 3 and len(run["held"]) == LENGTH and max(run["held"]) == WINDOW + 1
    assert run["bytes"] == run["expected_bytes"] and 0 <= run["far_accuracy"] <= 1


def _study(sink_start=1.0, window_start=0.06, recent_sink=1.0, held_sink=WINDOW + 1):
    def run(accuracy, bound):
        held = [t + 1 if bound is None else min(t + 1, bound) for t in range(LENGTH)]
        return {"far_accuracy": accuracy, "held": held, "bytes": 10, "expected_bytes": 10}
    w, s = f"window {WINDOW}", f"window {WINDOW} + 1 sink"
    accuracies = {"start": {"full attention": 1.0, w: window_start, s: sink_start},
                  "recent": {"full attention": 1.0, w: 1.0, s: recent_sink}}
    bounds = {"full attention": None, w: WINDOW, s: held_sink}
    return {"seeds": [0, 1, 2], "window": WINDOW, "length": LENGTH, "far": FAR,
            "runs": {task: {v: [run(accuracies[task][v], bounds[v]) for _ in range(3)] for v in bounds}
                     for task in accuracies}}


def test_the_claims_hold_on_numbers_that_show_the_effect():
    assert all(claim.holds for claim in window_claims(_study()))


@pytest.mark.parametrize("change, failing", [
    (dict(sink_start=0.5), "with one sink"),
    (dict(window_start=0.5), "near chance"),
    (dict(recent_sink=0.8), "the sink moves the median accuracy"),
    (dict(held_sink=LENGTH), "caches hold min"),  # a cache that grows
])
def test_each_claim_fails_when_its_numbers_do_not_show_it(change, failing):
    failed = [claim.claim for claim in window_claims(_study(**change)) if not claim.holds]
    assert any(failing in claim for claim in failed), failed




@pytest.mark.parametrize("default_threads", [False, True], ids=["one thread", "default threads"])
def test_the_stored_study_holds_its_claims(default_threads):
    study = load_window_study(default_threads)
    assert study["threads"] == ("default" if default_threads else 1) and len(study["seeds"]) >= 3
    failed = [(claim.claim, claim.got) for claim in window_claims(study) if not claim.holds]
    assert not failed
    assert "1 sink" in window_table(study)
