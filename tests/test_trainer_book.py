"""The book's StepByStep (``stepbystep.book.training``): the core trainer plus the book's API:
plot_losses, correct, loader_apply as the book calls it, the clipping setters, the
learning-rate range test, hooks, captured gradients and parameters, set_seed, set_optimizer,
image normalisation, filter and output figures, TensorBoard, and the book's checkpoints.

Trainers whose expected values are computed by hand here run on the CPU; loader_apply with
correct runs on the default device, so a GPU run checks that both move the batches."""
import io
import pickle
import sys
import zipfile
from collections import namedtuple
from fractions import Fraction

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import stepbystep
from regression_data import sum_dataset
from stepbystep.book.training import ChannelNormalizer, StepByStep
from stepbystep.devices import model_device, move_to
from stepbystep.plots.filters import output_grid


def _trainer(model=None, lr=0.05, momentum=0.9):
    torch.manual_seed(0)
    model = model if model is not None else nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.2), nn.ReLU(), nn.Linear(8, 1))
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum), device="cpu")
    sbs.set_loaders(DataLoader(sum_dataset(noise=0.0), batch_size=16, shuffle=True, generator=torch.Generator()))
    return sbs


def _validated_trainer(seed=0):
    """Dropout, a loader shuffled with its own generator, and a validation loader."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.2), nn.ReLU(), nn.Linear(8, 1))
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9))
    sbs.set_loaders(DataLoader(sum_dataset(), batch_size=16, shuffle=True, generator=torch.Generator()),
                    DataLoader(sum_dataset(32, seed=1), batch_size=16))
    return sbs


def test_the_book_class_is_the_core_trainer_with_the_books_methods():
    assert issubclass(StepByStep, stepbystep.StepByStep)
    core = set(dir(stepbystep.StepByStep))
    for name in ("plot_losses", "correct", "loader_apply", "lr_range_test", "attach_hooks", "set_seed"):
        assert name in dir(StepByStep) and name not in core, name


# ----------------------------------------------------------------------------- plot_losses and set_seed
def test_plot_losses_returns_a_figure_with_both_curves():
    sbs = _validated_trainer()
    with pytest.raises(ValueError, match="train the model first"):
        sbs.plot_losses()
    sbs.train(3, progress=False)
    fig = sbs.plot_losses()
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.lines] == ["training loss", "validation loss"]
    np.testing.assert_allclose(ax.lines[0].get_ydata(), sbs.losses)
    assert ax.get_xlabel() == "epoch" and ax.get_ylabel() == "loss"


def test_set_seed_seeds_the_streams_of_the_next_train_call():
    explicit = _validated_trainer()
    explicit.train(2, seed=7, progress=False)
    again = _validated_trainer()
    again.set_seed(7)
    again.train(2, progress=False)
    assert again.losses == explicit.losses
    default = _validated_trainer()
    default.train(2, progress=False)
    assert default.losses != again.losses


class _Fixed(nn.Module):
    """Returns the given outputs whatever the input, and remembers the mode it ran in."""

    def __init__(self, outputs):
        super().__init__()
        self.outputs = outputs
        self.scale = nn.Parameter(torch.ones(()))
        self.modes = []

    def forward(self, x):
        self.modes.append((self.training, torch.is_grad_enabled()))
        return self.outputs[: len(x)] * self.scale


def _fixed_trainer(outputs):
    model = _Fixed(outputs)
    return StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1), device="cpu")


# ----------------------------------------------------------------------------- correct
def test_correct_counts_multiclass_hits_per_class_with_the_argmax():
    logits = torch.tensor([[3.0, 0, 0], [0, 2, 0], [0, 0, 1], [1, 0, 0], [0, 5, 0]])  # predicts 0, 1, 2, 0, 1
    sbs = _fixed_trainer(logits)
    y = torch.tensor([0, 1, 1, 2, 1])
    counts = sbs.correct(torch.zeros(5, 1), y)
    assert counts.tolist() == [[1, 1], [2, 3], [0, 1]]  # [n_correct, n_total] per class
    assert sbs.model.modes[-1] == (False, False) and sbs.model.training  # eval inside, restored after


def test_correct_binary_applies_the_sigmoid_to_logits_and_the_threshold():
    logits = torch.tensor([[2.0], [-2.0], [0.1], [-0.1]])  # probabilities .88, .12, .52, .48
    sbs = _fixed_trainer(logits)
    y = torch.tensor([[1.0], [0.0], [0.0], [1.0]])  # float labels, shape (n, 1), as in the book
    assert sbs.correct(torch.zeros(4, 1), y).tolist() == [[1, 2], [1, 2]]
    assert sbs.correct(torch.zeros(4, 1), y, threshold=0.6).tolist() == [[2, 2], [1, 2]]


def test_correct_binary_takes_a_final_sigmoid_output_as_the_probability():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1, 1), nn.Sigmoid())
    with torch.no_grad():
        model[0].weight.fill_(1.0)
        model[0].bias.fill_(0.0)
    sbs = StepByStep(model, nn.BCELoss(), torch.optim.SGD(model.parameters(), lr=0.1), device="cpu")
    x = torch.tensor([[0.5], [-0.5], [1.5]])  # probabilities .62, .38, .82
    y = torch.tensor([1, 1, 1])
    assert sbs.correct(x, y, threshold=0.7).tolist() == [[0, 0], [1, 3]]  # a second sigmoid would give 3


def test_correct_checks_its_inputs():
    sbs = _fixed_trainer(torch.zeros(4, 3))
    with pytest.raises(ValueError, match="one label per sample"):
        sbs.correct(torch.zeros(4, 1), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"class indices in 0..2 for this output, got values from 0 to 3"):
        sbs.correct(torch.zeros(4, 1), torch.tensor([0, 1, 2, 3]))
    with pytest.raises(ValueError, match="whole numbers"):
        sbs.correct(torch.zeros(4, 1), torch.tensor([0.0, 0.5, 1.0, 1.0]))
    with pytest.raises(ValueError, match=r"threshold must be a number in \(0, 1\), got 1.5"):
        sbs.correct(torch.zeros(4, 1), torch.tensor([0, 1, 2, 2]), threshold=1.5)
    with pytest.raises(ValueError, match=r"the model's output must be a 2-D tensor, got shape \(4,\)"):
        _fixed_trainer(torch.zeros(4)).correct(torch.zeros(4, 1), torch.tensor([0, 1, 1, 0]))


# ----------------------------------------------------------------------------- loader_apply
def test_loader_apply_sums_or_averages_over_batches():
    sbs = _validated_trainer()
    loader = DataLoader(sum_dataset(32), batch_size=8)
    counts = sbs.loader_apply(loader, lambda x, y: torch.tensor([len(x), (y > 0).sum()]))
    assert counts[0] == 32 and counts[1] == (sum_dataset(32).tensors[1] > 0).sum()
    means = sbs.loader_apply(loader, lambda x, y: torch.tensor(float(len(x))), reduce="mean")
    assert means.item() == 8.0
    with pytest.raises(ValueError, match="reduce must be one of 'sum', 'mean', got 'max'"):
        sbs.loader_apply(loader, lambda x, y: x, reduce="max")


def test_loader_apply_works_statically_as_the_book_calls_it():
    torch.manual_seed(0)
    model = nn.Linear(2, 3)
    sbs = StepByStep(model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    x, y = torch.randn(20, 2), torch.randint(0, 3, (20,))
    loader = DataLoader(TensorDataset(x, y), batch_size=6)
    static = StepByStep.loader_apply(loader, sbs.correct)
    bound = sbs.loader_apply(loader, sbs.correct)
    assert torch.equal(static, bound) and torch.equal(static, sbs.correct(x, y))  # summed over batches
    assert static[:, 1].sum() == 20
    assert "Apply ``func(x, y)``" in StepByStep.loader_apply.__doc__


def test_loader_apply_moves_batches_only_when_called_on_a_trainer():
    sbs = _trainer().to("meta")
    loader = DataLoader(sum_dataset(32, noise=0.0), batch_size=8)
    on_meta = lambda x, y: torch.tensor(int(x.device.type == "meta" and y.device.type == "meta"))  # noqa: E731
    assert sbs.loader_apply(loader, on_meta).item() == 4
    assert StepByStep.loader_apply(loader, on_meta).item() == 0
    with pytest.raises(TypeError, match="func must be callable"):
        StepByStep.loader_apply(loader, "correct")


# ----------------------------------------------------------------------------- clipping setters
def _raw_gradients(model, x, y):
    """The unclipped gradients for the batch, computed where the model lives (the trainer may have
    moved it), on the CPU."""
    x, y = move_to((x, y), model_device(model))
    model.zero_grad()
    nn.MSELoss()(model(x), y).backward()
    return [p.grad.clone().cpu() for p in model.parameters()]


def _one_step_update(sbs, x, y):
    """Run one SGD(lr=1) step and return how much each parameter moved (= the applied gradient), on the CPU."""
    before = [p.detach().clone() for p in sbs.model.parameters()]
    sbs.set_loaders([(x, y)])
    sbs.train(1, progress=False)
    return [(b - p.detach()).cpu() for b, p in zip(before, sbs.model.parameters())]


@pytest.mark.parametrize("clips", [["value"], ["norm"], ["value", "norm"], ["norm", "value"]])
def test_clipping_setters_combine_in_any_order_and_can_be_removed(clips, device):
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    x, y = 10 * torch.randn(8, 3), torch.randn(8, 2)
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=1.0), device=device)
    for clip in clips:
        if clip == "value":
            sbs.set_clip_grad_value(0.5)
        else:
            sbs.set_clip_grad_norm(1.0)
    expected = _raw_gradients(model, x, y)
    if "value" in clips:
        expected = [g.clamp(-0.5, 0.5) for g in expected]
    if "norm" in clips:
        total = torch.sqrt(sum((g**2).sum() for g in expected))
        expected = [g * min(1.0, 1.0 / (total.item() + 1e-6)) for g in expected]
    for moved, grad in zip(_one_step_update(sbs, x, y), expected):
        torch.testing.assert_close(moved, grad)
    sbs.remove_clip()
    raw = _raw_gradients(model, x, y)
    for moved, grad in zip(_one_step_update(sbs, x, y), raw):
        torch.testing.assert_close(moved, grad)


def test_clip_values_must_be_positive():
    sbs = _validated_trainer()
    with pytest.raises(ValueError, match="clip_value must be a positive number"):
        sbs.set_clip_grad_value(0)
    with pytest.raises(ValueError, match="max_norm"):
        sbs.set_clip_grad_norm(-1.0)


def test_clip_backprop_clamps_gradients_as_they_are_computed_and_can_be_removed():
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    x, y = 10 * torch.randn(8, 3), torch.randn(8, 2)
    raw = _raw_gradients(model, x, y)
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=1.0), device="cpu")
    sbs.set_clip_backprop(0.1)
    sbs.set_clip_backprop(0.5)  # replaces the hooks rather than stacking a second clamp
    for clipped, gradient in zip(_raw_gradients(model, x, y), raw):
        torch.testing.assert_close(clipped, gradient.clamp(-0.5, 0.5))
    before = [p.detach().clone() for p in model.parameters()]
    sbs.set_loaders([(x, y)])
    sbs.train(1, progress=False)
    for old, new, gradient in zip(before, model.parameters(), raw):
        torch.testing.assert_close(old - new.detach(), gradient.clamp(-0.5, 0.5))
    sbs.remove_clip()
    for unclipped, gradient in zip(_raw_gradients(model, x, y), _raw_gradients(model, x, y)):
        torch.testing.assert_close(unclipped, gradient)
    assert any(g.abs().max() > 0.5 for g in _raw_gradients(model, x, y))
    with pytest.raises(ValueError, match="clip_value must be a positive number"):
        sbs.set_clip_backprop(-1)


# ----------------------------------------------------------------------------- hooks
class _TupleLayer(nn.Module):
    """A layer that returns a tuple, like nn.MultiheadAttention's (output, weights)."""

    def forward(self, x):
        return x * 2, None


