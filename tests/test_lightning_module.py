"""StepByStepModule under lightning.Trainer gives StepByStep's numbers, epoch by epoch, and a Lightning
checkpoint loads back into a one-process StepByStep that trains on exactly as StepByStep would."""
import copy

import lightning
import pytest
import torch
from torch.optim.lr_scheduler import OneCycleLR, StepLR
from torch.utils.data import DataLoader, TensorDataset

from stepbystep.data.repeated_sequences import repeated_sequences
from stepbystep.models import DecoderOnlyTransformer
from stepbystep.models.gpt.model import completion_loss
from stepbystep.seeding import set_seed
from stepbystep.training import StepByStep
from stepbystep.training.lightning import StepByStepModule, load_lightning_checkpoint


def _loaders():
    ids = repeated_sequences(40, 5, 8, seed=3)  # (40, 10)
    train = TensorDataset(ids[:30, :-1], ids[:30, 1:])  # 30 streams: batches of 8, 8, 8, 6
    val = TensorDataset(ids[30:, :-1], ids[30:, 1:])
    return (DataLoader(train, batch_size=8, shuffle=True, generator=torch.Generator()),
            DataLoader(val, batch_size=4))


def _model():
    torch.manual_seed(0)
    return DecoderOnlyTransformer(8, d_model=16, n_heads=2, ff_units=32, n_layers=1, dropout=0.1, pad_id=None,
                                  max_len=16)


def _parts(schedule):
    model = _model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = {None: None, "epoch": lambda: StepLR(optimizer, step_size=1, gamma=0.5),
                 "batch": lambda: OneCycleLR(optimizer, max_lr=0.2, total_steps=12)}[schedule]
    return model, optimizer, None if scheduler is None else scheduler()


def _lightning_trainer(tmp_path, epochs, **options):
    return lightning.Trainer(max_epochs=epochs, accelerator="cpu", devices=1, logger=False, enable_progress_bar=False,
                             enable_model_summary=False, default_root_dir=tmp_path, **options)


def _stepbystep(schedule, epochs, seed=5):
    model, optimizer, scheduler = _parts(schedule)
    sbs = StepByStep(model, completion_loss, optimizer, device="cpu")
    if scheduler is not None:
        sbs.set_lr_scheduler(scheduler)
    sbs.set_loaders(*_loaders())
    sbs.train(epochs, seed=seed, progress=False)
    return sbs


@pytest.mark.parametrize("schedule", [None, "epoch", "batch"])
def test_lightning_gives_stepbystep_losses_epoch_by_epoch(tmp_path, schedule):
    sbs = _stepbystep(schedule, 3)
    model, optimizer, scheduler = _parts(schedule)
    module = StepByStepModule(model, completion_loss, optimizer, scheduler)
    train_loader, val_loader = _loaders()
    set_seed(5, train_loader)  # as StepByStep.train(seed=5) does
    _lightning_trainer(tmp_path, 3, enable_checkpointing=False).fit(module, train_loader, val_loader)
    assert len(module.losses) == len(module.val_losses) == 3
    torch.testing.assert_close(torch.tensor(module.losses), torch.tensor(sbs.losses), rtol=0, atol=1e-6)
    torch.testing.assert_close(torch.tensor(module.val_losses), torch.tensor(sbs.val_losses), rtol=0, atol=1e-6)
    assert module.learning_rates == pytest.approx(sbs.learning_rates, abs=1e-12)
    for (name, p), q in zip(module.model.named_parameters(), sbs.model.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-6, msg=name)


def test_the_epoch_loss_is_the_plain_mean_of_batch_losses_not_lightnings_weighted_one(tmp_path):
    model, optimizer, _ = _parts(None)
    optimizer.param_groups[0]["lr"] = 0.0  # nothing moves: every batch loss can be recomputed afterwards
    module = StepByStepModule(model, completion_loss, optimizer)
    train_loader, _ = _loaders()
    set_seed(5, train_loader)
    _lightning_trainer(tmp_path, 1, enable_checkpointing=False).fit(module, train_loader)
    set_seed(5, train_loader)
    model.train()
    torch.manual_seed(5)
    losses = [completion_loss(model(x), y).item() for x, y in train_loader]  # sizes 8, 8, 8, 6
    assert module.losses[0] == pytest.approx(sum(losses) / len(losses), abs=1e-6)
    weighted = sum(loss * 8 for loss in losses[:3]) / 30 + losses[3] * 6 / 30
    assert abs(weighted - module.losses[0]) > 1e-5  # the batches differ enough to tell the two apart


