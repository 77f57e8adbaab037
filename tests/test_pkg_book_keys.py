"""The keys the book's checkpoints hold are named once, and the 'not a StepByStep checkpoint' error
points to the book's class exactly when a file holds all of them (the rest missing)."""
import pytest

from stepbystep.book import training as book_training
from stepbystep.training import checkpoint


def test_the_book_keys_are_one_tuple_at_the_start_of_ours():
    assert book_training.BOOK_KEYS is checkpoint.BOOK_KEYS
    assert checkpoint.KEYS[:len(checkpoint.BOOK_KEYS)] == checkpoint.BOOK_KEYS


@pytest.mark.parametrize("kept, hint", [
    (checkpoint.BOOK_KEYS, True), (checkpoint.KEYS[:-1], True),
    (checkpoint.BOOK_KEYS[1:], False), (checkpoint.KEYS[:4] + checkpoint.KEYS[5:], False),
])
def test_the_hint_names_the_book_class_only_for_a_book_file(kept, hint):
    with pytest.raises(ValueError, match="is not a StepByStep checkpoint") as caught:
        checkpoint.check_keys(dict.fromkeys(kept), "run.pt")
    assert ("stepbystep.book.training.StepByStep" in str(caught.value)) is hint
