"""Chapter 15's study (stepbystep.experiments.subword_model): the windows, the measure, the recipe
recomputed for one seed at toy size, and the stored results."""
import math

import pytest
import torch

from stepbystep.data import BytePairTokenizer, shakespeare_plays
from stepbystep.experiments.subword_model import (
    RECIPE,
    SEEDS,
    bits_per_byte,
    lm_config,
    load_subword_study,
    random_windows,
    subword_claims,
    subword_study,
    train_lm,
)
from stepbystep.expect import expect_all

TOY = dict(steps=12, batch_size=4, context=16, lr=3e-3, warmup=3)


@pytest.fixture(scope="module")
def texts():
    plays = shakespeare_plays(["hamlet", "macbeth"])
    return plays["hamlet"][:20_000], plays["macbeth"][:3_000]


def test_windows_are_the_next_tokens_and_repeat_with_the_generator():
    ids = torch.arange(100)
    batches = random_windows(ids, 3, 5, 8, torch.Generator().manual_seed(1))
    assert len(batches) == 3
    for x, y in batches:
        assert x.shape == y.shape == (5, 8)
        assert torch.equal(y[:, :-1], x[:, 1:]) and torch.equal(y[:, -1], x[:, -1] + 1)  # one token on
    again = random_windows(ids, 3, 5, 8, torch.Generator().manual_seed(1))
    assert all(torch.equal(a[0], b[0]) for a, b in zip(batches, again))
    with pytest.raises(ValueError, match="longer than context=8"):
        random_windows(torch.arange(8), 1, 1, 8, torch.Generator())


@pytest.mark.parametrize("context", [4, 16, 1000])
def test_a_uniform_model_scores_log2_v_bits_per_predicted_token(texts, context):
    tokenizer = BytePairTokenizer.train(texts[0], 300)
    model = lm_config(tokenizer.vocab_size, context=max(context, 16)).build().eval()
    with torch.no_grad():
        model.embed.weight.zero_()  # tied output: every logit 0, a uniform prediction
    text = texts[1][:500]
    ids = tokenizer.encode(text)
    predicted_bytes = len(text.encode("utf-8")) - len(tokenizer.vocab[ids[0]])  # all but the first token
    expected = (len(ids) - 1) * math.log2(tokenizer.vocab_size) / predicted_bytes
    assert bits_per_byte(model, tokenizer, text, context=context) == pytest.approx(expected, rel=1e-5)


def test_training_repeats_with_its_seed_and_lowers_the_loss(texts):
    ids = torch.tensor(list(texts[0].encode("utf-8")))
    config = lm_config(256, context=16)
    model, losses = train_lm(config, ids, seed=0, **{**TOY, "steps": 40})
    _, again = train_lm(config, ids, seed=0, **{**TOY, "steps": 40})
    assert losses.shape == (40,) and torch.equal(losses, again) and not model.training
    assert losses[-5:].mean() < losses[:5].mean() - 0.5
    _, other = train_lm(config, ids, seed=1, **{**TOY, "steps": 40})
    assert not torch.equal(losses, other)


def test_the_study_recomputes_one_seed_at_toy_size(texts):
    text, held_out = texts
    study = subword_study(seeds=(3,), vocab_size=300, text=text, held_out=held_out, **TOY)
    assert study["recipe"] == TOY and study["seeds"] == [3] and study["vocab_size"] == {"bytes": 256, "bpe": 300}
    assert set(study["bits_per_byte"]) == {"bpe", "bytes", "bytes, 2x steps"}
    assert study["bytes_per_token"]["bytes"] == 1 and study["bytes_per_token"]["bpe"] > 1.2
    bpe = BytePairTokenizer.train(text, 300)
    for arm, tokenizer, steps in [("bpe", bpe, 12), ("bytes", BytePairTokenizer(), 12),
                                  ("bytes, 2x steps", BytePairTokenizer(), 24)]:
        config = lm_config(tokenizer.vocab_size, context=16)
        model, _ = train_lm(config, torch.tensor(tokenizer.encode(text)), 3, **{**TOY, "steps": steps})
        assert study["bits_per_byte"][arm] == [pytest.approx(bits_per_byte(model, tokenizer, held_out, 16), rel=1e-4)]


def test_the_stored_study_used_the_recipe_and_its_claims_hold():
    bpb, stored = load_subword_study()
    assert stored["recipe"] == RECIPE and stored["seeds"] == list(SEEDS)
    assert stored["vocab_size"] == {"bytes": 256, "bpe": 1024}
    assert set(bpb) == {"bpe", "bytes", "bytes, 2x steps"} and all(runs.shape == (len(SEEDS),) for runs in bpb.values())
    assert all(((runs > 1) & (runs < 8)).all() for runs in bpb.values())  # bits per byte of English text
    expect_all(subword_claims(bpb))


def test_the_figure_draws_curves_in_bits_per_byte_and_a_dot_per_seed():
    import matplotlib.pyplot as plt

    from stepbystep.plots import bits_per_byte_study

    losses = torch.full((50,), 2 * math.log(2))  # 2 bits per token
    stored = {"bpe": torch.tensor([2.0, 2.1, 2.2]), "bytes": torch.tensor([3.0, 3.1, 3.3])}
    fig = bits_per_byte_study({"bpe": losses}, {"bpe": 2.0}, stored, window=10)
    curve_ax, seed_ax = fig.axes
    (line,) = curve_ax.get_lines()
    assert list(line.get_xdata()) == list(range(10, 51)) and line.get_ydata() == pytest.approx([1.0] * 41)
    assert [len(c.get_offsets()) for c in seed_ax.collections[::2]] == [3, 3]
    medians = [c.get_segments()[0][0][1] for c in seed_ax.collections[1::2]]
    assert medians == pytest.approx([2.1, 3.1])
    assert [t.get_text() for t in seed_ax.get_xticklabels()] == ["bpe", "bytes"]
    plt.close(fig)
