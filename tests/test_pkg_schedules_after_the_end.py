"""Past ``total_steps`` the decaying schedules stay at a rate of zero; none turns negative."""
import pytest
import torch

from stepbystep.training.schedules import linear_ramps, warmup_cosine, warmup_linear


def _rates(make, n_steps):
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    schedule, rates = make(optimizer), []
    for _ in range(n_steps):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    return rates


@pytest.mark.parametrize("make", [warmup_linear, warmup_cosine, linear_ramps])
@pytest.mark.parametrize("warmup_steps, total_steps", [(2, 6), (10, 3)])
def test_the_rate_stays_zero_after_the_last_step(make, warmup_steps, total_steps):
    rates = _rates(lambda o: make(o, warmup_steps, total_steps), total_steps + 6)
    assert all(rate >= 0 for rate in rates)
    if warmup_steps < total_steps:  # a run no longer than its warm-up only rises
        assert rates[total_steps:] == pytest.approx([0.0] * 6, abs=1e-12)


def test_warmup_linear_is_zero_from_step_n_on():
    assert _rates(lambda o: warmup_linear(o, 2, 6), 10) == pytest.approx(
        [0.05, 0.1, 0.1, 0.075, 0.05, 0.025, 0.0, 0.0, 0.0, 0.0])