class _WithTuple(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)
        self.pair = _TupleLayer()

    def forward(self, x):
        doubled, _ = self.pair(self.linear(x))
        return doubled


def test_hooks_record_outputs_in_eval_mode_including_tuples(device):
    torch.manual_seed(0)
    model = _WithTuple()
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1), device=device)
    sbs.attach_hooks(["linear", "pair"])
    x1, x2 = torch.randn(4, 3), torch.randn(2, 3)
    sbs.predict(x1)
    sbs.predict(x2)
    expected = model.linear(torch.cat([x1, x2]).to(sbs.device)).detach().cpu().numpy()  # where the trainer put it
    np.testing.assert_allclose(sbs.visualization["linear"], expected, rtol=1e-6)
    doubled, nothing = sbs.visualization["pair"]
    np.testing.assert_allclose(doubled, 2 * expected, rtol=1e-6)
    assert nothing is None
    sbs.remove_hooks()
    sbs.predict(x1)
    assert sbs.visualization["linear"].shape == (6, 3)  # nothing recorded after removal


def test_hooks_skip_training_passes_and_reject_unknown_layers():
    sbs = _validated_trainer()
    sbs.attach_hooks(["0"])
    sbs.set_loaders(sbs.train_loader)  # no validation: every forward pass is a training one
    sbs.train(1, progress=False)
    assert sbs.visualization["0"] is None
    with pytest.raises(ValueError, match=r"no layer named \['nope'\].*0, 1, 2, 3"):
        sbs.attach_hooks(["nope"])


