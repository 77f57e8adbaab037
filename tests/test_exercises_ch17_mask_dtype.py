"""Chapter 17's window-mask checker (exercise 3) and the mask's dtype: a bool or integer 1/0 keep-mask
passes, a float one is refused with a message that does not invite it, other integers are named."""
import torch

from stepbystep.exercises import ch17


def test_bool_and_integer_keep_masks_pass():
    solution = ch17.window_mask._solution
    assert ch17.window_mask.check(solution)
    assert ch17.window_mask.check(lambda *a: solution(*a).long())
    assert ch17.window_mask.check(lambda *a: solution(*a).to(torch.uint8))


def test_a_float_one_zero_mask_is_refused_as_an_additive_mask(fails_with):
    solution = ch17.window_mask._solution
    message = fails_with(ch17.window_mask, lambda *a: solution(*a).float(), "adds to the scores")
    assert "bool, or an integer 1/0" in message and "(or 1/0)" not in message


def test_an_integer_mask_of_other_values_is_named(fails_with):
    solution = ch17.window_mask._solution
    fails_with(ch17.window_mask, lambda *a: solution(*a).long() * 2, "bool, or an integer 1/0")
