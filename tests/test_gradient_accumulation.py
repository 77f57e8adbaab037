"""Gradient accumulation over k micro-batches takes the step of one batch k times larger."""
import pytest
import torch

from stepbystep.models.gpt.model import completion_loss
from stepbystep.training.accumulation import accumulate_gradients
from stepbystep.training.data_parallel import DataParallelRun, build_model, flat_parameters, repeat_dataset

RUN = DataParallelRun(n_samples=32, global_batch=8, seed=4)


def _train(k, mean=True, steps=4):
    """``steps`` SGD steps on batches of 8, each from ``k`` micro-batches; the parameters after each ``(steps, P)``."""
    inputs, targets = repeat_dataset(RUN).tensors
    model = build_model(RUN)
    optimizer = torch.optim.SGD(model.parameters(), lr=RUN.lr, momentum=0.9)
    snapshots = []
    for step in range(steps):
        x, y = inputs[step * 8:(step + 1) * 8], targets[step * 8:(step + 1) * 8]  # (8, L) each
        optimizer.zero_grad(set_to_none=True)
        loss = accumulate_gradients(model, completion_loss, zip(x.chunk(k), y.chunk(k)), mean=mean)
        assert loss == pytest.approx(completion_loss(model(x), y).item(), rel=1e-6)  # the large batch's loss
        optimizer.step()
        snapshots.append(flat_parameters(model))
    return torch.stack(snapshots)


@pytest.mark.parametrize("k", [2, 4, 8])
def test_k_micro_batches_take_the_step_of_one_batch_k_times_larger(k):
    whole = _train(1)
    torch.testing.assert_close(_train(k), whole, rtol=0, atol=1e-6)
    assert (whole[-1] - whole[0]).abs().max() > 1e-2


def test_summing_the_micro_batch_losses_takes_a_step_k_times_longer():
    before = flat_parameters(build_model(RUN))
    whole, summed = _train(1, steps=1)[0], _train(4, mean=False, steps=1)[0]
    torch.testing.assert_close(summed - before, 4 * (whole - before), rtol=1e-4, atol=1e-6)


def test_unequal_or_missing_micro_batches_are_refused():
    model, (x, y) = build_model(RUN), repeat_dataset(RUN).tensors
    with pytest.raises(ValueError, match=r"equally large.*\[3, 5\]"):
        accumulate_gradients(model, completion_loss, [(x[:5], y[:5]), (x[5:8], y[5:8])])
    with pytest.raises(ValueError, match="at least one"):
        accumulate_gradients(model, completion_loss, [])
