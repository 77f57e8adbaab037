"""The per-step schedules: the rate of every step, against the formulas their docstrings give."""
import math

import pytest
import torch
from torch.optim.lr_scheduler import LinearLR, SequentialLR

from stepbystep.training.schedules import inverse_sqrt, linear_ramps, warmup, warmup_cosine, warmup_linear


def _optimizer(lr=0.1):
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)


def _rates(make, n_steps, lr=0.1):
    """The rate of steps 0 .. n_steps - 1, the schedule stepped after each, as the trainer does."""
    optimizer = _optimizer(lr)
    schedule = make(optimizer)
    rates = []
    for _ in range(n_steps):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    return rates


def test_warmup_rises_to_the_rate_at_step_w_minus_1_then_stays():
    assert _rates(lambda o: warmup(o, 4), 7) == pytest.approx([0.025, 0.05, 0.075, 0.1, 0.1, 0.1, 0.1])


def test_warmup_linear_rises_then_falls_to_zero_at_the_last_step():
    rates = _rates(lambda o: warmup_linear(o, 2, 6), 7)
    assert rates == pytest.approx([0.05, 0.1, 0.1, 0.075, 0.05, 0.025, 0.0])


def test_a_run_no_longer_than_its_warm_up_only_rises():
    assert _rates(lambda o: warmup_linear(o, 10, 3), 3) == pytest.approx([0.01, 0.02, 0.03])


def test_warmup_cosine_follows_half_a_cosine_after_the_rise():
    rates = _rates(lambda o: warmup_cosine(o, 2, 6), 8)
    cosine = [0.1 * (1 + math.cos(math.pi * k / 4)) / 2 for k in range(5)]
    assert rates == pytest.approx([0.05, 0.1] + cosine + [0.0], abs=1e-12)  # the peak held twice, as warmup_linear's


def test_inverse_sqrt_peaks_at_the_end_of_the_warm_up_then_decays_as_one_over_the_root():
    rates = _rates(lambda o: inverse_sqrt(o, 4), 16)
    assert rates[:4] == pytest.approx([0.025, 0.05, 0.075, 0.1])
    assert rates[15] == pytest.approx(0.1 * math.sqrt(4 / 16))  # step 16, counted from 1
    assert max(rates) == pytest.approx(0.1) and rates[4:] == sorted(rates[4:], reverse=True)


def test_linear_ramps_is_chapter_08s_chain_of_torch_schedulers_to_the_bit():
    def chapter_08(optimizer, w=5, n=12):
        return SequentialLR(optimizer, [LinearLR(optimizer, start_factor=1 / w, total_iters=w),
                                        LinearLR(optimizer, start_factor=1.0, end_factor=0.0, total_iters=n - w)],
                            milestones=[w])

    ours = _rates(lambda o: linear_ramps(o, 5, 12), 13, lr=7e-3)
    assert ours == _rates(chapter_08, 13, lr=7e-3)  # exactly: the same floats
    assert ours[5] == pytest.approx(7e-3) and ours[0] == pytest.approx(7e-3 / 5) and ours[12] == pytest.approx(0.0)


@pytest.mark.parametrize("make, error, message", [
    (lambda o: warmup(o, 0), ValueError, "warmup_steps must be a positive int, got 0"),
    (lambda o: warmup_linear(o, 2.5, 10), TypeError, "warmup_steps must be a positive int"),
    (lambda o: warmup_cosine(o, 2, 0), ValueError, "total_steps must be a positive int, got 0"),
    (lambda o: linear_ramps(o, 3, -1), ValueError, "total_steps must be a positive int"),
])
def test_bad_step_counts_are_reported(make, error, message):
    with pytest.raises(error, match=message):
        make(_optimizer())