def test_custom_hook_fn_is_registered():
    sbs = _validated_trainer()
    seen = []
    sbs.attach_hooks(["3"], hook_fn=lambda module, inputs, outputs: seen.append(outputs.shape))
    sbs.predict(torch.randn(5, 3))
    assert seen == [torch.Size([5, 1])]


def test_hooks_keep_every_batch_of_layers_returning_containers():
    Pair = namedtuple("Pair", ["doubled", "nothing"])
    wrappers = {"tuple": lambda d: (d, None), "list": lambda d: [d, None],
                "dict": lambda d: {"doubled": d, "nothing": None}, "namedtuple": lambda d: Pair(d, None)}

    class Wrapping(nn.Module):
        def __init__(self, kind):
            super().__init__()
            self.wrap = wrappers[kind]

        def forward(self, x):
            return self.wrap(2 * x)

    class Model(nn.Module):
        def __init__(self, kind):
            super().__init__()
            self.linear = nn.Linear(3, 3)
            self.wrapping = Wrapping(kind)

        def forward(self, x):
            out = self.wrapping(self.linear(x))
            return out["doubled"] if isinstance(out, dict) else out[0]

    x1, x2 = torch.randn(4, 3), torch.randn(2, 3)
    for kind in wrappers:
        torch.manual_seed(0)
        model = Model(kind)
        sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1), device="cpu")
        sbs.attach_hooks("wrapping")
        sbs.predict(x1)
        sbs.predict(x2)
        recorded = sbs.visualization["wrapping"]
        expected = 2 * model.linear(torch.cat([x1, x2])).detach().numpy()  # (6, 3)
        assert type(recorded) is type(wrappers[kind](None)), kind
        doubled = recorded["doubled"] if kind == "dict" else recorded[0]
        nothing = recorded["nothing"] if kind == "dict" else recorded[1]
        np.testing.assert_allclose(doubled, expected, rtol=1e-6, err_msg=kind)
        assert nothing is None


