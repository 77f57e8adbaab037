"""The sequence loss and the two accuracies: padding must never count."""
import pytest
import torch
import torch.nn.functional as F

from stepbystep.data.special_tokens import EOS, PAD
from stepbystep.models import SequenceCrossEntropy, masked_accuracy, sequence_accuracy, sequence_cross_entropy
from stepbystep.models.metrics import up_to_first, wilson_interval


def one_hot_logits(ids, vocab_size=6):
    return F.one_hot(ids, vocab_size).float() * 10.0  # (N, L, V): confident predictions of ids


def test_loss_ignores_padding():
    torch.manual_seed(0)
    logits = torch.randn(2, 4, 6)
    targets = torch.tensor([[3, 4, 2, 0], [5, 2, 0, 0]])
    keep = targets != PAD
    expected = F.cross_entropy(logits[keep], targets[keep])
    assert sequence_cross_entropy(logits, targets).item() == pytest.approx(expected.item(), rel=1e-6)
    changed = logits.clone()
    changed[~keep] = 100.0  # whatever the model says at padded positions
    assert sequence_cross_entropy(changed, targets).item() == pytest.approx(expected.item(), rel=1e-6)
    assert SequenceCrossEntropy()(logits, targets).item() == pytest.approx(expected.item(), rel=1e-6)


def test_loss_shape_errors():
    with pytest.raises(ValueError, match=r"logits must be a 3-D tensor, got shape \(2, 4\)"):
        sequence_cross_entropy(torch.randn(2, 4), torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match=r"targets must be \(N, L\) to match logits \(N, L, V\) = \(2, 4, 6\), got \(2, 3\)"):
        sequence_cross_entropy(torch.randn(2, 4, 6), torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(TypeError, match="targets must be a tensor, got list"):
        sequence_cross_entropy(torch.randn(2, 4, 6), [[0] * 4] * 2)


def test_masked_accuracy_counts_only_real_tokens():
    targets = torch.tensor([[3, 4, 2, 0], [5, 2, 0, 0]])
    predicted = torch.tensor([[3, 5, 2, 1], [5, 2, 4, 4]])  # one mistake, padding positions wrong
    assert masked_accuracy(one_hot_logits(predicted), targets) == pytest.approx(4 / 5)
    with pytest.raises(ValueError, match="targets must hold at least one token that is not padding"):
        masked_accuracy(one_hot_logits(predicted), torch.zeros(2, 4, dtype=torch.long))


def test_sequence_accuracy_exact_match_up_to_eos():
    targets = torch.tensor([[3, 4, EOS, PAD], [5, EOS, PAD, PAD], [4, 4, 4, EOS]])
    predicted = torch.tensor([
        [3, 4, EOS, 5, 5],  # right: what follows <eos> is ignored
        [5, 5, EOS, PAD, PAD],  # runs on past the target's end
        [4, 4, 4, EOS, PAD],  # right, longer tensor
    ])
    assert sequence_accuracy(predicted, targets) == pytest.approx(2 / 3)
    assert sequence_accuracy(targets, targets) == 1.0


def test_sequence_accuracy_needs_the_eos():
    targets = torch.tensor([[3, 4, EOS]])
    assert sequence_accuracy(torch.tensor([[3, 4]]), targets) == 0.0  # stopped without <eos>
    assert sequence_accuracy(torch.tensor([[3, EOS]]), targets) == 0.0  # stopped too early
    with pytest.raises(ValueError, match=r"target_ids must hold one row per prediction \(1\), got 2"):
        sequence_accuracy(torch.tensor([[3, EOS]]), torch.tensor([[3, EOS], [3, EOS]]))


def test_wilson_interval_known_values():
    low, high = wilson_interval(40, 1000)  # a textbook case: 4% of 1,000
    assert low == pytest.approx(0.02951, abs=1e-4) and high == pytest.approx(0.05401, abs=1e-4)
    low, high = wilson_interval(0, 1000)  # nothing seen: the interval still has room above 0
    assert low == 0.0 and high == pytest.approx(0.003827, abs=1e-5)
    low, high = wilson_interval(10, 10)
    assert high == 1.0 and low == pytest.approx(0.7225, abs=1e-4)


def test_wilson_interval_contains_the_rate_and_narrows_with_n():
    for successes, n in [(1, 3), (5, 100), (500, 1000), (999, 1000)]:
        low, high = wilson_interval(successes, n)
        assert 0.0 <= low <= successes / n <= high <= 1.0
    assert (lambda a, b: a[1] - a[0] > b[1] - b[0])(wilson_interval(4, 100), wilson_interval(40, 1000))
    wide, narrow = wilson_interval(40, 1000, z=2.576), wilson_interval(40, 1000, z=1.0)
    assert wide[0] < narrow[0] and wide[1] > narrow[1]


@pytest.mark.parametrize("successes, n, error, message", [
    (5, 0, ValueError, "n must be a positive int, got 0"),
    (11, 10, ValueError, "successes must be an int from 0 to 10, got 11"),
    (-1, 10, ValueError, "successes must be an int from 0 to 10, got -1"),
    (1.5, 10, TypeError, "successes must be an int from 0 to 10, got float 1.5"),
    (True, 10, TypeError, "successes must be an int from 0 to 10, got bool True"),
])
def test_wilson_interval_rejects_bad_counts(successes, n, error, message):
    with pytest.raises(error, match=message):
        wilson_interval(successes, n)


def test_up_to_first_keeps_each_row_through_its_first_token_only():
    ids = torch.tensor([[5, 2, 7, 2], [1, 1, 1, 1], [2, 3, 3, 3]])
    expected = torch.tensor([[True, True, False, False], [True, True, True, True], [True, False, False, False]])
    assert torch.equal(up_to_first(ids, 2), expected)
