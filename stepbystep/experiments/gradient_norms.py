"""Gradient norms per layer of an encoder stack, at initialisation and over its first training steps.

The experiment of chapter 04: how big is the gradient that reaches each layer of a stack of
``EncoderLayer``s, with the layer norm before each sublayer (norm-first) or after the residual
sum (norm-last), and what happens to training when the first steps use the full learning rate
or warm up to it.

The task is the square-corners one (``square_datasets``): an encoder-only model reads the first
two corners, projected to ``d_model``, and predicts the last two from its two output positions.
Training is full-batch (every step sees the same ``n_samples`` sequences) and dropout-free, so
the only differences between two runs are the ones asked for.
"""
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..checks import check_non_negative_int, check_positive_int, check_positive_number
from ..data import square_datasets
from ..devices import torch_threads
from ..models import EncoderLayer, EncoderTransf
from ..seeding import get_rng_state
from ..training import Callback, StepByStep
from ..training.schedules import warmup

__all__ = ["GradientNormRun", "layer_gradient_norms", "encoder_regressor", "layer_norms_of_gradients"]


@dataclass(frozen=True)
class GradientNormRun:
    """What ``layer_gradient_norms`` measured.

    Attributes:
        norms: ``(steps, n_layers)``: the L2 norm of each layer's gradient (all its parameters
            together) at every step; row 0 is at initialisation, before any update.
        losses: ``(steps,)``: the training loss at every step (before that step's update).
        learning_rates: ``(steps,)``: the learning rate each step's update used.
        norm_first: where the layer norms sat.
        warmup_steps: how many steps the learning rate took to reach its peak (0: none).
    """

    norms: np.ndarray
    losses: np.ndarray
    learning_rates: np.ndarray
    norm_first: bool
    warmup_steps: int

    @property
    def n_layers(self):
        return self.norms.shape[1]

    @property
    def label(self):
        placement = "norm-first" if self.norm_first else "norm-last"
        warmup = f"warm-up {self.warmup_steps} steps" if self.warmup_steps else "no warm-up"
        return f"{placement}, {warmup}"


def encoder_regressor(n_layers, norm_first, d_model=16, n_heads=2, ff_units=32, n_features=2, seq_len=2):
    """Features ``(N, seq_len, n_features)`` -> ``d_model`` -> a stack of encoder layers -> features.

    An ``nn.Sequential`` of the input projection, ``EncoderTransf`` (``n_layers`` deep copies of
    a dropout-free ``EncoderLayer``; a final norm when norm-first) and the output layer; its
    item ``[1]`` is the encoder, whose ``layers`` are the ones ``layer_gradient_norms`` measures.
    """
    layer = EncoderLayer(n_heads, d_model, ff_units, dropout=0.0, norm_first=norm_first)
    encoder = EncoderTransf(layer, n_layers, max_len=seq_len)
    return nn.Sequential(nn.Linear(n_features, d_model), encoder, nn.Linear(d_model, n_features))


def layer_norms_of_gradients(layers):
    """The L2 norm of each module's gradient, all its parameters together: a list of floats.

    Call it after ``backward``; parameters without a gradient count as zero.
    """
    norms = []
    for layer in layers:
        squares = [p.grad.pow(2).sum() for p in layer.parameters() if p.grad is not None]
        norms.append(float(torch.stack(squares).sum().sqrt()) if squares else 0.0)
    return norms


class _LayerGradients(Callback):
    """Records each layer's gradient norm once it is computed, and each step's loss."""

    def __init__(self, layers):
        self.layers, self.norms, self.losses = layers, [], []

    def on_after_backward(self, trainer):
        self.norms.append(layer_norms_of_gradients(self.layers))

    def on_batch_end(self, trainer, epoch, batch_index, loss):
        self.losses.append(loss)


def layer_gradient_norms(n_layers=6, norm_first=True, steps=50, lr=0.03, warmup_steps=0,
                         d_model=16, n_heads=2, ff_units=32, n_samples=64, seed=0):
    """Train a stack of ``n_layers`` encoder layers for ``steps`` steps, recording gradient norms.

    Adam at learning rate ``lr`` on the mean squared error, through ``StepByStep.train_steps`` (one
    full batch a step, on the CPU). With ``warmup_steps`` > 0 step ``k`` (from 0) uses
    ``lr * min(1, (k + 1) / warmup_steps)``: a linear rise from ``lr / warmup_steps`` that reaches
    ``lr`` at step ``warmup_steps - 1`` and stays there (``training.schedules.warmup``).

    The model is built from ``seed`` (the same weights for both placements of a given size;
    the global RNG is left as it was) and trained on the first ``n_samples`` training sequences
    of the square-corners task. Returns a ``GradientNormRun``; ``norms[0]`` is the gradient at
    initialisation.
    """
    check_positive_int("n_layers", n_layers)
    check_positive_int("steps", steps)
    check_non_negative_int("warmup_steps", warmup_steps)
    check_positive_int("n_samples", n_samples)
    check_positive_number("lr", lr)
    train_data, _ = square_datasets(n_train=n_samples)
    full, target = train_data.tensors  # (n, 4, 2), (n, 2, 2)
    source = full[:, :2]  # (n, 2, 2): the first two corners
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = encoder_regressor(n_layers, norm_first, d_model, n_heads, ff_units)
    record = _LayerGradients(model[1].layers)
    trainer = StepByStep(model, nn.functional.mse_loss, torch.optim.Adam(model.parameters(), lr=lr), device="cpu",
                         callbacks=[record])
    if warmup_steps:
        trainer.set_lr_scheduler(warmup(trainer.optimizer, warmup_steps), interval="batch")
    batches = [(source, target)]  # one full batch a step: prediction (n, 2, 2)
    trainer.set_loaders(batches)
    trainer.rng_state = get_rng_state()  # no seeding: the global streams are left as they were
    with torch_threads(1):  # tiny tensors: threads would only wait for each other
        trainer.train_steps(steps, progress=False)
    return GradientNormRun(np.array(record.norms), np.array(record.losses), np.array(trainer.learning_rates),
                           bool(norm_first), warmup_steps)
