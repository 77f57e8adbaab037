"""Bad input to chapter 15's tokenizer and corpus: a TypeError for a wrong type, a ValueError for a
wrong value, each saying what was expected and what arrived."""
import pytest
import torch

from stepbystep.data import BytePairTokenizer, shakespeare_plays, shakespeare_text


@pytest.fixture(scope="module")
def tokenizer():
    return BytePairTokenizer.train("aaabdaaabac", 259, special_tokens=["<|endoftext|>"])


WRONG_TYPES = [
    (lambda: BytePairTokenizer.train(b"bytes", 300), "text must be a str, got bytes"),
    (lambda: BytePairTokenizer.train(["a", "b"], 300), "text must be a str, got list"),
    (lambda: BytePairTokenizer.train("ab", 300.0), "vocab_size must be an int >= 256, got float 300.0"),
    (lambda: BytePairTokenizer.train("ab", 300, pattern=3), "pattern must be a str (a `regex`-module pattern) or None, got int"),
    (lambda: BytePairTokenizer.train("ab", 300, special_tokens="<|endoftext|>"),
     "special_tokens must be a list or tuple of str, got str: wrap the one token in a list"),
    (lambda: BytePairTokenizer.train("ab", 300, special_tokens=[1]), "special_tokens must be a list or tuple of str, got int"),
    (lambda: BytePairTokenizer.train("ab", 300, special_tokens={"<a>"}), "special_tokens must be a list or tuple of str, got set"),
    (lambda: BytePairTokenizer(pattern=b"x"), "pattern must be a str (a `regex`-module pattern) or None, got bytes"),
    (lambda: shakespeare_plays("hamlet"), "names must be a list of play names, got one str 'hamlet': wrap it in a list"),
    (lambda: shakespeare_text(separator=None), "separator must be a str, got NoneType"),
]

WRONG_VALUES = [
    (lambda: BytePairTokenizer.train("ab", 255), "vocab_size must be an int >= 256, got 255: the 256 bytes take the first ids"),
    (lambda: BytePairTokenizer.train("ab", 257, special_tokens=["<a>", "<b>"]),
     "vocab_size must be an int >= 258, got 257: the 256 bytes and 2 special tokens take the first ids"),
    (lambda: BytePairTokenizer.train("ab", 256, special_tokens=["<a>"]),
     "vocab_size must be an int >= 257, got 256: the 256 bytes and 1 special token take the first ids"),
    (lambda: BytePairTokenizer.train("ab", 300, pattern="(unclosed"),
     "pattern must be a regular expression the `regex` module compiles, got '(unclosed' (missing ) at position 9)"),
    (lambda: BytePairTokenizer.train("ab", 300, special_tokens=["<a>", ""]), "special_tokens must be non-empty strings, got ''"),
    (lambda: BytePairTokenizer.train("ab", 300, special_tokens=["<a>", "<b>", "<a>"]),
     "special_tokens must be distinct, got ['<a>'] more than once"),
    (lambda: BytePairTokenizer([(97, 256)]), "merges[0] must be a pair of ids below 256 (made before it), got (97, 256)"),
    (lambda: BytePairTokenizer([(97, 98), (97,)]), "merges[1] must be a pair of ids below 257 (made before it), got (97,)"),
    (lambda: shakespeare_plays(["hamlet", "hamlett"]), "names must be among "),
]


@pytest.mark.parametrize("build, message", WRONG_TYPES, ids=[m.split(" must")[0] + str(i) for i, (_, m) in enumerate(WRONG_TYPES)])
def test_wrong_types_raise_type_error(build, message):
    with pytest.raises(TypeError) as error:
        build()
    assert str(error.value).startswith(message)


@pytest.mark.parametrize("build, message", WRONG_VALUES, ids=[m.split(" must")[0] + str(i) for i, (_, m) in enumerate(WRONG_VALUES)])
def test_wrong_values_raise_value_error(build, message):
    with pytest.raises(ValueError) as error:
        build()
    assert str(error.value).startswith(message)


def test_encode_wants_a_str(tokenizer):
    with pytest.raises(TypeError, match="text must be a str, got list"):
        tokenizer.encode(["a"])


@pytest.mark.parametrize("ids, error, message", [
    ([97, 259], ValueError, "ids must be an int from 0 to 258, got 259"),
    ([-1], ValueError, "ids must be an int from 0 to 258, got -1"),
    ([97, 1.0], TypeError, "ids must be an int from 0 to 258, got float 1.0"),
    ("ab", TypeError, "ids must be a list of ints (or a 1-D tensor), got str"),
    (torch.tensor([[97, 98]]), ValueError, "ids must be one sequence of ids (1-D), got shape (1, 2)"),
])
def test_decode_refuses_ids_out_of_range(tokenizer, ids, error, message):
    with pytest.raises(error) as raised:
        tokenizer.decode(ids)
    assert str(raised.value) == message


def test_load_refuses_a_file_it_did_not_write(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"merges": []}')
    with pytest.raises(ValueError, match="path must be a tokenizer saved by BytePairTokenizer.save"):
        BytePairTokenizer.load(path)