# ----------------------------------------------------------------------------- the learning-rate range test
def _states(sbs):
    return ({k: v.clone() for k, v in sbs.model.state_dict().items()},
            {k: {n: t.clone() for n, t in s.items()} for k, s in sbs.optimizer.state_dict()["state"].items()},
            [dict((k, v) for k, v in g.items() if k != "params") for g in sbs.optimizer.param_groups])


def test_lr_range_test_sweeps_geometrically_and_restores_everything():
    sbs = _trainer(lr=1e-4)
    sbs.train(1, progress=False)  # momentum buffers exist now
    sbs.model.train()
    sbs.model[1].eval()  # a submodule in its own mode
    weights, buffers, groups = _states(sbs)
    tracking, fig = sbs.lr_range_test(sbs.train_loader, end_lr=1.0, num_iter=9)
    np.testing.assert_allclose(tracking["lr"], np.geomspace(1e-4, 1.0, 9), rtol=1e-9)
    assert len(tracking["loss"]) == 9
    assert isinstance(fig, Figure) and fig.axes[0].get_xscale() == "log"
    after_weights, after_buffers, after_groups = _states(sbs)
    assert all(torch.equal(weights[k], after_weights[k]) for k in weights)
    assert all(torch.equal(buffers[i][n], after_buffers[i][n]) for i in buffers for n in buffers[i])
    assert groups == after_groups
    assert sbs.model.training and not sbs.model[1].training
    assert all(p.grad is None for p in sbs.model.parameters())


def test_lr_range_test_honours_the_linear_step_mode_and_smooths_the_loss():
    sbs = _trainer(nn.Linear(3, 1), lr=0.01, momentum=0.0)  # no dropout: the same data give the same losses
    sbs.train_loader.generator.manual_seed(0)
    tracking, fig = sbs.lr_range_test(sbs.train_loader, end_lr=0.05, num_iter=5, step_mode="linear", alpha=1)
    np.testing.assert_allclose(tracking["lr"], [0.01, 0.02, 0.03, 0.04, 0.05])
    assert fig.axes[0].get_xscale() == "linear"
    sbs.train_loader.generator.manual_seed(0)
    smooth, _ = sbs.lr_range_test(sbs.train_loader, end_lr=0.05, num_iter=5, step_mode="linear", alpha=0.5)
    raw = tracking["loss"]
    expected = [raw[0]]
    for value in raw[1:]:
        expected.append(0.5 * value + 0.5 * expected[-1])
    np.testing.assert_allclose(smooth["loss"], expected, rtol=1e-5)


def test_lr_range_test_zeroes_stale_gradients_every_step():
    def run(stale):
        sbs = _trainer(nn.Linear(3, 1), lr=0.01, momentum=0.0)
        sbs.train_loader.generator.manual_seed(0)
        if stale:
            for p in sbs.model.parameters():
                p.grad = torch.full_like(p, 1e3)  # left over from earlier work
        tracking, _ = sbs.lr_range_test(sbs.train_loader, end_lr=0.1, num_iter=4, alpha=1)
        return tracking["loss"]

    assert run(stale=True) == run(stale=False)


