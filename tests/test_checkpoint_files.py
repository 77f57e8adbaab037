"""Checkpoints and state: a file that is not a checkpoint gives a ValueError naming it and what was
expected; a checkpoint of another model or optimizer class is refused before anything changes."""
import copy
import io
import pickle
import re
import zipfile

import numpy as np
import pytest
import torch
from torch import nn
from torch.optim.lr_scheduler import OneCycleLR
from torch.utils.data import DataLoader, TensorDataset

from stepbystep import book
from stepbystep.serialization import safe_load
from stepbystep.training import StepByStep

TRAINERS = {"core": StepByStep, "book": book.StepByStep}


def _model(hidden=4):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, hidden), nn.ReLU(), nn.Linear(hidden, 1))


def _trainer(kind="core", optimizer=torch.optim.Adam, hidden=4, **options):
    model = _model(hidden)
    sbs = TRAINERS[kind](model, nn.MSELoss(), optimizer(model.parameters(), lr=0.01, **options))
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(32, 3, generator=generator)
    sbs.set_loaders(DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=8))
    return sbs


def _state(sbs):
    return (copy.deepcopy(sbs.model.state_dict()), copy.deepcopy(sbs.optimizer.state_dict()), sbs.total_epochs,
            list(sbs.losses), list(sbs.learning_rates))


def _assert_unchanged(before, sbs):
    weights, optimizer, epochs, losses, rates = before
    assert all(torch.equal(a, b) for a, b in zip(weights.values(), sbs.model.state_dict().values()))
    assert repr(optimizer["param_groups"]) == repr(sbs.optimizer.state_dict()["param_groups"])
    assert (epochs, losses, rates) == (sbs.total_epochs, sbs.losses, sbs.learning_rates)


def _good_file(tmp_path):
    saved = _trainer()
    saved.train(1, progress=False)
    path = tmp_path / "run.pt"
    saved.save_checkpoint(path)
    return path


