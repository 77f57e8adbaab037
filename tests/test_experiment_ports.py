"""The experiments train through StepByStep: each gives, to the bit, what its own hand-written loop
gave before (the loops are kept here as references), so seed studies made with either agree."""
import copy

import numpy as np
import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR, LinearLR, OneCycleLR, SequentialLR
from torch.utils.data import DataLoader

from stepbystep.data import bar_datasets, completion_vocab, date_datasets, square_datasets
from stepbystep.data.date_completions import IGNORE_INDEX, CompletionDataset, completion_collate
from stepbystep.data.repeated_sequences import repeated_sequences
from stepbystep.experiments import design_choices, gradient_norms, induction, todays_block, vit_positions
from stepbystep.interpret import half_losses, head_scores, per_position_loss
from stepbystep.models import DecoderOnlyTransformer
from stepbystep.models.gpt.model import completion_loss


def _same_parameters(model, other):
    for (name, p), q in zip(model.named_parameters(), other.parameters()):
        assert torch.equal(p, q), name


# ----------------------------------------------------------------------------- chapter 04
def _gradient_norms_loop(n_layers, norm_first, steps, lr, warmup_steps, seed):
    full, target = square_datasets(n_train=16)[0].tensors
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = gradient_norms.encoder_regressor(n_layers, norm_first, d_model=8, ff_units=8)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup_steps)) if warmup_steps else None
    norms, losses, rates = [], [], []
    model.train()
    for _ in range(steps):
        loss = nn.functional.mse_loss(model(full[:, :2]), target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norms.append(gradient_norms.layer_norms_of_gradients(model[1].layers))
        losses.append(loss.item())
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
    return np.array(norms), np.array(losses), np.array(rates)


def test_layer_gradient_norms_is_its_old_loop():
    for norm_first, warmup_steps in ((True, 0), (False, 4)):
        torch.manual_seed(0)
        run = gradient_norms.layer_gradient_norms(n_layers=3, norm_first=norm_first, steps=9, lr=0.03,
                                                  warmup_steps=warmup_steps, d_model=8, ff_units=8, n_samples=16,
                                                  seed=2)
        norms, losses, rates = _gradient_norms_loop(3, norm_first, 9, 0.03, warmup_steps, seed=2)
        np.testing.assert_array_equal(run.norms, norms)
        np.testing.assert_array_equal(run.losses, losses)
        np.testing.assert_array_equal(run.learning_rates, rates)


# ----------------------------------------------------------------------------- chapter 09
def _train_steps_loop(model, loader, n_steps, lr, warmup_steps, val_batch, eval_every):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    warmup_steps = min(warmup_steps, n_steps - 1) or 1
    scheduler = SequentialLR(optimizer, [
        LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps),
        LinearLR(optimizer, start_factor=1.0, end_factor=0.0, total_iters=max(n_steps - warmup_steps, 1)),
    ], milestones=[warmup_steps])
    steps, val_losses = [], []

    def record(step):
        if step % eval_every == 0 or step == n_steps:
            steps.append(step)
            with torch.no_grad():
                model.eval()
                val_losses.append(completion_loss(model(val_batch[0]), val_batch[1]).item())
                model.train()

    record(0)
    step = 0
    model.train()
    while step < n_steps:
        for x, y in loader:
            loss = completion_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            step += 1
            record(step)
            if step == n_steps:
                break
    model.eval()
    return steps, val_losses


def test_design_choices_train_steps_is_its_old_loop():
    train_pairs, val_pairs = date_datasets(n_train=96, n_val=16, seed=0)
    vocab = completion_vocab(train_pairs)
    val_batch = completion_collate(list(CompletionDataset(val_pairs, vocab)))
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(len(vocab), d_model=16, n_heads=2, ff_units=32, n_layers=1, dropout=0.1, max_len=48)
    reference = copy.deepcopy(model)
    results = []
    for trained in (model, reference):
        torch.manual_seed(1)  # the same global stream (dropout) for both
        loader = design_choices._loader(train_pairs, vocab, batch_size=32, seed=3)  # 3 batches: 7 steps cross 2 epochs
        if trained is model:
            results.append(design_choices.train_steps(model, loader, 7, warmup_steps=3, val_batch=val_batch,
                                                      eval_every=3))
        else:
            results.append(_train_steps_loop(reference, loader, 7, 7e-3, 3, val_batch, eval_every=3))
        results.append(torch.rand(2))  # and the global stream after
    assert results[0] == results[2] and results[0][0] == [0, 3, 6, 7]
    assert torch.equal(results[1], results[3])
    _same_parameters(model, reference)