def test_lr_range_test_draws_on_a_given_axes_and_stops_at_a_non_finite_loss():
    import matplotlib.pyplot as plt

    sbs = _trainer(lr=0.01)
    fig, ax = plt.subplots()
    calls = {"n": 0}
    mse = nn.MSELoss()

    def explodes(prediction, y):
        calls["n"] += 1
        return mse(prediction, y) * (float("inf") if calls["n"] == 4 else 1)

    sbs.loss_fn = explodes
    tracking, returned = sbs.lr_range_test(sbs.train_loader, end_lr=1.0, num_iter=10, ax=ax)
    assert returned is fig and len(ax.lines) == 1
    assert len(tracking["lr"]) == len(tracking["loss"]) == 3


def test_lr_range_test_checks_its_arguments():
    sbs = _trainer()
    with pytest.raises(ValueError, match="step_mode must be one of 'exp', 'linear', got 'log'"):
        sbs.lr_range_test(sbs.train_loader, end_lr=1.0, step_mode="log")
    with pytest.raises(TypeError, match="num_iter must be a positive int"):
        sbs.lr_range_test(sbs.train_loader, end_lr=1.0, num_iter=2.5)
    with pytest.raises(ValueError, match="end_lr must be a positive number"):
        sbs.lr_range_test(sbs.train_loader, end_lr=0)
    with pytest.raises(ValueError, match="yielded no batches"):
        sbs.lr_range_test([], end_lr=1.0)


# ----------------------------------------------------------------------------- captured gradients and parameters
def test_capture_gradients_records_every_steps_gradient_per_parameter():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    raw = _raw_gradients(model, x, y)
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1), device="cpu")
    sbs.capture_gradients("0")
    sbs.set_loaders([(x, y)])
    sbs.train(3, progress=False)
    assert set(sbs._gradients) == {"0"} and set(sbs._gradients["0"]) == {"weight", "bias"}
    assert len(sbs._gradients["0"]["weight"]) == 3  # one per step; validation adds none
    np.testing.assert_allclose(sbs._gradients["0"]["weight"][0], raw[0].numpy(), rtol=1e-6)
    assert not np.allclose(sbs._gradients["0"]["weight"][0], sbs._gradients["0"]["weight"][2])
    sbs.capture_gradients(["2"])  # a new call starts over, and the old hooks are gone
    sbs.train(1, progress=False)
    assert set(sbs._gradients) == {"2"} and len(sbs._gradients["2"]["bias"]) == 1
    sbs.remove_hooks()
    sbs.train(1, progress=False)
    assert len(sbs._gradients["2"]["bias"]) == 1


def test_capture_parameters_records_the_values_each_training_step_starts_from():
    sbs = _trainer(lr=0.1, momentum=0.0)
    sbs.set_loaders(sbs.train_loader, DataLoader(sum_dataset(16, seed=1, noise=0.0), batch_size=8))
    initial = sbs.model[3].weight.detach().clone().numpy()
    sbs.capture_parameters(["3"])
    sbs.train(2, progress=False)
    recorded = sbs._parameters["3"]
    assert set(recorded) == {"weight", "bias"}
    assert len(recorded["weight"]) == 8  # 4 training steps an epoch; validation passes are not steps
    np.testing.assert_array_equal(recorded["weight"][0], initial)
    assert not np.array_equal(recorded["weight"][1], initial)
    with pytest.raises(ValueError, match=r"no layer named \['nope'\]"):
        sbs.capture_parameters(["nope"])


# ----------------------------------------------------------------------------- set_optimizer
def test_set_optimizer_swaps_the_optimizer_and_drops_the_old_scheduler():
    sbs = _trainer()
    sbs.set_lr_scheduler(torch.optim.lr_scheduler.StepLR(sbs.optimizer, step_size=1))
    adam = torch.optim.Adam(sbs.model.parameters(), lr=0.003)
    sbs.set_optimizer(adam)
    assert sbs.optimizer is adam and sbs.scheduler is None
    sbs.train(1, progress=False)
    assert sbs.learning_rates == [0.003] * 4 and adam.state
    with pytest.raises(ValueError, match="not parameters of this model"):
        sbs.set_optimizer(torch.optim.SGD(nn.Linear(1, 1).parameters(), lr=0.1))
    with pytest.raises(TypeError, match="optimizer must be a torch.optim.Optimizer, got str"):
        sbs.set_optimizer("adam")


