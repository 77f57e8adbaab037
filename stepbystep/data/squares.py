"""Square corners: noisy sequences of the four corners of [-1, 1]², drawn in either direction.

The task of chapters 02-06: given the first two corners of a square (the source), predict
the last two (the target). The direction (clockwise or counter-clockwise) is the label.
"""
import numbers

import numpy as np
import torch
from torch.utils.data import TensorDataset

__all__ = ["generate_sequences", "square_datasets", "square_splits"]

# the corners of [-1, 1]² in clockwise order (x to the right, y up)
BASIC_CORNERS = np.array([[-1.0, -1.0], [-1.0, 1.0], [1.0, 1.0], [1.0, -1.0]])
NOISE_STD = 0.1


def _check_count(name, value, minimum):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")


def _check_seed(name, seed):
    if seed is None:
        return
    if not isinstance(seed, numbers.Integral) or isinstance(seed, bool):
        raise TypeError(f"{name} must be an int or None, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"{name} must be non-negative, got {seed}")


def generate_sequences(n=128, variable_len=False, seed=13):
    """Draw ``n`` noisy square-corner sequences.

    Each sequence starts at a random corner of [-1, 1]² and visits the corners in order,
    clockwise (direction ``1``: ``[-1,-1] -> [-1,1] -> [1,1] -> [1,-1]``, wrapping around) or
    counter-clockwise (direction ``0``: the reverse order). Every point gets Gaussian noise
    with standard deviation 0.1.

    Args:
        n: number of sequences.
        variable_len: ``False`` gives every sequence all four corners. ``True`` gives each a
            random length of 2, 3 or 4: the first corners along its path are kept (the
            starting corner, then the next ones in its direction), the rest dropped.
        seed: seed of the generator's own ``np.random.default_rng``; the global NumPy and
            PyTorch random states are left untouched. ``None`` draws fresh entropy.

    Returns:
        ``(points, directions)``: a list of ``n`` float arrays of shape ``(length, 2)``
        (``(4, 2)`` unless ``variable_len``) and an int array ``(n,)`` of directions.
    """
    _check_count("n", n, 1)
    if not isinstance(variable_len, (bool, np.bool_)):
        raise TypeError(f"variable_len must be True or False, got {variable_len!r}")
    _check_seed("seed", seed)
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, 4, size=n)  # (n,)
    lengths = rng.integers(2, 5, size=n) if variable_len else np.full(n, 4)  # (n,)
    directions = rng.integers(0, 2, size=n)  # (n,)
    steps = np.where(directions == 1, 1, -1)  # (n,): +1 walks the clockwise order forwards
    order = (starts[:, None] + steps[:, None] * np.arange(4)) % 4  # (n, 4) corner indices
    points = []
    for corners, length in zip(order, lengths):
        noise = rng.normal(0.0, NOISE_STD, size=(length, 2))  # (length, 2)
        points.append(BASIC_CORNERS[corners[:length]] + noise)  # (length, 2)
    return points, directions


def _full_sequences(n, seed):
    """``n`` whole sequences ``(n, 4, 2)`` as a float32 tensor, drawn with ``seed``."""
    points, _ = generate_sequences(n, seed=seed)
    return torch.as_tensor(np.stack(points), dtype=torch.float32)  # (n, 4, 2)


def _source_target(n, seed):
    """``(source, target)`` pairs for evaluation: the first two corners and the last two."""
    full = _full_sequences(n, seed)  # (n, 4, 2)
    return TensorDataset(full[:, :2].clone(), full[:, 2:].clone())  # (n, 2, 2), (n, 2, 2)


def square_datasets(n_train=256, n_test=128, train_seed=13, test_seed=17):
    """Training and test sets of square corners for the encoder-decoder models.

    The two sets are drawn from different seeds, and the test set is built from its own
    (test) points: the original material built its "test" set from the training points.
    To tune or monitor a model on data other than the test set, use ``square_splits``, which
    adds a validation set drawn with a third seed.

    Returns:
        ``(train_data, test_data)``, both float32 ``TensorDataset``:

        * ``train_data`` holds ``(full, target)``: the whole sequence ``(n_train, 4, 2)``
          (a model in training mode needs the target for teacher forcing) and its last two
          corners ``(n_train, 2, 2)``;
        * ``test_data`` holds ``(source, target)``: the first two corners ``(n_test, 2, 2)``
          and the last two ``(n_test, 2, 2)``. The encoder-decoder models in eval mode accept
          just the source and predict greedily (a trainer evaluates in eval mode).
    """
    _check_count("n_train", n_train, 1)
    _check_count("n_test", n_test, 1)
    _check_seed("train_seed", train_seed)
    _check_seed("test_seed", test_seed)
    full_train = _full_sequences(n_train, train_seed)  # (n_train, 4, 2)
    train_data = TensorDataset(full_train, full_train[:, 2:].clone())  # (n_train, 4, 2), (n_train, 2, 2)
    return train_data, _source_target(n_test, test_seed)


def square_splits(n_train=256, n_val=128, n_test=128, train_seed=13, val_seed=19, test_seed=17):
    """Training, validation and test sets of square corners, each drawn with its own seed.

    The training and test sets are exactly ``square_datasets(n_train, n_test, train_seed,
    test_seed)``. The validation set is drawn like them (the same distribution) with
    ``val_seed`` and has the test set's form, ``(source, target)`` pairs ``(n_val, 2, 2)``:
    a trainer evaluates on it after every epoch, and the test set stays untouched until the
    final evaluation.

    Returns:
        ``(train_data, val_data, test_data)``, float32 ``TensorDataset``.

    Raises:
        ValueError: when two of the seeds are equal (two sets would share their draws).
    """
    _check_count("n_val", n_val, 1)
    _check_seed("val_seed", val_seed)
    seeds = {"train_seed": train_seed, "val_seed": val_seed, "test_seed": test_seed}
    if None not in seeds.values() and len(set(seeds.values())) < 3:
        raise ValueError(f"the three seeds must differ, so that the sets are drawn independently; got {seeds}")
    train_data, test_data = square_datasets(n_train, n_test, train_seed, test_seed)
    return train_data, _source_target(n_val, val_seed), test_data
