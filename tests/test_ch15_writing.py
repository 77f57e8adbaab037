"""Chapter 15's writing study (stepbystep.experiments.subword_model): what share of the words the
live BPE model writes are words of the plays, beside an untrained model and a unigram sampler, both
sampled like the model."""
import pytest
import regex
import torch

from stepbystep.data import BytePairTokenizer, shakespeare_plays
from stepbystep.experiments.subword_model import (
    RECIPE,
    WRITING,
    known_share,
    lm_config,
    load_subword_study,
    model_writes,
    split_plays,
    train_lm,
    unigram_writes,
    writing_claims,
    writing_study,
)
from stepbystep.expect import expect_all

TOY = dict(batch_size=4, context=64, lr=3e-3, warmup=3)


@pytest.fixture(scope="module")
def toy():
    text = shakespeare_plays(["hamlet"])["hamlet"][:20_000]
    tokenizer = BytePairTokenizer.train(text, 300)
    return text, tokenizer, torch.tensor(tokenizer.encode(text))


def test_known_share_counts_the_words_after_the_prompt():
    texts = ["**HAMLET**\nthe king is dead", "**HAMLET**\nzork the"]
    assert known_share(texts, {"the", "king", "HAMLET"}) == pytest.approx(3 / 6)  # the prompt's word not counted
    assert known_share(["P: a b"], {"a"}, prompt="P:") == 0.5


def test_the_unigram_sampler_draws_by_frequency_alone_and_repeats_with_its_seed(toy):
    _, tokenizer, _ = toy
    ids = torch.tensor([300 - 1] * 5 + [97])  # id 299 five times, "a" once
    plain = dict(prompt="P", samples=200, length=11, temperature=1.0, top_k=None)
    texts = unigram_writes(ids, tokenizer, seed=0, **plain)
    assert len(texts) == 200 and all(text.startswith("P") for text in texts)
    drawn = torch.tensor([tokenizer.encode(text[1:]) for text in texts])  # unambiguous: two ids only
    share_a = (drawn == 97).float().mean().item()
    assert drawn.unique().tolist() == [97, 299] and 0.1 < share_a < 0.25  # 1 in 6 expected
    assert unigram_writes(ids, tokenizer, seed=0, **plain) == texts
    assert unigram_writes(ids, tokenizer, seed=1, **plain) != texts


def _share_of_a(tokenizer, **sampling):
    ids = torch.tensor([300 - 1] * 5 + [97])  # id 299 five times, "a" once
    texts = unigram_writes(ids, tokenizer, seed=0, prompt="P", samples=200, length=11, **sampling)
    drawn = torch.tensor([tokenizer.encode(text[1:]) for text in texts])  # (200, 10)
    return (drawn == 97).float().mean().item()


def test_the_unigram_sampler_is_sampled_like_the_model(toy):
    _, tokenizer, _ = toy
    assert 0.02 < _share_of_a(tokenizer, temperature=0.5, top_k=None) < 0.06  # 1 / (1 + 5 ** 2): 1 in 26 expected
    assert _share_of_a(tokenizer, temperature=1.0, top_k=1) == 0  # the most frequent id only
    ids = torch.tensor([299] * 5 + [97])
    defaults = unigram_writes(ids, tokenizer, seed=4, prompt="P", samples=8, length=11)
    assert defaults == unigram_writes(ids, tokenizer, seed=4, prompt="P", samples=8, length=11,
                                      temperature=WRITING["temperature"], top_k=WRITING["top_k"])
    assert defaults != unigram_writes(ids, tokenizer, seed=4, prompt="P", samples=8, length=11,
                                      temperature=1.0, top_k=None)


def test_the_model_writes_seeded_continuations_of_the_prompt(toy):
    _, tokenizer, _ = toy
    model = lm_config(tokenizer.vocab_size).build().eval()
    texts = model_writes(model, tokenizer, seed=3, samples=4)
    assert len(texts) == 4 and all(text.startswith(WRITING["prompt"]) for text in texts)
    assert all(len(tokenizer.encode(text)) >= 60 for text in texts)  # decode may merge differently; about 64 ids
    assert model_writes(model, tokenizer, seed=3, samples=4) == texts


def test_the_study_recomputes_one_seed_at_toy_size(toy):
    text, tokenizer, ids = toy
    study = writing_study(seeds=(2,), steps=10, vocab_size=300, text=text, **TOY)
    assert study["seeds"] == [2] and study["steps"] == 10
    known = set(regex.findall(r"\p{L}+", text))
    torch.manual_seed(2)
    untrained = lm_config(300).build().eval()
    trained, _ = train_lm(lm_config(300), ids, 2, **{**RECIPE, **TOY, "steps": 10})
    assert study["trained"] == [known_share(model_writes(trained, tokenizer, 3), known)]
    assert study["untrained"] == [known_share(model_writes(untrained, tokenizer, 3), known)]
    assert study["unigram"] == [known_share(unigram_writes(ids, tokenizer, 3), known)]


def test_the_claims_fail_when_the_model_writes_more_than_the_sampler_or_no_more_than_untrained():
    good = {"trained": [0.7, 0.66], "untrained": [0.4, 0.5], "unigram": [0.8, 0.85]}
    assert all(claim.holds for claim in writing_claims(good))
    above = {**good, "trained": [0.7, 0.86]}  # above the sampler in one seed
    assert [claim.holds for claim in writing_claims(above)] == [False, True]
    below_untrained = {**good, "untrained": [0.4, 0.7]}
    assert [claim.holds for claim in writing_claims(below_untrained)] == [True, False]


def test_the_stored_writing_study_used_the_live_recipe_and_its_claims_hold():
    _, stored = load_subword_study()
    writing = stored["writing"]
    assert writing["seeds"] == list(WRITING["seeds"]) and writing["steps"] == WRITING["steps"] == 300
    assert all(len(writing[name]) == 5 and all(0 < share < 1 for share in writing[name])
               for name in ("trained", "untrained", "unigram"))
    expect_all(writing_claims(writing))


def test_the_stored_unigram_control_recomputes_for_two_seeds():
    text, _ = split_plays()
    tokenizer = BytePairTokenizer.train(text, 1024)
    ids = torch.tensor(tokenizer.encode(text))
    known = set(regex.findall(r"\p{L}+", text))
    _, stored = load_subword_study()
    for k in (0, 4):
        seed = stored["writing"]["seeds"][k]
        assert stored["writing"]["unigram"][k] == pytest.approx(known_share(unigram_writes(ids, tokenizer, seed + 1), known))
