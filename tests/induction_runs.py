"""Chapter 13's stored study with one run recomputed in its place, for the tests that recompute a seed."""


def with_run(study, fresh, threads):
    """``study`` (``both_thread_counts``'s) with the run of ``fresh``'s seed at ``threads`` replaced by ``fresh``."""
    runs = [dict(fresh, threads=threads) if (run["seed"], run["threads"]) == (fresh["seed"], threads) else run
            for run in study["runs"]]
    assert runs != study["runs"]
    return dict(study, runs=runs)