# ----------------------------------------------------------------------------- chapter 12
def _train_block_loop(config, seed, train, val, steps, batch_size, lr, warmup):
    torch.manual_seed(seed)
    model = config.build()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, fused=True)
    schedule = LambdaLR(optimizer, lambda step: min((step + 1) / warmup, (steps - step) / max(steps - warmup, 1)))
    train_x, train_y = train
    order = torch.randperm(len(train_x), generator=torch.Generator().manual_seed(100 + seed))
    model.train()
    for step in range(steps):
        start = step * batch_size % len(train_x)
        rows = order[start:start + batch_size]
        x, y = train_x[rows], train_y[rows]
        length = int((y != IGNORE_INDEX).nonzero()[:, 1].max()) + 1
        loss = completion_loss(model(x[:, :length]), y[:, :length])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    model.eval()
    val_x, val_y = val
    with torch.no_grad():
        logits = model(val_x)
    counted = val_y != IGNORE_INDEX
    accuracy = (logits.argmax(dim=-1)[counted] == val_y[counted]).float().mean()
    return completion_loss(logits, val_y).item(), accuracy.item()


def test_train_block_is_its_old_loop():
    vocab, train, val = todays_block.date_streams(n_train=64, n_val=16)
    configs = todays_block.block_configs(len(vocab), d_model=16, n_heads=2, n_layers=1)
    for name, steps in (("2017 block", 9), ("+ RoPE", 5)):  # 9 steps of 16 wrap the 64 streams; 5 < warm-up
        recipe = dict(steps=steps, batch_size=16, lr=1e-2, warmup=6)
        assert todays_block.train_block(configs[name], 1, train, val, **recipe) == \
            _train_block_loop(configs[name], 1, train, val, **recipe)


# ----------------------------------------------------------------------------- chapter 13
def _repeats_loop(n_layers, seed, steps, batch_size, lr, probe, probe_every):
    model = induction.build_model(n_layers, seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    lengths = torch.randint(induction.MIN_LENGTH, induction.MAX_LENGTH + 1, (steps,),
                            generator=torch.Generator().manual_seed(seed))
    first, repeat, probes = torch.empty(steps), torch.empty(steps), []
    model.train()
    for step, length in enumerate(lengths.tolist()):
        if step % probe_every == 0:
            probes.append((step, *head_scores(model, probe)))
            model.train()
        ids = repeated_sequences(batch_size, length, induction.VOCAB_SIZE, seed=1 + seed * steps + step)
        logits = model(ids)
        loss = nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:])
        first[step], repeat[step] = half_losses(per_position_loss(logits.detach(), ids), length)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    probes.append((steps, *head_scores(model, probe)))
    return model, {"first": first, "repeat": repeat, "probe_steps": torch.tensor([p[0] for p in probes]),
                   "previous": torch.stack([p[1] for p in probes]), "induction": torch.stack([p[2] for p in probes])}


def test_train_on_repeats_is_its_old_loop():
    probe = repeated_sequences(4, 6, induction.VOCAB_SIZE, seed=0)
    model, history = induction.train_on_repeats(n_layers=2, seed=1, steps=12, batch_size=8, probe=probe, probe_every=4)
    reference, expected = _repeats_loop(2, 1, 12, 8, 1e-2, probe, probe_every=4)
    assert history.keys() == expected.keys() and history["probe_steps"].tolist() == [0, 4, 8, 12]
    for key in expected:
        assert history[key].dtype == expected[key].dtype and torch.equal(history[key], expected[key]), key
    _same_parameters(model, reference)


# ----------------------------------------------------------------------------- chapter 11
def _fit_loop(model, train_data, n_epochs, batch_size, lr, seed):
    images, labels = train_data.tensors
    n_batches = -(-len(labels) // batch_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = OneCycleLR(optimizer, max_lr=lr, total_steps=n_epochs * n_batches)
    generator = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(n_epochs):
        order = torch.randperm(len(labels), generator=generator)
        for batch in order.split(batch_size):
            loss = nn.functional.cross_entropy(model(images[batch]), labels[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
    return model.eval()


def test_fit_is_its_old_loop_and_leaves_the_global_stream_alone():
    train_data, _ = bar_datasets(n_train=40, n_val=8)
    for build in (vit_positions.small_vit, lambda seed, n_outputs: vit_positions.ShuffledPatches(
            vit_positions.small_vit(seed, n_outputs), seed)):
        model, reference = build(2, n_outputs=2), build(2, n_outputs=2)
        torch.manual_seed(5)
        vit_positions.fit(model, train_data, n_epochs=2, batch_size=16, seed=4)  # 3 batches an epoch, the last short
        after = torch.rand(2)
        torch.manual_seed(5)
        _fit_loop(reference, train_data, 2, 16, 1e-2, seed=4)
        assert torch.equal(after, torch.rand(2))
        _same_parameters(model, reference)
