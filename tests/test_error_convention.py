"""One convention across the package: a wrong type is a TypeError, a wrong value a ValueError,
and the message reads "<name> must be <expected>, got <what arrived>"."""
import pytest
import torch
from torch import nn

from stepbystep import StepByStep
from stepbystep.book.training import StepByStep as BookStepByStep
from stepbystep.data import Vocab, line_pixels, make_regression_data, reverse_digits_dataset, train_val_split
from stepbystep.data.dates import date_pairs, render_date
from stepbystep.experiments.gradient_norms import layer_gradient_norms
from stepbystep.models import (
    Attention,
    DecoderOnlyTransformer,
    EncoderLayer,
    PatchEmbed,
    TokenTransformer,
    build_transformer,
    generate,
    greedy_decode,
    padding_mask,
    scaled_dot_product,
    subsequent_mask,
)
from stepbystep.models.metrics import wilson_interval


def _trainer(trainer_class=StepByStep):
    model = nn.Linear(2, 1)
    return trainer_class(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1), device="cpu")


def _gpt():
    return DecoderOnlyTransformer(8, d_model=8, n_heads=2, ff_units=8, n_layers=1, max_len=6)


def _token_model():
    return TokenTransformer(8, 8, d_model=8, n_heads=2, ff_units=8, n_layers=1, max_len=6)


q = torch.randn(2, 3, 4)

WRONG_TYPES = [
    ("size", lambda: subsequent_mask(2.0)),
    ("ids", lambda: padding_mask([[1, 0]])),
    ("hidden_dim", lambda: Attention("4")),
    ("n_heads", lambda: EncoderLayer(2.0, 4, 8)),
    ("k", lambda: scaled_dot_product(q, q.tolist(), q)),
    ("embed_dim", lambda: PatchEmbed(12, 4, 1, 8.0)),
    ("seed", lambda: build_transformer(seed=1.5)),
    ("max_new_tokens", lambda: greedy_decode(_token_model(), torch.ones(1, 3, dtype=torch.long), 1, 2, 4.0)),
    ("source_ids", lambda: _token_model()(torch.rand(1, 3), torch.ones(1, 2, dtype=torch.long))),
    ("successes", lambda: wilson_interval(1.5, 10)),
    ("max_new_tokens", lambda: generate(_gpt(), [1, 2], 1.5)),
    ("ids", lambda: _gpt()(torch.rand(1, 3))),
    ("n", lambda: make_regression_data(n=2.5)),
    ("n_symbols", lambda: reverse_digits_dataset(5, n_symbols="10")),
    ("day", lambda: render_date("2001-03-03", "d MMM y")),
    ("n", lambda: date_pairs(2.5)),
    ("start", lambda: line_pixels(1.0, 0)),
    ("lr", lambda: layer_gradient_norms(lr="0.1")),
    ("loss_fn", lambda: StepByStep(nn.Linear(2, 1), "mse", torch.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1))),
    ("train_loader", lambda: _trainer().set_loaders(3)),
    ("func", lambda: _trainer(BookStepByStep).loader_apply([], "correct")),
]

WRONG_VALUES = [
    ("size", lambda: subsequent_mask(0)),
    ("ids", lambda: padding_mask(torch.ones(4, dtype=torch.long))),
    ("hidden_dim", lambda: Attention(0)),
    ("ff_units", lambda: EncoderLayer(2, 4, 0)),
    ("v", lambda: scaled_dot_product(q, q, q[:, :2])),
    ("seed", lambda: build_transformer(seed=-1)),
    ("max_new_tokens", lambda: greedy_decode(_token_model(), torch.ones(1, 3, dtype=torch.long), 1, 2, 7)),
    ("successes", lambda: wilson_interval(11, 10)),
    ("max_new_tokens", lambda: generate(_gpt(), [1, 2], 0)),
    ("ids", lambda: _gpt()(torch.tensor([[1, 9]]))),
    ("n", lambda: make_regression_data(n=0)),
    ("n_symbols", lambda: reverse_digits_dataset(5, n_symbols=40)),
    ("val_fraction", lambda: train_val_split([("a", "a"), ("b", "b")], val_fraction=1.0)),
    ("ids", lambda: Vocab("ab").decode([9])),
    ("weekday", lambda: render_date(__import__("datetime").date(2001, 3, 3), "EEE d MMM y", weekday=7)),
    ("n", lambda: date_pairs(-1)),
    ("direction", lambda: line_pixels(0, 3)),
    ("warmup_steps", lambda: layer_gradient_norms(warmup_steps=-1)),
    ("interval", lambda: _with_scheduler(interval="step")),
    ("scheduler", lambda: _trainer().set_lr_scheduler(torch.optim.lr_scheduler.StepLR(_trainer().optimizer, 1))),
]


def _with_scheduler(**kwargs):
    trainer = _trainer()
    trainer.set_lr_scheduler(torch.optim.lr_scheduler.StepLR(trainer.optimizer, 1), **kwargs)


@pytest.mark.parametrize("name, call", WRONG_TYPES, ids=[f"{name}-{i}" for i, (name, _) in enumerate(WRONG_TYPES)])
def test_a_wrong_type_is_a_type_error_that_names_the_argument(name, call):
    with pytest.raises(TypeError, match=f"^{name} must be .*, got "):
        call()


@pytest.mark.parametrize("name, call", WRONG_VALUES,
                         ids=[f"{name}-{i}" for i, (name, _) in enumerate(WRONG_VALUES)])
def test_a_wrong_value_is_a_value_error_that_names_the_argument(name, call):
    with pytest.raises(ValueError, match=f"^{name} must .*got "):
        call()