# ----------------------------------------------------------------------------- normalising images
def _images():
    """4 images of 2 channels: channel 0 is constant per image, channel 1 alternates 0 and 2."""
    images = torch.zeros(4, 2, 2, 2)
    images[:, 0] = torch.tensor([1.0, 2.0, 3.0, 4.0])[:, None, None]
    images[:, 1] = torch.tensor([[0.0, 2.0], [2.0, 0.0]])
    return images


def test_statistics_per_channel_counts_and_sums_means_and_stds():
    stats = StepByStep.statistics_per_channel(_images(), torch.zeros(4))
    std = torch.tensor([0.0, 2.0, 2.0, 0.0]).std().item()  # one image's channel 1
    torch.testing.assert_close(stats, torch.tensor([[4.0, 4.0], [10.0, 4.0], [0.0, 4 * std]]))


def test_make_normalizer_averages_over_the_loader_and_standardises_per_channel():
    images = _images()
    images[:, 0] += torch.tensor([[0.0, 1.0], [1.0, 0.0]])  # give channel 0 a spread too
    loader = DataLoader(TensorDataset(images, torch.zeros(4)), batch_size=3)
    normalizer = StepByStep.make_normalizer(loader)
    assert isinstance(normalizer, ChannelNormalizer)
    torch.testing.assert_close(normalizer.mean, images.mean(dim=(2, 3)).mean(dim=0))
    torch.testing.assert_close(normalizer.std, images.reshape(4, 2, -1).std(dim=2).mean(dim=0))
    batch = normalizer(images)  # (4, 2, 2, 2)
    single = normalizer(images[0])  # (2, 2, 2)
    torch.testing.assert_close(single, batch[0])
    torch.testing.assert_close(batch[:, 1], (images[:, 1] - 1.0) / normalizer.std[1])
    assert "mean=" in repr(normalizer)


def test_channel_normalizer_checks_its_statistics_and_inputs():
    with pytest.raises(ValueError, match=r"std must be positive in every channel, got \[1.0, 0.0\]"):
        ChannelNormalizer([0.0, 0.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="one value per channel each, got 2 and 3"):
        ChannelNormalizer([0.0, 0.0], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"images must be a 3-D or 4-D tensor, got shape \(2, 2\)"):
        ChannelNormalizer([0.0], [1.0])(torch.zeros(2, 2))


# ----------------------------------------------------------------------------- filters and outputs
class _Convolutional(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, kernel_size=3, padding=1)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(3 * 5 * 5, 4)

    def forward(self, x):
        return self.fc(self.flatten(self.conv(x)))


def _conv_trainer():
    torch.manual_seed(0)
    model = _Convolutional()
    return StepByStep(model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1), device="cpu")


def test_visualize_filters_draws_one_image_per_filter_and_channel():
    sbs = _conv_trainer()
    fig = sbs.visualize_filters("conv", cmap="viridis")
    assert isinstance(fig, Figure) and len(fig.axes) == 3 * 2
    first = fig.axes[0].images[0]
    np.testing.assert_allclose(first.get_array(), sbs.model.conv.weight[0, 0].detach().numpy())
    assert first.get_cmap().name == "viridis"
    assert fig.axes[0].get_title() == "channel #0" and fig.axes[2].get_ylabel() == "conv\nfilter #1"
    with pytest.raises(TypeError, match="an nn.Conv2d layer; 'fc' is a Linear"):
        sbs.visualize_filters("fc")
    with pytest.raises(ValueError, match=r"no layer named \['conv2'\]"):
        sbs.visualize_filters("conv2")


def test_visualize_outputs_draws_a_row_per_channel_and_a_column_per_image():
    sbs = _conv_trainer()
    sbs.attach_hooks(["conv", "fc"])
    x = torch.randn(6, 2, 5, 5)
    yhat = sbs.predict(x).argmax(axis=1)
    fig = sbs.visualize_outputs(["conv", "fc"], n_images=4, y=torch.tensor([0, 1, 2, 3, 0, 1]), yhat=yhat)
    axes = np.array(fig.axes).reshape(3 + 1, 4)  # 3 channels of conv, 1 row for the fc vectors
    np.testing.assert_allclose(axes[1, 2].images[0].get_array(), sbs.visualization["conv"][2, 1])
    assert axes[3, 0].images[0].get_array().shape == (1, 4)  # a vector drawn as a strip
    assert axes[0, 1].get_title() == f"image #1\nlabel 1\npred {yhat[1]}"
    assert axes[2, 0].get_ylabel() == "conv\nchannel #2" and axes[3, 0].get_ylabel() == "fc"
    assert len(sbs.visualize_outputs("conv", n_images=50).axes) == 3 * 6  # at most the images recorded
    with pytest.raises(ValueError, match=r"to draw for \['flatten'\].*recorded so far: \['conv', 'fc'\]"):
        sbs.visualize_outputs(["flatten"])


