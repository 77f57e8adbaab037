"""The lag-copy task of chapter 10: seeded, the targets repeat the token lag places back."""
import pytest
import torch

from stepbystep.data.lag_copy import FIRST_TOKEN, lag_copy_accuracy, lag_copy_batch
from stepbystep.models import IGNORE_INDEX


def test_targets_repeat_the_token_lag_places_back():
    inputs, targets = lag_copy_batch(4, 10, lag=3, vocab_size=8, generator=torch.Generator().manual_seed(0))
    assert inputs.shape == targets.shape == (4, 10) and inputs.dtype == torch.long
    assert torch.equal(targets[:, :3], torch.full((4, 3), IGNORE_INDEX))
    assert torch.equal(targets[:, 3:], inputs[:, :-3])
    assert int(inputs.min()) >= FIRST_TOKEN and int(inputs.max()) < 8  # 0 is padding, never drawn


def test_the_same_seed_gives_the_same_batches():
    first = lag_copy_batch(3, 6, generator=torch.Generator().manual_seed(5))
    again = lag_copy_batch(3, 6, generator=torch.Generator().manual_seed(5))
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    shown = lag_copy_batch(2, 10, 1, 16, torch.Generator().manual_seed(0))[0][0]  # chapter 10 prints it
    assert shown.tolist() == [15, 10, 9, 1, 14, 10, 8, 14, 8, 4]


def test_accuracy_counts_only_the_counted_positions():
    inputs, targets = lag_copy_batch(2, 5, lag=1, vocab_size=4, generator=torch.Generator().manual_seed(1))
    perfect = torch.nn.functional.one_hot(targets.clamp(min=0), 4).float()
    assert lag_copy_accuracy(perfect, targets) == 1.0
    wrong = torch.nn.functional.one_hot((targets.clamp(min=0) + 1) % 4, 4).float()
    assert lag_copy_accuracy(wrong, targets) == 0.0
    with pytest.raises(ValueError, match="at least one position"):
        lag_copy_accuracy(perfect, torch.full_like(targets, IGNORE_INDEX))


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="lag must be smaller than length=4"):
        lag_copy_batch(2, 4, lag=4)
    with pytest.raises(ValueError, match="vocab_size must be at least 3"):
        lag_copy_batch(2, 4, vocab_size=2)
    with pytest.raises(TypeError, match="n must be a positive int"):
        lag_copy_batch(2.0, 4)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        lag_copy_batch(2, 4, generator=0)
