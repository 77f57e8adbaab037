"""The trainer's precision: "32" trains in float32 as before; "bf16-mixed" runs the forward pass and the
loss under bfloat16 autocast while the weights, gradients and optimizer stay float32."""
import pytest
import torch
from torch import nn

from stepbystep import StepByStep


def _trainer(precision=None, seed=0):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))
    kwargs = {} if precision is None else {"precision": precision}
    trainer = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.05), device="cpu", **kwargs)
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(64, 6, generator=generator)  # (64, 6)
    batches = [(x[i:i + 16], x[i:i + 16].sum(1, keepdim=True)) for i in range(0, 64, 16)]
    trainer.set_loaders(batches)
    return trainer


def test_bf16_mixed_computes_the_layers_in_bfloat16_and_keeps_float32_weights_and_gradients():
    trainer = _trainer("bf16-mixed")
    seen = []
    trainer.model[0].register_forward_hook(lambda module, inputs, output: seen.append(output.dtype))
    trainer.train_steps(3, progress=False)
    assert seen == [torch.bfloat16] * 3
    assert {p.dtype for p in trainer.model.parameters()} == {p.grad.dtype for p in trainer.model.parameters()} == {torch.float32}
    assert trainer.precision == "bf16-mixed"


def test_thirty_two_is_the_default_and_bf16_mixed_moves_the_losses_a_little():
    default, thirty_two, mixed = _trainer(), _trainer("32"), _trainer("bf16-mixed")
    for trainer in (default, thirty_two, mixed):
        trainer.train(5, progress=False)
    assert default.precision == "32" and default.losses == thirty_two.losses  # float32: the same numbers
    gaps = [abs(a - b) / b for a, b in zip(mixed.losses, thirty_two.losses)]
    assert 0 < max(gaps) < 0.05  # bfloat16's coarser steps: close, not equal


@pytest.mark.parametrize("precision", ["16-mixed", "bf16", 32, "64"])
def test_an_unknown_precision_is_refused_naming_the_two_settings(precision):
    with pytest.raises(ValueError, match=r"precision must be one of '32', 'bf16-mixed', got "):
        _trainer(precision)
