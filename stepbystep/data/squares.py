"""Square corners: noisy sequences of the four corners of [-1, 1]², drawn in either direction.

The task of chapters 02-06: given the first two corners of a square (the source), predict
the last two (the target). The direction (clockwise or counter-clockwise) is the label.
"""
import numbers

import numpy as np
import torch
from torch.utils.data import TensorDataset

__all__ = ["generate_sequences", "square_datasets"]

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


def square_datasets(n_train=256, n_test=128, train_seed=13, test_seed=17):
    """Training and test sets of square corners for the encoder-decoder models.

    The two sets are drawn from different seeds, and the test set is built from its own
    (test) points: the original material built its "test" set from the training points.

    Returns:
        ``(train_data, test_data)``, both float32 ``TensorDataset``:

        * ``train_data`` holds ``(full, target)``: the whole sequence ``(n_train, 4, 2)``
          (a model in training mode needs the target for teacher forcing) and its last two
          corners ``(n_train, 2, 2)``;
        * ``test_data`` holds ``(source, target)``: the first two corners ``(n_test, 2, 2)``
          and the last two ``(n_test, 2, 2)``. The encoder-decoder models in eval mode accept
          just the source and predict greedily, so the test set doubles as the validation
          set (a trainer evaluates in eval mode).
    """
    _check_count("n_train", n_train, 1)
    _check_count("n_test", n_test, 1)
    _check_seed("train_seed", train_seed)
    _check_seed("test_seed", test_seed)
    train_points, _ = generate_sequences(n_train, seed=train_seed)
    test_points, _ = generate_sequences(n_test, seed=test_seed)
    full_train = torch.as_tensor(np.stack(train_points), dtype=torch.float32)  # (n_train, 4, 2)
    full_test = torch.as_tensor(np.stack(test_points), dtype=torch.float32)  # (n_test, 4, 2)
    train_data = TensorDataset(full_train, full_train[:, 2:].clone())  # (n_train, 4, 2), (n_train, 2, 2)
    test_data = TensorDataset(full_test[:, :2].clone(), full_test[:, 2:].clone())  # (n_test, 2, 2), (n_test, 2, 2)
    return train_data, test_data
