"""Chapter 02's exercise 4 (where the decoder starts): the checker takes trained runs and reads
their test losses itself, so numbers typed in, runs of the wrong model and runs that did not
train as asked are refused, each with its own message."""
import copy

import pytest
import torch
from torch import nn, optim
from torch.utils.data import DataLoader

from stepbystep.data import square_datasets
from stepbystep.exercises import ch02
from stepbystep.experiments.square_order import order_model
from stepbystep.models import DecoderPe, DecoderSelfAttn, EncoderDecoderSelfAttn, EncoderPe, EncoderSelfAttn
from stepbystep.training import StepByStep

SEEDS = range(5)


def _model(variant):
    if variant == "no PE":
        encoder, decoder = EncoderSelfAttn(3, 2, 10, n_features=2), DecoderSelfAttn(3, 2, 10, n_features=2)
    else:
        encoder = EncoderPe(3, 2, 10, n_features=2, max_len=2)
        decoder = DecoderPe(3, 2, 10, n_features=2, max_len=2)
    return EncoderDecoderSelfAttn(encoder, decoder, input_len=2, target_len=2)


def _train(model, seed, lr=0.01, n_epochs=20):
    """``model`` trained as the exercise asks, on a small training set to keep the test quick."""
    train_data, test_data = square_datasets(n_train=32, n_test=128, train_seed=13, test_seed=17)
    sbs = StepByStep(model, nn.MSELoss(), optim.Adam(model.parameters(), lr=lr))
    sbs.set_loaders(DataLoader(train_data, batch_size=16, shuffle=True), DataLoader(test_data, batch_size=128))
    sbs.train(n_epochs, seed=seed, progress=False)
    return sbs


def _seeded(build, seed):
    torch.manual_seed(seed)
    return build()


@pytest.fixture(scope="module")
def runs():
    return {variant: [_train(_seeded(lambda: _model(variant), seed), seed) for seed in SEEDS]
            for variant in ("no PE", "PE")}


def _with(runs, variant, index, trainer):
    changed = {name: list(trainers) for name, trainers in runs.items()}
    changed[variant][index] = trainer
    return changed


def test_trained_runs_pass(runs):
    assert ch02.decoder_start.check(runs)


def test_the_solution_returns_what_the_checker_takes(capsys):
    ch02.decoder_start.solution()
    printed = capsys.readouterr().out
    assert "return runs" in printed and "EncoderDecoderSelfAttn" in printed and "seed=seed" in printed


@pytest.mark.parametrize("guess", [
    {"no PE": 0.255, "PE": 0.264},  # the medians over 16 seeds, typed in
    {"no PE": 0.264, "PE": 0.234},  # seeds 0-4
    {"no PE": 0.5, "PE": 0.1},  # the fixed-start guess
    {"no PE": torch.tensor(0.26), "PE": torch.tensor(0.25)},
])
def test_numbers_are_refused_however_right(fails_with, guess):
    message = fails_with(ch02.decoder_start, guess, "got two numbers")
    assert "trainers themselves" in message and "add nothing" not in message and "other seeds" not in message


@pytest.mark.parametrize("wrong, words", [
    (None, "expected a dict"),
    ({"no PE": []}, "expected a dict"),
    ({"no PE": "runs", "PE": []}, "expected a list of trainers"),
])
def test_answers_of_the_wrong_shape(fails_with, wrong, words):
    fails_with(ch02.decoder_start, wrong, words)


def test_too_few_or_unmatched_runs(fails_with, runs):
    fails_with(ch02.decoder_start, {"no PE": runs["no PE"][:3], "PE": runs["PE"]}, "at least 5 runs")
    fails_with(ch02.decoder_start, {"no PE": runs["no PE"] + runs["no PE"][:1], "PE": runs["PE"]}, "the same seeds")


def test_a_run_that_is_not_a_trainer(fails_with, runs):
    fails_with(ch02.decoder_start, _with(runs, "PE", 2, runs["PE"][2].model), "hand in the StepByStep trainer")


def test_the_fixed_start_model_is_named(fails_with, runs):
    fixed = _train(_seeded(lambda: order_model("no PE"), 0), 0)
    message = fails_with(ch02.decoder_start, _with(runs, "no PE", 0, fixed), "FixedStartSeq2Seq")
    assert "last source corner" in message


def test_swapped_variants(fails_with, runs):
    fails_with(ch02.decoder_start, {"no PE": runs["PE"], "PE": runs["no PE"]}, '"no PE" is EncoderSelfAttn')


def test_zeroed_table_in_the_pe_runs(fails_with, runs):
    zeroed = copy.deepcopy(runs["PE"][0])
    zeroed.model.encoder.pe.pe.zero_()
    fails_with(ch02.decoder_start, _with(runs, "PE", 0, zeroed), "the study's control")


def test_too_few_epochs(fails_with, runs):
    short = _train(_seeded(lambda: _model("PE"), 1), 1, n_epochs=5)
    fails_with(ch02.decoder_start, _with(runs, "PE", 1, short), "recorded 5 test losses")


def test_untrained_run_without_a_test_set(fails_with, runs):
    model = _model("no PE")
    untrained = StepByStep(model, nn.MSELoss(), optim.Adam(model.parameters(), lr=0.01))
    fails_with(ch02.decoder_start, _with(runs, "no PE", 4, untrained), "recorded 0 test losses")


def test_another_learning_rate(fails_with, runs):
    other = _train(_seeded(lambda: _model("no PE"), 3), 3, lr=0.001)
    fails_with(ch02.decoder_start, _with(runs, "no PE", 3, other), "Adam at 0.01")


def test_a_recorded_loss_edited_by_hand(fails_with, runs):
    edited = copy.deepcopy(runs["no PE"][0])
    edited.val_losses[-1] = 0.25
    fails_with(ch02.decoder_start, _with(runs, "no PE", 0, edited), "its model scores")


def test_the_same_seed_five_times(fails_with, runs):
    same = [copy.deepcopy(runs["PE"][0]) for _ in SEEDS]
    message = fails_with(ch02.decoder_start, {"no PE": runs["no PE"], "PE": same}, "trained exactly alike")
    assert "its own seed" in message
