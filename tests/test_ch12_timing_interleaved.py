"""Chapter 12's timings take turns and keep the fastest: every length's prefill and decode in one
loop, and the decode step, narrow step, bare products and prefill of ``decode_step_parts_ms`` too."""
import pytest
import torch

from stepbystep.experiments import cache_timing
from stepbystep.experiments.cache_timing import decode_step_parts_ms, prefill_decode_times
from stepbystep.models import DecoderConfig


def _model(d_model=16):
    torch.manual_seed(0)
    return DecoderConfig.llama(30, d_model=d_model, n_heads=2, n_layers=1, max_len=40, n_kv_heads=1).build()


def _recording(monkeypatch, model):
    """Record the length of every input ``model`` reads, and time each call as 100 minus its index."""
    lengths, calls = [], []
    forward = model.forward

    def recorded(ids, *args, **kwargs):
        lengths.append(ids.shape[1])
        return forward(ids, *args, **kwargs)

    monkeypatch.setattr(model, "forward", recorded)

    def fake_ms(run):
        run()
        calls.append(lengths[-1])
        return 100.0 - len(calls)

    monkeypatch.setattr(cache_timing, "_ms", fake_ms)
    return calls


def test_prefill_decode_times_takes_turns_between_the_lengths_and_keeps_the_fastest(monkeypatch):
    model = _model()
    calls = _recording(monkeypatch, model)
    prefill, decode = prefill_decode_times(model, [4, 9], repeats=2, steps=3)
    # per repeat: a prefill of 4, 3 steps after it, a prefill of 9, 3 steps after it
    assert calls == [4, 1, 1, 1, 9, 1, 1, 1] * 2
    # the fake times fall with each call, so the fastest of each is its last one
    assert prefill == [100.0 - 9, 100.0 - 13] and decode == [100.0 - 12, 100.0 - 16]
    assert model.training  # its mode restored


def test_prefill_decode_times_refuses_bad_counts_and_a_cache_too_short():
    model = _model()
    with pytest.raises(ValueError):
        prefill_decode_times(model, [4], steps=0)
    with pytest.raises(ValueError, match="max_len"):  # 30 + 2 x 5 + 1 positions do not fit in max_len 40
        prefill_decode_times(model, [30], repeats=2, steps=5)


def test_decode_step_parts_take_turns_between_the_four(monkeypatch):
    model = _model()
    narrow = _model(d_model=4)
    calls = []
    monkeypatch.setattr(cache_timing, "_ms", lambda run: (run(), calls.append(run), 1.0 + len(calls))[2])
    parts = decode_step_parts_ms(model, narrow, length=8, repeats=3)  # one run of each per turn
    assert set(parts) == {"step", "narrow step", "products", "prefill"}
    assert len(calls) == 12 and calls[:4] == calls[4:8] == calls[8:]  # the four in the same order, each repeat
    assert list(parts.values()) == [2.0, 3.0, 4.0, 5.0]  # the first (fastest) of each


def test_decode_step_parts_run_the_short_ones_several_times_per_turn(monkeypatch):
    model = _model()
    narrow = _model(d_model=4)
    calls = []
    monkeypatch.setattr(cache_timing, "_ms", lambda run: (run(), calls.append(run), 1.0)[2])
    decode_step_parts_ms(model, narrow, length=8, repeats=2, steps=3)
    assert len(calls) == 2 * (3 * 3 + 1) and calls[:10] == calls[10:]
    assert calls[0] == calls[2] != calls[3] and calls[8] != calls[9]  # 3 steps, 3 narrow steps, 3 products, 1 prefill
    with pytest.raises(ValueError, match="max_len"):  # 8 + 2 x 16 + 1 positions do not fit in max_len 40
        decode_step_parts_ms(model, narrow, length=8, repeats=2, steps=16)


def test_per_round_keeps_the_fastest_within_each_turn(monkeypatch):
    model = _model()
    calls = _recording(monkeypatch, model)
    prefill, decode = prefill_decode_times(model, [4, 9], repeats=2, steps=3, per_round=True)
    assert calls == [4, 1, 1, 1, 9, 1, 1, 1] * 2
    # one time per round: each round's last call of each, the fastest there
    assert prefill == [[100.0 - 1, 100.0 - 9], [100.0 - 5, 100.0 - 13]]
    assert decode == [[100.0 - 4, 100.0 - 12], [100.0 - 8, 100.0 - 16]]