def test_output_grid_refuses_outputs_it_cannot_draw():
    with pytest.raises(ValueError, match=r"must be \(N, F\), \(N, H, W\) or \(N, C, H, W\), got shape \(2,\)"):
        output_grid({"scores": np.zeros(2)})


# ----------------------------------------------------------------------------- add_graph
def test_add_graph_traces_the_first_training_batch_into_the_writer():
    class Writer:
        def __init__(self):
            self.graphs = []

        def add_graph(self, model, x):
            self.graphs.append((model, x))

    sbs = _trainer()
    with pytest.raises(RuntimeError, match="call set_tensorboard"):
        sbs.add_graph()
    sbs.writer = Writer()
    sbs.add_graph()
    model, x = sbs.writer.graphs[0]
    assert model is sbs.model and x.shape == (16, 3) and x.device.type == sbs.device.type
    sbs.train_loader = None
    with pytest.raises(RuntimeError, match="set_loaders"):
        sbs.add_graph()


def test_tensorboard_missing_gives_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    with pytest.raises(ImportError, match="pip install tensorboard"):
        _validated_trainer().set_tensorboard("run")


# ----------------------------------------------------------------------------- the book's checkpoints
def _book_checkpoint(sbs, val_losses):
    """The dict the book's save_checkpoint writes: NumPy float64 losses, no scheduler, rates or streams."""
    return {
        "epoch": 3,
        "model_state_dict": sbs.model.state_dict(),
        "optimizer_state_dict": sbs.optimizer.state_dict(),
        "loss": [np.float64(0.5), np.float64(0.25), np.float64(0.125)],
        "val_loss": val_losses,
    }


def _as_numpy1_file(path):
    """Rewrite a torch.save file so its pickle names NumPy's scalar reconstructor as NumPy 1 did."""
    source = zipfile.ZipFile(io.BytesIO(path.read_bytes()))
    rewritten = io.BytesIO()
    with zipfile.ZipFile(rewritten, "w", zipfile.ZIP_STORED) as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename.endswith("data.pkl"):
                assert b"numpy._core.multiarray\nscalar" in data
                data = data.replace(b"numpy._core.multiarray\nscalar", b"numpy.core.multiarray\nscalar")
            target.writestr(item, data)
    path.write_bytes(rewritten.getvalue())


@pytest.mark.parametrize("numpy_names", ["numpy2", "numpy1"])
@pytest.mark.parametrize("val_losses", [[np.float64(0.6), np.float64(0.3), np.float64(0.2)], [None, None, None]],
                         ids=["validated", "without-validation"])
def test_a_checkpoint_written_by_the_books_class_loads_and_training_continues(tmp_path, val_losses, numpy_names):
    book = _validated_trainer(seed=3)
    path = tmp_path / "book.pt"
    torch.save(_book_checkpoint(book, val_losses), path)
    if numpy_names == "numpy1":
        _as_numpy1_file(path)

    sbs = _validated_trainer()
    sbs.set_lr_scheduler(torch.optim.lr_scheduler.StepLR(sbs.optimizer, step_size=1, gamma=0.5))
    sbs.load_checkpoint(path)
    assert sbs.total_epochs == 3
    assert sbs.losses == [0.5, 0.25, 0.125] and all(type(loss) is float for loss in sbs.losses)
    assert sbs.val_losses == ([0.6, 0.3, 0.2] if val_losses[0] is not None else [])
    assert sbs.learning_rates == []
    for loaded, written in zip(sbs.model.parameters(), book.model.parameters()):
        assert torch.equal(loaded, written)
    sbs.train(1, progress=False)
    assert sbs.total_epochs == 4 and len(sbs.losses) == 4 and len(sbs.learning_rates) == 4
    with pytest.raises(ValueError, match=r"lacks \['learning_rates', 'rng_state', 'callbacks', 'steps', 'open_epoch'\] "
                                         r"\(the book's files load with stepbystep.book.training.StepByStep\)"):
        stepbystep.StepByStep(sbs.model, sbs.loss_fn, sbs.optimizer).load_checkpoint(path)  # the core does not


def test_a_file_that_is_neither_checkpoint_is_refused_before_anything_changes(tmp_path):
    sbs = _validated_trainer()
    sbs.train(1, progress=False)
    weights = [p.detach().clone() for p in sbs.model.parameters()]
    partial = _book_checkpoint(sbs, [None] * 3)
    del partial["val_loss"]
    torch.save(partial, tmp_path / "partial.pt")
    with pytest.raises(ValueError, match=r"not a StepByStep checkpoint: it lacks \['val_loss', 'learning_rates'"):
        sbs.load_checkpoint(tmp_path / "partial.pt")
    assert sbs.total_epochs == 1 and len(sbs.losses) == 1
    assert all(torch.equal(a, b) for a, b in zip(weights, sbs.model.parameters()))


