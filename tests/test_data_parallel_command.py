"""`python -m stepbystep.experiments.data_parallel`: the decoder-only model trained on 1 and on 2 gloo
processes with one global batch ends with the same weights; bad input stops before any process starts."""
import pytest
import torch

from stepbystep.serialization import safe_load
from stepbystep.experiments import data_parallel
from stepbystep.experiments.data_parallel import main
from stepbystep.training.data_parallel import build_model


def test_one_and_two_processes_save_the_same_weights(tmp_path, capsys):
    for n in (1, 2):
        main(["--processes", str(n), "--steps", "4", "--seed", "1", "--out", str(tmp_path / f"{n}.pt")])
    assert "2 process(es), 4 steps" in capsys.readouterr().out
    one, two = safe_load(tmp_path / "1.pt", "cpu"), safe_load(tmp_path / "2.pt", "cpu")
    start = build_model(data_parallel.COMMAND_RUN.replace(seed=1)).state_dict()
    assert one.keys() == two.keys() == start.keys()
    for name in one:
        torch.testing.assert_close(two[name], one[name], rtol=0, atol=1e-5, msg=name)
    assert max((one[name] - start[name]).abs().max().item() for name in one) > 1e-3  # it trained


@pytest.mark.parametrize("argv, message", [
    (["--processes", "0"], "processes must be a positive int, got 0"),
    (["--processes", "3"], r"global batch \(16\) must split evenly over the 3 processes"),
    (["--processes", "2", "--global-batch", "6", "--steps", "0"], "steps must be a positive int, got 0"),
])
def test_bad_input_is_a_value_error_before_any_process_starts(tmp_path, argv, message, monkeypatch):
    monkeypatch.setattr(data_parallel, "run_ranks", None)  # calling it would be a TypeError, not this ValueError
    argv = [*argv, *([] if "--steps" in argv else ["--steps", "2"]), "--out", str(tmp_path / "w.pt")]
    with pytest.raises(ValueError, match=message):
        main(argv)
    assert not (tmp_path / "w.pt").exists()
