"""Chapter 09's design studies: seeded, measured from step 0, calibration computed right."""
import math

import pytest
import torch
from torch import nn

from stepbystep.data import completion_vocab, date_pairs
from stepbystep.models import DecoderOnlyTransformer
from stepbystep.experiments.design_choices import (
    cap,
    completion_calibration,
    smoothing_study,
    tied_embedding_study,
)

SMALL = dict(d_model=16, n_heads=2, ff_units=32, n_layers=1, dropout=0.0, max_len=48, embedding_std=0.3)


@pytest.fixture(scope="module")
def data():
    pairs = date_pairs(200, seed=0)
    return completion_vocab(pairs), pairs[:160], pairs[160:]


class NextTokenOracle(nn.Module):
    """Puts probability ``q`` on the token that follows each input position, the rest spread evenly."""

    def __init__(self, vocab_size, q):
        super().__init__()
        self.vocab_size, self.q = vocab_size, q
        self.dummy = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        following = torch.cat([x[:, 1:], torch.zeros_like(x[:, :1])], dim=1)  # (N, L): the next input token
        following = following.masked_fill(following == 0, 2)  # after the last real token: <eos>
        probs = torch.full((*x.shape, self.vocab_size), (1 - self.q) / (self.vocab_size - 1))
        probs.scatter_(-1, following.unsqueeze(-1), self.q)
        return probs.log()  # (N, L, V)


def test_calibration_of_a_known_model(data):
    vocab, _, val = data
    numbers = completion_calibration(NextTokenOracle(len(vocab), 0.9), vocab, val)
    assert numbers["confidence"] == pytest.approx(0.9, abs=1e-5)
    assert numbers["accuracy"] == 1.0
    assert numbers["ece"] == pytest.approx(0.1, abs=1e-5)  # under-confident by 0.1
    assert numbers["target_probability"] == pytest.approx(0.9, abs=1e-5)
    assert numbers["whole_answer"] == pytest.approx(0.9 ** 11, rel=1e-4)  # ten characters and <eos>


def test_tied_study_starts_from_step_zero_and_reproduces(data):
    vocab, train, val = data
    runs = tied_embedding_study(vocab, train, val, seeds=(0, 1, 2), n_steps=6, eval_every=3, **SMALL)
    assert set(runs) == {"untied", "tied"} and all(len(r) == 3 for r in runs.values())
    for run in runs["tied"] + runs["untied"]:
        assert run.steps == [0, 3, 6] and len(run.val_losses) == 3
    # tying reads the logits off the embedding: larger at the start than the untied output layer's
    assert all(t.initial_logit_std > u.initial_logit_std for t, u in zip(runs["tied"], runs["untied"]))
    again = tied_embedding_study(vocab, train, val, seeds=(0,), n_steps=6, eval_every=3, **SMALL)
    assert again["tied"][0].val_losses == runs["tied"][0].val_losses


def test_smoothing_study_caps_the_confidence(data):
    vocab, train, val = data
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(len(vocab), **SMALL)
    results = smoothing_study(model, vocab, train, val, epsilons=(0.0, 0.5), seeds=(0, 1), n_steps=3,
                              score=lambda m: 0.5)
    assert set(results) == {0.0, 0.5} and all(len(r) == 2 for r in results.values())
    assert all(r["exact"] == 0.5 and 0 <= r["ece"] <= 1 for rs in results.values() for r in rs)
    assert cap(0.1, 64) == pytest.approx(0.9 + 0.1 / 64)
    with pytest.raises(TypeError):
        smoothing_study(model, vocab, train, val, epsilons=0.1)
    assert not math.isnan(results[0.0][0]["whole_answer"])
