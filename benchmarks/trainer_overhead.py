"""StepByStep.train against a hand-written PyTorch loop doing the same work.

Both train chapter 05's Transformer (d_model 6, 3 heads, ff 10, dropout 0.1, 2 layers) on the
squares from the same initial weights and seeds, validating every epoch. This tiny model makes
each step cheap, so any per-batch overhead of the trainer shows as clearly as it can. The
trainer keeps its progress bar on. Both runs must produce identical losses: same work.
"""
import contextlib
import io

import torch
from torch import nn
from torch.utils.data import DataLoader

from stepbystep import StepByStep, set_seed
from stepbystep.data import square_datasets
from stepbystep.devices import default_device
from stepbystep.models import build_transformer

from .timing import compare, ratio_row

GOAL = 1.05


def _chapter05_model():
    return build_transformer(seed=11)  # the book's chapter-10 settings, Xavier-initialised


def _loaders(n_train, n_test):
    train_data, test_data = square_datasets(n_train=n_train, n_test=n_test)
    train_loader = DataLoader(train_data, batch_size=16, shuffle=True, generator=torch.Generator())
    return train_loader, DataLoader(test_data, batch_size=16)


def hand_written_loop(model, optimizer, loss_fn, train_loader, val_loader, n_epochs, device):
    """The loop every PyTorch tutorial writes: train, then validate, once per epoch."""
    set_seed(42, train_loader)
    losses, val_losses = [], []
    for _ in range(n_epochs):
        model.train()
        batch_losses = []
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            batch_losses.append(loss.item())
        losses.append(sum(batch_losses) / len(batch_losses))
        model.eval()
        with torch.no_grad():
            batch_losses = [loss_fn(model(x.to(device)), y.to(device)).item() for x, y in val_loader]
        val_losses.append(sum(batch_losses) / len(batch_losses))
    return losses, val_losses


def run(quick=False):
    """Median time of one training run each way; returns the result rows."""
    n_epochs, n_train, n_test, repeats = (1, 32, 16, 1) if quick else (5, 256, 128, 5)
    device = default_device()
    train_loader, val_loader = _loaders(n_train, n_test)
    initial = _chapter05_model().state_dict()
    results = {}

    def with_trainer():
        model = _chapter05_model().to(device)
        model.load_state_dict(initial)
        sbs = StepByStep(model, nn.MSELoss(), torch.optim.Adam(model.parameters(), lr=0.01), device=device)
        sbs.set_loaders(train_loader, val_loader)
        with contextlib.redirect_stderr(io.StringIO()):  # the bar is drawn, just not shown here
            sbs.train(n_epochs, seed=42, progress=True)
        results["StepByStep"] = (sbs.losses, sbs.val_losses)

    def by_hand():
        model = _chapter05_model().to(device)
        model.load_state_dict(initial)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        results["hand-written loop"] = hand_written_loop(
            model, optimizer, nn.MSELoss(), train_loader, val_loader, n_epochs, device)

    medians = compare({"StepByStep": with_trainer, "hand-written loop": by_hand}, repeats=repeats)
    if results["StepByStep"] != results["hand-written loop"]:
        raise AssertionError("the trainer and the hand-written loop did different work: their losses differ")
    label = f"ch05 Transformer, {n_train} squares, batch 16, {n_epochs} epochs + validation"
    return [ratio_row(label, medians, "StepByStep", "hand-written loop", goal=GOAL)]
