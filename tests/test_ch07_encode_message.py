"""A text too long for the model is refused with a message that counts the symbols and the specials
added to them, so "max_len" is clear whatever was added."""
import pytest

from stepbystep.data import Vocab


@pytest.mark.parametrize("kwargs, words", [
    ({}, "20 symbols make 20 ids, more than max_len=16"),
    ({"add_eos": True}, "20 symbols plus <eos> make 21 ids, more than max_len=16"),
    ({"add_sos": True, "add_eos": True}, "20 symbols plus <sos> and <eos> make 22 ids, more than max_len=16"),
])
def test_too_long_says_what_the_ids_are_made_of(kwargs, words):
    with pytest.raises(ValueError, match=words):
        Vocab("ab").encode("a" * 20, max_len=16, **kwargs)


def test_sixteen_ids_still_fit():
    assert len(Vocab("ab").encode("a" * 14, add_sos=True, add_eos=True, max_len=16)) == 16