def test_numpy_arrays_and_other_objects_are_still_refused(tmp_path):
    sbs = _validated_trainer()
    checkpoint = _book_checkpoint(sbs, [None] * 3)
    checkpoint["loss"] = np.array([0.5, 0.25, 0.125])  # an array, not a scalar
    torch.save(checkpoint, tmp_path / "array.pt")
    with pytest.raises(pickle.UnpicklingError, match="refusing to load"):
        sbs.load_checkpoint(tmp_path / "array.pt")
    checkpoint["loss"] = [Fraction(1, 2)]  # any other class
    torch.save(checkpoint, tmp_path / "object.pt")
    with pytest.raises(pickle.UnpicklingError, match="refusing to load"):
        sbs.load_checkpoint(tmp_path / "object.pt")


# ----------------------------------------------------------------------------- trained numbers: the book's loop
def _tiny_transformer():
    """A one-layer encoder-decoder on the square corners, dropout on: every random stream is used."""
    from stepbystep.models import DecoderLayer, DecoderTransf, EncoderDecoderTransf, EncoderLayer, EncoderTransf

    torch.manual_seed(42)
    encoder = EncoderTransf(EncoderLayer(n_heads=2, d_model=4, ff_units=8, dropout=0.1), n_layers=1)
    decoder = DecoderTransf(DecoderLayer(n_heads=2, d_model=4, ff_units=8, dropout=0.1), n_layers=1)
    model = EncoderDecoderTransf(encoder, decoder, input_len=2, target_len=2, n_features=2)
    for p in model.parameters():  # the book's chapter-10 initialisation
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    return model


def _square_loaders():
    from stepbystep.data import square_datasets

    train_data, test_data = square_datasets(n_train=64, n_test=32, train_seed=13, test_seed=17)
    generator = torch.Generator()  # the book's loader: shuffled with its own generator
    return DataLoader(train_data, batch_size=16, shuffle=True, generator=generator), DataLoader(test_data, batch_size=16)


def _reference_training(epochs_per_call, seed=42):
    """The book's training loop written out in plain PyTorch: every call reseeds every stream.

    Seeds as the book's ``set_seed``: PyTorch, NumPy, Python and the loader's generator; then per
    epoch a training pass (train mode, forward, loss, backward, step, zero the gradients) and a
    validation pass (eval mode, no gradients), each loss the mean of its batch losses.
    """
    import random

    model = _tiny_transformer()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    train_loader, val_loader = _square_loaders()
    loss_fn = nn.MSELoss()
    losses, val_losses = [], []
    for n_epochs in epochs_per_call:
        torch.manual_seed(seed)
        np.random.seed(seed)
        random.seed(seed)
        train_loader.generator.manual_seed(seed)
        for _ in range(n_epochs):
            batch_losses = []
            for x, y in train_loader:
                model.train()
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                batch_losses.append(loss.item())
            losses.append(np.mean(batch_losses))
            with torch.no_grad():
                model.eval()
                val_losses.append(np.mean([loss_fn(model(x), y).item() for x, y in val_loader]))
    return model, losses, val_losses


def _trained_with_stepbystep(epochs_per_call, seed=42):
    model = _tiny_transformer()
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.Adam(model.parameters(), lr=0.01), device="cpu")
    sbs.set_loaders(*_square_loaders())
    for n_epochs in epochs_per_call:
        sbs.train(n_epochs, seed=seed, progress=False)  # an explicit seed reseeds, as the book's train does
    return model, sbs.losses, sbs.val_losses


@pytest.mark.parametrize("epochs_per_call", [[3], [2, 1]])
def test_training_gives_the_numbers_of_the_books_loop(epochs_per_call):
    """Same seed, same loader generator, same steps: the same losses and weights, to 1e-6.

    The book's ``train(n, seed=42)`` reseeds at every call; ``train(n, seed=42)`` does too here.
    """
    ours, losses, val_losses = _trained_with_stepbystep(epochs_per_call)
    reference, expected, expected_val = _reference_training(epochs_per_call)
    assert len(losses) == len(val_losses) == 3
    np.testing.assert_allclose(losses, expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(val_losses, expected_val, rtol=0, atol=1e-6)
    for (name, p), q in zip(ours.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-6, msg=name)
    assert losses[-1] < losses[0]  # it did train