def _not_checkpoints(tmp_path):
    """``{name: (path, what the message says it looks like)}``: damaged files and other formats."""
    data = _good_file(tmp_path).read_bytes()
    files = {
        "truncated by 10 bytes": (data[:-10], "damaged or truncated torch.save file"),
        "cut in half": (data[: len(data) // 2], "damaged or truncated torch.save file"),
        "first 100 bytes": (data[:100], "damaged or truncated torch.save file"),
        "empty": (b"", "it is empty (0 bytes)"),
        "text": (b"epoch 3\nloss 0.25\n", "it is not in torch.save's format (it starts with b'epoch 3\\n')"),
        "plain pickle": (pickle.dumps({}, protocol=2), "a plain pickle, not a torch.save file"),
        "plain pickle, protocol 5": (pickle.dumps({}, protocol=5), "a plain pickle, not a torch.save file"),
    }
    paths = {}
    for name, (content, looks) in files.items():
        path = tmp_path / f"{name.replace(' ', '_').replace(',', '')}.pt"
        path.write_bytes(content)
        paths[name] = (path, looks)
    older = io.BytesIO()
    torch.save({"a": torch.zeros(2)}, older, _use_new_zipfile_serialization=False)
    for name, cut in (("older format, first 40 bytes", 40), ("older format, first 200 bytes", 200)):
        paths[name] = (tmp_path / f"older_{cut}.pt", "a damaged or truncated torch.save file, in PyTorch's older format")
        paths[name][0].write_bytes(older.getvalue()[:cut])
    np.save(tmp_path / "array.npy", np.arange(3.0))
    paths[".npy"] = (tmp_path / "array.npy", "a NumPy .npy file (read it with numpy.load)")
    return paths


@pytest.mark.parametrize("kind", TRAINERS)
@pytest.mark.filterwarnings("ignore:Detected pickle protocol 5")  # torch.load's, about the protocol-5 pickle
def test_a_file_that_is_no_checkpoint_gives_a_value_error_naming_it(tmp_path, kind):
    sbs = _trainer(kind)
    sbs.train(1, progress=False)
    before = _state(sbs)
    for name, (path, looks) in _not_checkpoints(tmp_path).items():
        with pytest.raises(ValueError) as refused:
            sbs.load_checkpoint(path)
        message = str(refused.value)
        assert message.startswith(f"{str(path)!r} is not a readable checkpoint"), (name, message)
        assert looks in message and "expected a file written by save_checkpoint" in message, (name, message)
        _assert_unchanged(before, sbs)


@pytest.mark.parametrize("kind", TRAINERS)
def test_a_directory_is_named_as_one(tmp_path, kind):
    with pytest.raises(FileNotFoundError, match="it is a directory"):
        _trainer(kind).load_checkpoint(tmp_path)


def test_a_checkpoint_that_would_run_code_is_still_refused_as_such(tmp_path):
    class Payload:
        def __reduce__(self):
            return (print, ("ran",))

    torch.save({"model_state_dict": Payload()}, tmp_path / "evil.pt")
    with pytest.raises(pickle.UnpicklingError, match="could run code"):
        _trainer().load_checkpoint(tmp_path / "evil.pt")


def test_a_torch_save_zip_whose_pickle_would_run_code_is_refused_as_such(tmp_path):
    """Told from the file's structure (a whole data.pkl in a torch.save zip), not torch's message:
    a protocol-0 INST opcode (``os.system``) used to be called a damaged file."""
    torch.save({"a": 1}, tmp_path / "base.pt")
    with zipfile.ZipFile(tmp_path / "base.pt") as source, zipfile.ZipFile(tmp_path / "inst.pt", "w") as target:
        for name in source.namelist():
            target.writestr(name, b"(S'echo ran'\nios\nsystem\n." if name.endswith("data.pkl") else source.read(name))
    with pytest.raises(pickle.UnpicklingError, match="could run code"):
        safe_load(tmp_path / "inst.pt", map_location="cpu")


def _old_file(sbs, path):
    """``sbs``'s checkpoint as an older release wrote it: no optimizer_class, no decoupled_weight_decay."""
    sbs.save_checkpoint(path)
    checkpoint = safe_load(path, map_location="cpu")
    del checkpoint["optimizer_class"]
    for group in checkpoint["optimizer_state_dict"]["param_groups"]:
        group.pop("decoupled_weight_decay", None)
    torch.save(checkpoint, path)
    return path


def test_an_old_checkpoint_without_optimizer_class_resumes_into_a_matching_optimizer(tmp_path):
    """The settings heuristic compares the file against the optimizer's own settings, so a
    scheduler's keys (initial_lr, max_lr, base_momentum...) do not look like another optimizer's."""
    def with_one_cycle(sbs):
        sbs.set_lr_scheduler(OneCycleLR(sbs.optimizer, max_lr=0.01, total_steps=100))
        return sbs

    saved = with_one_cycle(_trainer())
    saved.train(1, progress=False)
    path = _old_file(saved, tmp_path / "adam_one_cycle.pt")
    plain = _trainer()
    with pytest.raises(ValueError, match="saved with a learning-rate scheduler and this trainer has none"):
        plain.load_checkpoint(path)
    resumed = with_one_cycle(_trainer())
    resumed.load_checkpoint(path)
    assert resumed.total_epochs == 1 and resumed.losses == saved.losses
    saved.train(1, progress=False)
    resumed.train(1, progress=False)
    assert resumed.losses == saved.losses
    sgd = _trainer(optimizer=torch.optim.SGD, momentum=0.9)
    sgd.train(1, progress=False)
    resumed = _trainer(optimizer=torch.optim.SGD, momentum=0.9)
    resumed.load_checkpoint(_old_file(sgd, tmp_path / "sgd.pt"))
    assert resumed.total_epochs == 1 and resumed.optimizer.state_dict()["state"].keys() == {0, 1, 2, 3}


@pytest.mark.parametrize("kind", TRAINERS)
@pytest.mark.parametrize("with_class", [True, False], ids=["optimizer_class saved", "an older file without it"])
def test_a_checkpoint_of_another_optimizer_class_is_refused_before_anything_changes(tmp_path, kind, with_class):
    """SGD's state loaded into Adam used to succeed, then train() failed with KeyError: 'betas'."""
    saved = _trainer(optimizer=torch.optim.SGD, momentum=0.9)
    saved.train(1, progress=False)
    saved.save_checkpoint(tmp_path / "sgd.pt")
    checkpoint = safe_load(tmp_path / "sgd.pt", map_location="cpu")
    if not with_class:
        del checkpoint["optimizer_class"]
    torch.save(checkpoint, tmp_path / "sgd.pt")
    sbs = _trainer(kind, torch.optim.Adam)
    sbs.train(1, progress=False)
    before = _state(sbs)
    words = "saved with the optimizer SGD and this trainer has Adam" if with_class else r"another optimizer \(settings \['dampening', 'momentum', 'nesterov'\]\) than this trainer's Adam \(\['amsgrad', 'betas'"
    with pytest.raises(ValueError, match=words):
        sbs.load_checkpoint(tmp_path / "sgd.pt")
    _assert_unchanged(before, sbs)
    sbs.train(1, progress=False)  # the trainer still trains
    assert sbs.total_epochs == 2


def test_an_optimizer_class_with_the_same_settings_is_told_apart_by_name(tmp_path):
    saved = _trainer(optimizer=torch.optim.Adam)
    saved.train(1, progress=False)
    saved.save_checkpoint(tmp_path / "adam.pt")
    sbs = _trainer(optimizer=torch.optim.AdamW)
    before = _state(sbs)
    with pytest.raises(ValueError, match="saved with the optimizer Adam and this trainer has AdamW"):
        sbs.load_checkpoint(tmp_path / "adam.pt")
    _assert_unchanged(before, sbs)


@pytest.mark.parametrize("kind", TRAINERS)
def test_a_checkpoint_of_another_model_is_refused_naming_what_differs(tmp_path, kind):
    path = _good_file(tmp_path)
    wider = _trainer(kind, hidden=8)
    wider.train(1, progress=False)
    before = _state(wider)
    with pytest.raises(ValueError, match=re.escape("the checkpoint was saved from another model: 0.weight (4, 3) in "
                                                   "the file, (8, 3) here; 0.bias (4,) in the file, (8,) here")):
        wider.load_checkpoint(path)
    _assert_unchanged(before, wider)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1), nn.Linear(1, 1))
    deeper = TRAINERS[kind](model, nn.MSELoss(), torch.optim.Adam(model.parameters(), lr=0.01))
    with pytest.raises(ValueError, match=re.escape("no 3.weight, 3.bias in the file")):
        deeper.load_checkpoint(path)


def test_a_matching_checkpoint_still_resumes(tmp_path):
    path = _good_file(tmp_path)
    sbs = _trainer()
    sbs.load_checkpoint(path)
    assert sbs.total_epochs == 1
    sbs.train(1, progress=False)
    assert sbs.total_epochs == 2 and len(sbs.losses) == 2


def test_saving_under_a_file_says_which_file_is_in_the_way(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("not a folder")
    with pytest.raises(ValueError, match=re.escape(f"cannot save to {str(notes / 'run.pt')!r}: {str(notes)!r} is a "
                                                   "file, not a folder")):
        _trainer().save_checkpoint(notes / "run.pt")
    assert notes.read_text() == "not a folder"
