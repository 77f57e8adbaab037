"""A toy-sized run of chapter 16's data-parallel benchmark (never timed here): the rows it writes."""
import pytest

from benchmarks import data_parallel
from benchmarks.run import _scaling_table


@pytest.mark.system  # starts gloo processes
def test_the_benchmark_times_two_processes_against_one():
    rows = data_parallel.run(quick=True)
    assert [row["reference"] for row in rows] == ["1 process, 1 thread", "1 process, 2 threads"]
    for row in rows:
        assert row["ours"] == "2 processes, 1 thread each" and row["ours_ms"] > 0 and row["reference_ms"] > 0
        assert row["ratio"] == pytest.approx(row["ours_ms"] / row["reference_ms"])
        assert row["efficiency"] == pytest.approx(row["reference_ms"] / (2 * row["ours_ms"]))
    table = _scaling_table(rows)
    assert table.count("\n") == 3 and "| 2 processes, 1 thread each | 1 process, 1 thread |" in table


def test_each_rank_times_its_steps_on_its_own_shard():
    times = data_parallel.step_times(0, 1, data_parallel.QUICK_RUN, 3)
    assert len(times) == 3 and all(t > 0 for t in times)
    with pytest.raises(ValueError, match="split evenly"):
        data_parallel.step_times(0, 3, data_parallel.QUICK_RUN, 1)
