"""Chapter 15's claims about the trained writer: its held-out bits per byte against the live and
stored models and the bigram table, and its samples' shares of the plays' words and word pairs."""
import pytest
import torch

from stepbystep.experiments.shakespeare_writer import writer_claims, writer_writing_claims
from stepbystep.experiments.subword_model import known_pair_share


def test_pair_share_counts_consecutive_words_after_the_prompt():
    known = {("good", "my"), ("my", "lord")}
    texts = ["P:\nGood my lord, my lord!", "P:\nmy lord good my"]  # pairs: (Good,my) (my,lord) (lord,my) (my,lord)
    assert known_pair_share(texts, known, prompt="P:\n") == pytest.approx(4 / 7)  # (my,lord) x3, (good,my) once


def test_pair_share_ignores_the_prompt_and_crosses_lines_and_punctuation():
    assert known_pair_share(["my lord\nlord, my"], {("lord", "lord"), ("lord", "my")}, prompt="my ") == 1.0


def test_the_writer_claims_hold_only_with_their_margins():
    assert all(claim.holds for claim in writer_claims(2.3, 3.0, torch.tensor([2.9, 2.95]), 2.6))
    near_table, far_from_models = writer_claims(2.45, 3.0, torch.tensor([2.96]), 2.6)
    assert not near_table.holds and far_from_models.holds
    assert not writer_claims(2.3, 2.7, torch.tensor([2.9]), 2.6)[1].holds
    assert not writer_claims(2.3, 3.0, torch.tensor([2.9, 2.75]), 2.6)[1].holds


def test_the_writing_claims_hold_in_every_seed_or_not_at_all():
    def shares(words, pairs):
        return {"words": torch.tensor(words), "pairs": torch.tensor(pairs)}

    good = {"writer": shares([0.9, 0.86], [0.65, 0.62]), "live": shares([0.7, 0.65], [0.3, 0.29]),
            "unigram": shares([0.83, 0.8], [0.33, 0.27])}
    assert all(claim.holds for claim in writer_writing_claims(good))
    one_seed_below = {**good, "unigram": shares([0.83, 0.87], [0.33, 0.27])}
    assert [c.holds for c in writer_writing_claims(one_seed_below)] == [False, True]
    live_close = {**good, "live": shares([0.7, 0.65], [0.3, 0.45])}
    assert [c.holds for c in writer_writing_claims(live_close)] == [True, False]
