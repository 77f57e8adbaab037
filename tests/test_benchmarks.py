"""A toy-sized run of every benchmark, so they cannot rot (they are never timed here): system
tests (make test-system); the timing helpers they share are unit tests."""
import os
import subprocess
import sys

import pytest

from benchmarks import attention, converted, generation, layers, tiled, trainer_overhead
from benchmarks.timing import compare, ratio_row


def _course_modules():
    """``nbformat`` and the course benchmark's modules: they need the Jupyter side (the lab extra),
    so the tests that run notebooks skip without it."""
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed: the lab extra runs notebooks")
    course = pytest.importorskip("benchmarks.course", reason="the course benchmark needs the lab extra (nbclient)")
    run = pytest.importorskip("benchmarks.run", reason="the report includes the course benchmark (nbclient)")
    return nbformat, course, run


def _check_ratio_rows(rows):
    assert rows
    for row in rows:
        assert row["ours_ms"] > 0 and row["reference_ms"] > 0
        assert row["ratio"] == pytest.approx(row["ours_ms"] / row["reference_ms"])
        if "goal" in row:
            assert row["met"] == (row["ratio"] <= row["goal"])


def test_compare_runs_every_contender_warmup_plus_repeats_times():
    calls = {"a": 0, "b": 0}
    medians = compare({"a": lambda: calls.__setitem__("a", calls["a"] + 1),
                       "b": lambda: calls.__setitem__("b", calls["b"] + 1)}, repeats=3, warmup=2)
    assert calls == {"a": 5, "b": 5} and set(medians) == {"a", "b"}
    row = ratio_row("case", {"a": 2.0, "b": 4.0}, "a", "b", goal=1.0)
    assert row["ratio"] == 0.5 and row["met"] and row["ours_ms"] == 2000.0


def test_compare_times_with_the_clock_that_waits_for_the_gpu(monkeypatch):
    import torch.utils.benchmark

    from benchmarks import timing

    assert timing.timer is torch.utils.benchmark.timer  # synchronises CUDA before reading
    readings = iter([0.0, 1.0, 1.0, 3.0, 3.0, 7.0, 7.0, 8.0])  # a takes 1 s then 4 s, b 2 s then 1 s
    monkeypatch.setattr(timing, "timer", lambda: next(readings))
    medians = compare({"a": lambda: None, "b": lambda: None}, repeats=2, warmup=0)
    assert medians == {"a": 2.5, "b": 1.5}


@pytest.mark.system  # a toy-sized real run
def test_trainer_benchmark_checks_both_loops_did_the_same_work():
    rows = trainer_overhead.run(quick=True)
    _check_ratio_rows(rows)
    assert rows[0]["goal"] == trainer_overhead.GOAL


@pytest.mark.system  # a toy-sized real run
@pytest.mark.parametrize("module", [attention, layers, generation, converted, tiled],
                         ids=["attention", "layers", "generation", "converted", "tiled"])
def test_ratio_benchmarks_run(module):
    _check_ratio_rows(module.run(quick=True))


def _tiny_notebook(path):
    nbformat, _, _ = _course_modules()
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1 + 1")])
    nbformat.write(notebook, path)
    return path


@pytest.mark.system  # a toy-sized real run
def test_course_benchmark_executes_notebooks_and_times_training_cells(tmp_path):
    nbformat, course, _ = _course_modules()
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import time\nclass Trainer:\n    def train(self, seconds):\n"
                                  "        time.sleep(seconds)"),
        nbformat.v4.new_code_cell("time.sleep(0.3)  # not training"),
        nbformat.v4.new_code_cell("Trainer().train(0.2)"),
    ])
    path = tmp_path / "07_tiny.ipynb"
    nbformat.write(notebook, path)
    rows = course.run(notebooks=[path])
    assert [row["case"] for row in rows] == ["07_tiny"]
    assert rows[0]["seconds"] >= 0.5 and rows[0]["one_thread_seconds"] >= 0.5
    assert 0.2 <= rows[0]["training_seconds"] < 0.3 + 0.2  # the sleeping cell is not training
    assert rows[0]["training_goal"] == 60.0 and rows[0]["training_met"]


@pytest.mark.system  # a toy-sized real run
def test_course_kernels_run_at_the_thread_count_asked(tmp_path, monkeypatch):
    nbformat, course, _ = _course_modules()
    out = tmp_path / "threads.txt"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"import torch\nopen({str(out)!r}, 'a').write(f'{{torch.get_num_threads()}}\\n')")])
    path = tmp_path / "01_threads.ipynb"
    nbformat.write(notebook, path)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # as under make bench
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    default = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"], check=True,
                             capture_output=True, text=True,
                             env={k: v for k, v in os.environ.items() if k not in course.THREAD_VARIABLES})
    course.execute(path)
    course.execute(path, threads=1)
    assert out.read_text().split() == [default.stdout.strip(), "1"]
    assert os.environ["OMP_NUM_THREADS"] == "1" and "MKL_NUM_THREADS" not in os.environ  # restored


@pytest.mark.system  # a toy-sized real run
def test_run_writes_the_report(tmp_path, monkeypatch):
    _, course, run = _course_modules()
    tiny = _tiny_notebook(tmp_path / "01_tiny.ipynb")
    original = course.run
    monkeypatch.setattr(course, "run", lambda quick=False: original(notebooks=[tiny]))
    output = tmp_path / "RESULTS.md"
    run.main(["--quick", "--output", str(output)])
    report = output.read_text()
    for heading in ("## Trainer overhead", "## Attention", "## Layers", "## Course"):
        assert heading in report
    assert "torch " in report and "01_tiny" in report and "| ratio |" in report
