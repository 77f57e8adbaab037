"""Chapter 12's default-thread decode parts are measured again while the machine stalls both models:
``steady_decode_step_parts_ms`` with a fake timer, each measurement's times scripted."""
import pytest
import torch

from stepbystep.experiments import cache_timing
from stepbystep.experiments.cache_timing import steady_decode_step_parts_ms
from stepbystep.models import DecoderConfig

ALONE = {"step": 2.0, "narrow step": 1.0, "products": 0.5, "prefill": 30.0}  # the one-thread parts
QUIET = {"step": 2.5, "narrow step": 0.9, "products": 0.6, "prefill": 40.0}
STALLED = {"step": 39.0, "narrow step": 40.0, "products": 0.5, "prefill": 90.0}  # both steps stalled


def _models():
    torch.manual_seed(0)
    wide = DecoderConfig.llama(30, d_model=16, n_heads=2, n_layers=1, max_len=40, n_kv_heads=1).build()
    narrow = DecoderConfig.llama(30, d_model=4, n_heads=2, n_layers=1, max_len=40, n_kv_heads=1).build()
    return wide, narrow


def _fake_timer(monkeypatch, wide, narrow, measurements, repeats, steps):
    """Time every run as ``measurements[i][part]`` during the i-th call of ``decode_step_parts_ms``;
    returns the list of parts timed, in order."""
    running = []
    for name, model in (("wide", wide), ("narrow", narrow)):
        forward = model.forward

        def recorded(ids, *args, _name=name, _forward=forward, **kwargs):
            running.append((_name, ids.shape[1]))
            return _forward(ids, *args, **kwargs)

        monkeypatch.setattr(model, "forward", recorded)
    timed = []
    per_measurement = repeats * (3 * steps + 1)  # each turn: steps of three parts, one prefill

    def fake_ms(run):
        running.clear()
        run()
        if not running:
            part = "products"
        elif running[-1][0] == "narrow":
            part = "narrow step"
        else:
            part = "step" if running[-1][1] == 1 else "prefill"
        timed.append(part)
        return measurements[(len(timed) - 1) // per_measurement][part]

    monkeypatch.setattr(cache_timing, "_ms", fake_ms)
    return timed


def test_a_quiet_machine_is_measured_once(monkeypatch):
    wide, narrow = _models()
    timed = _fake_timer(monkeypatch, wide, narrow, [QUIET, QUIET, QUIET], repeats=2, steps=3)
    parts = steady_decode_step_parts_ms(wide, narrow, ALONE, length=5, repeats=2, steps=3)
    assert len(timed) == 2 * (3 * 3 + 1)
    assert parts == QUIET


def test_a_stall_is_measured_again_and_the_fastest_of_each_part_kept(monkeypatch):
    wide, narrow = _models()
    timed = _fake_timer(monkeypatch, wide, narrow, [STALLED, QUIET, STALLED], repeats=2, steps=3)
    parts = steady_decode_step_parts_ms(wide, narrow, ALONE, length=5, repeats=2, steps=3)
    assert len(timed) == 2 * 2 * (3 * 3 + 1)  # two measurements: the second found the machine quiet
    assert parts == {name: min(STALLED[name], QUIET[name]) for name in QUIET}
    assert parts["step"] > parts["narrow step"]


def test_a_stall_that_lasts_stops_after_tries_and_says_so_in_its_numbers(monkeypatch):
    wide, narrow = _models()
    timed = _fake_timer(monkeypatch, wide, narrow, [STALLED] * 4, repeats=1, steps=2)
    parts = steady_decode_step_parts_ms(wide, narrow, ALONE, tries=3, length=5, repeats=1, steps=2)
    assert len(timed) == 3 * (3 * 2 + 1)  # three measurements, not four
    assert parts == STALLED  # still stalled: the wide step is not claimed to be the longer


def test_only_a_narrow_step_above_stall_times_its_one_thread_time_counts_as_stalled(monkeypatch):
    wide, narrow = _models()
    slow = dict(QUIET, **{"narrow step": 5 * ALONE["narrow step"]})  # at the bound, not above it
    timed = _fake_timer(monkeypatch, wide, narrow, [slow, QUIET], repeats=1, steps=1)
    assert steady_decode_step_parts_ms(wide, narrow, ALONE, stall=5, length=5, repeats=1, steps=1) == slow
    assert len(timed) == 3 * 1 + 1
    slower = dict(QUIET, **{"narrow step": 5.5 * ALONE["narrow step"]})
    timed = _fake_timer(monkeypatch, wide, narrow, [slower, QUIET], repeats=1, steps=1)
    assert steady_decode_step_parts_ms(wide, narrow, ALONE, stall=5, length=5, repeats=1, steps=1) == QUIET
    assert len(timed) == 2 * (3 * 1 + 1)


def test_bad_arguments_are_refused():
    wide, narrow = _models()
    with pytest.raises(ValueError, match="tries"):
        steady_decode_step_parts_ms(wide, narrow, ALONE, tries=0)
    with pytest.raises(TypeError, match="tries"):
        steady_decode_step_parts_ms(wide, narrow, ALONE, tries=2.0)
    with pytest.raises(TypeError, match="narrow step"):
        steady_decode_step_parts_ms(wide, narrow, {"step": 1.0})
    with pytest.raises(ValueError, match="stall"):
        steady_decode_step_parts_ms(wide, narrow, ALONE, stall=1)