def test_a_lightning_checkpoint_loads_into_stepbystep_and_training_goes_on_as_stepbystep_would(tmp_path):
    sbs_four = _stepbystep("epoch", 4)
    model, optimizer, scheduler = _parts("epoch")
    module = StepByStepModule(model, completion_loss, optimizer, scheduler)
    train_loader, val_loader = _loaders()
    set_seed(5, train_loader)
    checkpoints = lightning.pytorch.callbacks.ModelCheckpoint(dirpath=tmp_path, filename="{epoch}", save_top_k=-1)
    _lightning_trainer(tmp_path, 2, callbacks=[checkpoints]).fit(module, train_loader, val_loader)

    model, optimizer, scheduler = _parts("epoch")
    sbs = StepByStep(model, completion_loss, optimizer, device="cpu")
    sbs.set_lr_scheduler(scheduler)
    sbs.set_loaders(*_loaders())
    load_lightning_checkpoint(sbs, tmp_path / "epoch=1.ckpt")
    assert (sbs.total_epochs, sbs.total_steps) == (2, 8)
    assert sbs.losses == pytest.approx(module.losses, abs=1e-12) and len(sbs.val_losses) == 2
    torch.testing.assert_close(torch.tensor(sbs.losses), torch.tensor(sbs_four.losses[:2]), rtol=0, atol=1e-6)
    sbs.train(2, progress=False)  # the saved streams: the shuffles and dropout of epochs 3 and 4
    torch.testing.assert_close(torch.tensor(sbs.losses), torch.tensor(sbs_four.losses), rtol=0, atol=1e-6)
    torch.testing.assert_close(torch.tensor(sbs.val_losses), torch.tensor(sbs_four.val_losses), rtol=0, atol=1e-6)
    assert sbs.scheduler.last_epoch == sbs_four.scheduler.last_epoch == 4


def test_bad_input_is_refused_at_the_entry_point(tmp_path):
    model, optimizer, _ = _parts(None)
    with pytest.raises(TypeError, match="loss_fn must be callable"):
        StepByStepModule(model, "mse", optimizer)
    with pytest.raises(ValueError, match="not parameters of this model"):
        StepByStepModule(_model(), completion_loss, optimizer)
    with pytest.raises(TypeError, match="scheduler must be a learning-rate scheduler"):
        StepByStepModule(model, completion_loss, optimizer, scheduler=optimizer)
    with pytest.raises(ValueError, match="CosineAnnealingWarmRestarts"):
        StepByStepModule(model, completion_loss, optimizer,
                         torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, 2), interval="batch")
    torch.save({"state_dict": {}}, tmp_path / "other.ckpt")
    sbs = StepByStep(model, completion_loss, optimizer, device="cpu")
    with pytest.raises(ValueError, match="not a Lightning checkpoint of a StepByStepModule"):
        load_lightning_checkpoint(sbs, tmp_path / "other.ckpt")


def test_with_a_full_last_batch_lightning_shuffles_the_second_epoch_otherwise(tmp_path):
    """A plain loop asks the loader once past its end, and a RandomSampler with its own generator draws
    then; Lightning stops at the length. The chapter states this condition; the day Lightning asks, this fails."""
    ids = repeated_sequences(32, 5, 8, seed=3)
    order = {}
    for name in ("stepbystep", "lightning"):
        seen = []

        def loss(prediction, y, seen=seen):
            seen.append(int(y.sum()))
            return completion_loss(prediction, y)

        model, optimizer, _ = _parts(None)
        loader = DataLoader(TensorDataset(ids[:, :-1], ids[:, 1:]), batch_size=8, shuffle=True,
                            generator=torch.Generator())  # 4 full batches
        if name == "stepbystep":
            sbs = StepByStep(model, loss, optimizer, device="cpu")
            sbs.set_loaders(loader)
            sbs.train(2, seed=5, progress=False)
        else:
            set_seed(5, loader)
            _lightning_trainer(tmp_path, 2, enable_checkpointing=False).fit(StepByStepModule(model, loss, optimizer),
                                                                            loader)
        order[name] = seen
    assert order["stepbystep"][:4] == order["lightning"][:4]
    assert order["stepbystep"][4:] != order["lightning"][4:]


def test_a_checkpoint_saved_without_validation_holds_the_whole_epoch(tmp_path):
    model, optimizer, _ = _parts(None)
    module = StepByStepModule(model, completion_loss, optimizer)
    train_loader, _ = _loaders()
    set_seed(5, train_loader)
    saving = lightning.pytorch.callbacks.ModelCheckpoint(dirpath=tmp_path, filename="{epoch}", save_top_k=-1)
    _lightning_trainer(tmp_path, 2, callbacks=[saving]).fit(module, train_loader)
    model, optimizer, _ = _parts(None)
    sbs = StepByStep(model, completion_loss, optimizer, device="cpu")
    sbs.set_loaders(_loaders()[0])
    load_lightning_checkpoint(sbs, tmp_path / "epoch=0.ckpt")
    assert sbs.total_epochs == 1 and sbs.losses == pytest.approx(module.losses[:1], abs=1e-12) and sbs.val_losses == []


def test_a_checkpoint_saved_inside_an_epoch_is_refused(tmp_path):
    model, optimizer, _ = _parts(None)
    module = StepByStepModule(model, completion_loss, optimizer)
    train_loader, _ = _loaders()
    saving = lightning.pytorch.callbacks.ModelCheckpoint(dirpath=tmp_path, filename="{step}", every_n_train_steps=1,
                                                         save_top_k=-1)
    _lightning_trainer(tmp_path, 1, callbacks=[saving]).fit(module, train_loader)
    model, optimizer, _ = _parts(None)
    sbs = StepByStep(model, completion_loss, optimizer, device="cpu")
    with pytest.raises(ValueError, match=r"saved 2 step\(s\) into an epoch"):
        load_lightning_checkpoint(sbs, tmp_path / "step=2.ckpt")
    assert sbs.total_epochs == 0  # nothing loaded
