"""repeat_share, the measure of chapter 09's exercise 6 that chapter 15 counts the writer's loops with,
and repeat_shares, which decodes a model greedily and sampled after a prompt and applies it."""
import pytest
import torch

from stepbystep.data import BytePairTokenizer
from stepbystep.exercises import ch09
from stepbystep.experiments.subword_model import WRITING, lm_config, repeat_shares
from stepbystep.models import generate, repeat_share


@pytest.mark.parametrize("tokens, n, share", [
    ("abcabc", 3, 1 / 4), ("aaaa", 2, 2 / 3), ("abcd", 2, 0.0), ("ab", 3, 0.0), ("", 1, 0.0),
    ([1, 2, 1, 2, 1, 2], 2, 3 / 5), ((1, 21, 12, 1), 2, 0.0), (torch.tensor([5, 6, 7, 5, 6, 7, 5]), 3, 2 / 5),
])
def test_repeat_share_counts_windows_seen_before(tokens, n, share):
    assert repeat_share(tokens, n) == pytest.approx(share)


def test_repeat_share_is_chapter_09s_solution():
    assert ch09.repeat_share._solution is repeat_share
    assert ch09.repeat_share.check(repeat_share)


@pytest.mark.parametrize("tokens, n, error, message", [
    ([1, 2], 0, ValueError, "n must be a positive int, got 0"),
    ([1, 2], 2.0, TypeError, "n must be a positive int"),
    (5, 2, TypeError, "tokens must be a string, a list of ids or a 1-D tensor, got int"),
    (torch.zeros(2, 3), 2, ValueError, "tokens must"),
])
def test_repeat_share_rejects_bad_input(tokens, n, error, message):
    with pytest.raises(error, match=message):
        repeat_share(tokens, n)


def test_repeat_shares_greedy_and_sampled():
    text = "to be or not to be, that is the question\n" * 20
    tokenizer = BytePairTokenizer.train(text, 300)
    torch.manual_seed(0)
    model = lm_config(300, context=32).build().eval()
    prompt = "to be"
    greedy_text, greedy, sampled = repeat_shares(model, tokenizer, prompt, seeds=(1, 2), length=24)
    assert greedy_text.startswith(prompt)
    assert sampled.shape == (2 * WRITING["samples"],)
    assert 0.0 <= greedy <= 1.0 and ((sampled >= 0) & (sampled <= 1)).all()
    start = len(tokenizer.encode(prompt))
    ids = generate(model, tokenizer.encode(prompt), 24 - start, temperature=0).tolist()  # (24,)
    assert greedy_text == tokenizer.decode(ids)
    assert greedy == pytest.approx(repeat_share(ids[start:], 4))  # of the new tokens only
    assert greedy != pytest.approx(repeat_share(ids, 4))  # (the prompt's windows would change it here)
    again = repeat_shares(model, tokenizer, prompt, seeds=(1, 2), length=24)
    assert again[1] == greedy and torch.equal(again[2], sampled)  # seeded: the same shares
