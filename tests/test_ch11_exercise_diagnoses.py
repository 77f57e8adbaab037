"""Chapter 11's exercises tell the common wrong answers apart: a sum for a mean, a slice that drops a patch or
keeps the CLS token, `/` for `//`; and the mean-pooling hint nudges without giving the code."""
import numpy as np
import torch

from stepbystep.exercises import ch11


def test_a_sum_instead_of_a_mean_is_named(fails_with):
    fails_with(ch11.mean_pooling, lambda states: states[:, 1:].sum(dim=1), "it is a sum")
    fails_with(ch11.mean_pooling, lambda states: states.sum(dim=1), "it is a sum")


def test_dropping_two_tokens_is_told_only_one_is_the_cls_token(fails_with):
    fails_with(ch11.mean_pooling, lambda states: states[:, 2:].mean(dim=1), "leaves out the first patch token too")


def test_dropping_the_last_token_instead_of_the_first_is_named(fails_with):
    fails_with(ch11.mean_pooling, lambda states: states[:, :-1].mean(dim=1), "leaves out the last token")


def test_other_wrong_pooling_keeps_the_generic_message(fails_with):
    fails_with(ch11.mean_pooling, lambda states: states[:, 1:].max(dim=1).values, "not the mean of the patch tokens")


def test_the_mean_pooling_hint_gives_no_code(capsys):
    ch11.mean_pooling.hint()
    hint = capsys.readouterr().out
    assert "CLS token" in hint and "dimension" in hint
    assert ".mean" not in hint and "[:, 1:]" not in hint and "slice it off" not in hint


def test_true_division_is_told_apart_from_other_non_ints(fails_with):
    fails_with(ch11.token_count, lambda h, w, p: ((h / p) * (w / p) + 1, ((h / p) * (w / p) + 1) ** 2), "not floats")
    fails_with(ch11.token_count, lambda h, w, p: (np.float64((h // p) * (w // p) + 1), 4), "not floats")
    fails_with(ch11.token_count, lambda h, w, p: (torch.tensor(float((h // p) * (w // p) + 1)), 4), "not floats")
    message = fails_with(ch11.token_count, lambda h, w, p: "10", "two whole numbers")
    assert "floats" not in message
    floats = ch11.token_count.check(lambda h, w, p: (h / p * (w / p) + 1, 0))
    assert "//" not in repr(floats)  # the operator is asked for, not given
