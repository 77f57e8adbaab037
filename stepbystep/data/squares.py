"""Square corners: noisy sequences of the four corners of [-1, 1]², drawn in either direction.

The task of chapters 02-06: given the first two corners of a square (the source), predict
the last two (the target). The direction (clockwise or counter-clockwise) is the label.
"""
import numbers

import numpy as np
import torch
from torch.utils.data import TensorDataset

from ..checks import check_instance, check_non_negative_int, check_positive_int

__all__ = ["generate_sequences", "square_datasets", "square_splits"]

# the corners of [-1, 1]² in clockwise order (x to the right, y up)
BASIC_CORNERS = np.array([[-1.0, -1.0], [-1.0, 1.0], [1.0, 1.0], [1.0, -1.0]])
NOISE_STD = 0.1
MAX_SEED = 2**32 - 1  # the largest seed np.random.RandomState takes


def _check_seed(name, seed):
    """``None`` or an int in ``0..2**32 - 1``, the seeds ``np.random.RandomState`` takes."""
    if seed is None:
        return
    check_instance(name, seed, numbers.Integral, "an int or None")
    check_non_negative_int(name, seed)
    if seed > MAX_SEED:
        raise ValueError(f"{name} must be at most 2**32 - 1 (a legacy NumPy seed), got {seed}")


def generate_sequences(n=128, variable_len=False, seed=13):
    """Draw ``n`` noisy square-corner sequences: the book's data, draw for draw.

    Each sequence visits the corners of [-1, 1]² in order, clockwise (direction ``1``:
    ``[-1,-1] -> [-1,1] -> [1,1] -> [1,-1]``, wrapping around) or counter-clockwise (direction
    ``0``: the reverse order), and every point gets Gaussian noise with standard deviation 0.1.

    The draws are those of the book's ``generate_sequences`` (Daniel Voigt Godoy, *Deep
    Learning with PyTorch Step-by-Step*, chapters 8-10), in the same order and from the same
    legacy generator, so the same arguments give exactly the book's data: a base corner per
    sequence, a length per sequence when ``variable_len``, a direction per sequence, then each
    sequence's noise. A clockwise sequence starts at its base corner; a counter-clockwise one
    is the clockwise path from its base read backwards, so it starts at the corner before the
    base. Unlike the book, the draws come from a private ``np.random.RandomState(seed)``:
    NumPy's global random state (and PyTorch's) is left untouched.

    Args:
        n: number of sequences.
        variable_len: ``False`` gives every sequence all four corners. ``True`` gives each a
            random length of 2, 3 or 4: the first corners along its path are kept, the rest
            dropped.
        seed: seed of the private ``np.random.RandomState``, an int in ``0..2**32 - 1``;
            ``None`` draws fresh entropy.

    Returns:
        ``(points, directions)``: a list of ``n`` float64 arrays of shape ``(length, 2)``
        (``(4, 2)`` unless ``variable_len``) and an int array ``(n,)`` of directions.
    """
    check_positive_int("n", n)
    check_instance("variable_len", variable_len, (bool, np.bool_), "True or False")
    _check_seed("seed", seed)
    rng = np.random.RandomState(seed)
    bases = rng.randint(0, 4, size=n)  # (n,)
    lengths = rng.randint(2, 5, size=n) if variable_len else np.full(n, 4)  # (n,)
    directions = rng.randint(0, 2, size=n)  # (n,)
    # corner indices (n, 4): clockwise from the base, or that path reversed
    clockwise = (bases[:, None] + np.arange(4)) % 4
    order = np.where(directions[:, None] == 1, clockwise, clockwise[:, ::-1])
    points = []
    for corners, length in zip(order, lengths):
        noise = rng.standard_normal((length, 2)) * NOISE_STD  # (length, 2)
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
    check_positive_int("n_train", n_train)
    check_positive_int("n_test", n_test)
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
    check_positive_int("n_val", n_val)
    _check_seed("val_seed", val_seed)
    seeds = {"train_seed": train_seed, "val_seed": val_seed, "test_seed": test_seed}
    if None not in seeds.values() and len(set(seeds.values())) < 3:
        raise ValueError(f"the three seeds must differ, so that the sets are drawn independently; got {seeds}")
    train_data, test_data = square_datasets(n_train, n_test, train_seed, test_seed)
    return train_data, _source_target(n_val, val_seed), test_data
