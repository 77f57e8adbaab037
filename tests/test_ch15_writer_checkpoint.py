"""Chapter 15's trained writer: the recipe of `python -m stepbystep.experiments.shakespeare_writer` run
at toy size, the file it saves (read with weights_only, rebuilt by the loader, its bits per byte
recomputed), seeded reproduction, the loader's errors, and the committed checkpoint itself."""
import pickle

import pytest
import torch

from stepbystep.data import BytePairTokenizer, shakespeare_plays
from stepbystep.experiments.shakespeare_writer import CHECKPOINT, FORMAT, VERSION, WRITER, load_writer, train_writer
from stepbystep.experiments.subword_model import bits_per_byte, split_plays
from stepbystep.models.gpt.model import DecoderOnlyTransformer
from stepbystep.serialization import atomic_save

TOY = dict(vocab_size=300, d_model=16, n_heads=2, n_layers=1, context=16, steps=12, batch_size=4, warmup=2)


@pytest.fixture(scope="module")
def texts():
    plays = shakespeare_plays()
    return plays["hamlet"][:20_000], plays["the-tempest"][:2_000]


@pytest.fixture(scope="module")
def toy(texts, tmp_path_factory):
    """The recipe at toy size, saved as the command saves it."""
    path = tmp_path_factory.mktemp("writer") / "writer.pt"
    checkpoint = train_writer(*texts, **TOY)
    atomic_save(checkpoint, path)
    return path, checkpoint


def test_the_file_loads_with_weights_only_and_holds_what_the_chapter_reads(toy):
    path, _ = toy
    raw = torch.load(path, weights_only=True)
    assert raw["format"] == FORMAT and raw["version"] == VERSION
    assert raw["recipe"] == {**WRITER, **TOY}
    assert all(w.dtype == torch.bfloat16 for w in raw["weights"].values() if w.is_floating_point())
    assert raw["weights"]["embed.weight"] is raw["weights"]["head.weight"]  # tied: stored once
    assert raw["losses"].shape == (TOY["steps"],)
    assert len(raw["merges"]) == TOY["vocab_size"] - 256


def test_the_loader_rebuilds_the_model_and_tokenizer_and_recomputes_the_stored_bits_per_byte(toy, texts):
    path, checkpoint = toy
    model, tokenizer, stored = load_writer(path)
    assert isinstance(model, DecoderOnlyTransformer) and not model.training
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert model.head.weight is model.embed.weight
    assert (model.config.d_model, model.config.n_layers, model.config.max_len) == (16, 1, 16)
    assert tokenizer.merges == BytePairTokenizer.train(texts[0], TOY["vocab_size"]).merges
    assert bits_per_byte(model, tokenizer, texts[1], TOY["context"]) == pytest.approx(stored["bits_per_byte"], abs=1e-9)
    assert stored["held_out_bytes"] == len(texts[1].encode("utf-8"))
    assert 0 < stored["bits_per_byte"] < 8


def test_the_weights_are_the_trained_ones_rounded_to_bfloat16(toy):
    path, checkpoint = toy
    model, _, _ = load_writer(path)
    for name, weight in model.state_dict().items():
        assert torch.equal(weight, checkpoint["weights"][name].float()), name


def test_the_same_seed_gives_the_same_weights_and_another_seed_others(toy, texts):
    _, checkpoint = toy
    again = train_writer(*texts, **TOY)
    other = train_writer(*texts, **{**TOY, "seed": 1})
    assert all(torch.equal(w, again["weights"][name]) for name, w in checkpoint["weights"].items())
    assert again["bits_per_byte"] == checkpoint["bits_per_byte"]
    assert not torch.equal(checkpoint["weights"]["embed.weight"], other["weights"]["embed.weight"])


def test_the_loader_refuses_another_file_or_format_version(toy, tmp_path):
    path, checkpoint = toy
    torch.save({"model": {}}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a Shakespeare writer checkpoint: expected format"):
        load_writer(tmp_path / "other.pt")
    torch.save(torch.zeros(3), tmp_path / "tensor.pt")
    with pytest.raises(ValueError, match="found 'Tensor'"):
        load_writer(tmp_path / "tensor.pt")
    torch.save({**checkpoint, "version": VERSION + 1}, tmp_path / "newer.pt")
    with pytest.raises(ValueError, match=f"format version {VERSION + 1}.*reads version {VERSION}.*python -m"):
        load_writer(tmp_path / "newer.pt")
    (tmp_path / "text.pt").write_text("not a checkpoint")
    with pytest.raises(ValueError, match="text.pt"):
        load_writer(tmp_path / "text.pt")
    torch.save({**checkpoint, "tokenizer": BytePairTokenizer}, tmp_path / "code.pt")  # a class: code, refused
    with pytest.raises(pickle.UnpicklingError, match="could run code"):
        load_writer(tmp_path / "code.pt")


def test_bad_recipes_are_refused(texts):
    with pytest.raises(ValueError, match="give both text and held_out"):
        train_writer(texts[0], **TOY)
    with pytest.raises(ValueError, match="steps"):
        train_writer(*texts, **{**TOY, "steps": 0})


def test_the_committed_checkpoint_is_small_current_and_loads():
    assert CHECKPOINT.stat().st_size <= 5_000_000
    model, tokenizer, stored = load_writer(CHECKPOINT)
    assert stored["recipe"] == WRITER
    assert tokenizer.vocab_size == WRITER["vocab_size"]
    assert (model.config.d_model, model.config.n_layers, model.config.max_len) == (128, 4, 128)
    assert stored["losses"].shape == (WRITER["steps"],)
    held_out = split_plays()[1]
    assert stored["held_out_bytes"] == len(held_out.encode("utf-8"))
    assert bits_per_byte(model, tokenizer, held_out, WRITER["context"]) == pytest.approx(stored["bits_per_byte"], abs=1e-3)
