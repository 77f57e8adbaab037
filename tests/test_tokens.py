"""Vocabularies, the reversal tasks, the split and the padding collate of chapter 07."""
import pytest
import torch

from stepbystep.data import (
    Seq2SeqDataset,
    Vocab,
    pad_collate,
    reverse_digits_dataset,
    reverse_words_dataset,
    train_val_split,
)


def test_specials_come_first():
    vocab = Vocab("abc")
    assert (vocab.pad_id, vocab.sos_id, vocab.eos_id, vocab.unk_id) == (0, 1, 2, 3)
    assert vocab.itos[:4] == ["<pad>", "<sos>", "<eos>", "<unk>"]
    assert len(vocab) == 7
    assert vocab.stoi["a"] == 4 and vocab.itos[vocab.stoi["c"]] == "c"


def test_duplicates_kept_once_and_specials_refused():
    assert len(Vocab("aab")) == 6
    with pytest.raises(ValueError, match="special"):
        Vocab(["a", "<eos>"])


def test_round_trip():
    vocab = Vocab.from_texts(["hello", "world"])
    for text in ["hello", "world", "lowered"]:
        ids = vocab.encode(text, add_sos=True, add_eos=True)
        assert ids[0] == vocab.sos_id and ids[-1] == vocab.eos_id
        assert vocab.decode(ids) == text
        assert vocab.decode(torch.tensor(ids)) == text


def test_unknown_symbols_map_to_unk():
    vocab = Vocab("abc")
    assert vocab.encode("abz") == [4, 5, vocab.unk_id]
    assert vocab.decode(vocab.encode("aZ")) == "a<unk>"


def test_decode_stops_at_eos_and_strips_padding():
    vocab = Vocab("ab")
    ids = [vocab.sos_id, 4, 5, vocab.eos_id, 4, vocab.pad_id]
    assert vocab.decode(ids) == "ab"
    assert vocab.decode(ids, strip_specials=False) == "<sos>ab<eos>a<pad>"


def test_word_tokens_with_separator():
    vocab = Vocab(["the", "cat"], sep=" ")
    assert vocab.decode(vocab.encode(["the", "cat"])) == "the cat"


def test_encode_errors():
    vocab = Vocab("ab")
    with pytest.raises(ValueError, match="empty"):
        vocab.encode("")
    with pytest.raises(ValueError, match="max_len=3"):
        vocab.encode("abab", max_len=3)
    with pytest.raises(ValueError, match="max_len=4"):
        vocab.encode("abab", add_eos=True, max_len=4)
    with pytest.raises(ValueError, match=r"ids must be in this vocabulary.s range 0..5, got 99"):
        vocab.decode([99])


def test_reverse_digits():
    pairs = reverse_digits_dataset(50, length=7, n_symbols=5, seed=3)
    assert len(pairs) == 50
    assert all(len(s) == 7 and t == s[::-1] and set(s) <= set("01234") for s, t in pairs)
    assert pairs == reverse_digits_dataset(50, length=7, n_symbols=5, seed=3)
    assert pairs != reverse_digits_dataset(50, length=7, n_symbols=5, seed=4)


def test_reverse_words_lengths_and_letters():
    pairs = reverse_words_dataset(300, min_len=3, max_len=6, seed=1)
    lengths = {len(s) for s, _ in pairs}
    assert lengths == {3, 4, 5, 6}
    assert all(t == s[::-1] and s.isalpha() and s.islower() for s, t in pairs)


def test_generators_leave_global_rng_alone():
    torch.manual_seed(0)
    expected = torch.rand(1)
    torch.manual_seed(0)
    reverse_words_dataset(10)
    assert torch.equal(torch.rand(1), expected)


def test_split_is_disjoint_and_seeded():
    pairs = reverse_digits_dataset(200, length=2, seed=0)  # only 100 distinct sources: duplicates
    train, val = train_val_split(pairs, val_fraction=0.25, seed=5)
    assert not {s for s, _ in train} & {s for s, _ in val}
    assert len(train) + len(val) == len({s for s, _ in pairs})
    assert len(val) == round(0.25 * (len(train) + len(val)))
    assert (train, val) == train_val_split(pairs, val_fraction=0.25, seed=5)
    with pytest.raises(ValueError, match="val_fraction"):
        train_val_split(pairs, val_fraction=1.5)


def test_dataset_and_pad_collate():
    vocab = Vocab("abc")
    dataset = Seq2SeqDataset([("ab", "ba"), ("abcab", "bacba")], vocab, vocab)
    source, target = dataset[0]
    assert source.tolist() == [4, 5]
    assert target.tolist() == [vocab.sos_id, 5, 4, vocab.eos_id]
    (source, target_in), target_out = pad_collate([dataset[0], dataset[1]])
    assert source.shape == (2, 5) and source[0].tolist() == [4, 5, 0, 0, 0]
    assert target_in.shape == target_out.shape == (2, 6)
    assert target_in[1].tolist() == [1, 5, 4, 6, 5, 4]
    assert target_out[1].tolist() == [5, 4, 6, 5, 4, 2]
    assert target_out[0].tolist() == [5, 4, 2, 0, 0, 0]
    assert torch.equal(target_in[:, 1:], torch.tensor([[5, 4, 2, 0, 0], [5, 4, 6, 5, 4]]))
