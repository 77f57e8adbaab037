"""Square corners: shapes, seeding, geometry of the directions, and the train/validation/test sets."""
import numpy as np
import pytest
import torch
from torch.utils.data import TensorDataset

from stepbystep.data import generate_sequences, square_datasets, square_splits

CLOCKWISE = np.array([[-1, -1], [-1, 1], [1, 1], [1, -1]])


def _corner_index(points):
    """Index in the clockwise order of the corner nearest to each point ``(L, 2)`` -> ``(L,)``."""
    distances = np.linalg.norm(points[:, None, :] - CLOCKWISE[None, :, :], axis=-1)  # (L, 4)
    return distances.argmin(axis=1)


def _signed_area(polygon):
    """Shoelace formula: positive for a counter-clockwise polygon, negative for a clockwise one."""
    x, y = polygon[:, 0], polygon[:, 1]
    return 0.5 * np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y)


def test_shapes_and_types():
    points, directions = generate_sequences(n=10)
    assert isinstance(points, list) and len(points) == 10
    assert all(p.shape == (4, 2) and np.issubdtype(p.dtype, np.floating) for p in points)
    assert directions.shape == (10,) and np.issubdtype(directions.dtype, np.integer)
    assert set(np.unique(directions)) <= {0, 1}


def test_same_seed_same_data_and_different_seeds_differ():
    first, dirs_first = generate_sequences(n=20, seed=5)
    again, dirs_again = generate_sequences(n=20, seed=5)
    other, _ = generate_sequences(n=20, seed=6)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert np.array_equal(dirs_first, dirs_again)
    assert not np.allclose(np.stack(first), np.stack(other))


# The book's generator (Daniel Voigt Godoy, *Deep Learning with PyTorch Step-by-Step*,
# data_generation/square_sequences.py) gives these values; chapter 8 draws n=128 with seed 13,
# chapters 9-10 draw n=256 with seed 13 for training and the default n=128 with seed 17 for
# testing. Printed to 8 decimals, as NumPy shows float64 arrays.
BOOK_N128_SEED13_FIRST_TWO = np.array([
    [[1.03487506, 0.96613817], [0.80546093, -0.91690943], [-0.82507582, -0.94988627], [-0.86696831, 0.93424827]],
    [[1.0184946, -1.06510565], [0.88794931, 0.96533932], [-1.09113448, 0.92538647], [-1.07709685, -1.04139537]],
])
BOOK_N256_SEED13_FIRST = np.array(
    [[-0.97083595, 0.96103445], [-0.95248123, -1.00723632], [1.12690581, -0.9742751], [0.83357436, 0.98782536]]
)
BOOK_N256_SEED13_DIRECTIONS_0_TO_9 = [0, 1, 1, 1, 0, 1, 1, 1, 0, 1]
BOOK_N128_SEED17_FIRST = np.array(
    [[0.97752013, -0.77840985], [-1.01542584, -0.97123928], [-0.9420639, 1.09332502], [1.16696183, 1.17172395]]
)


def test_the_data_are_the_books():
    points, directions = generate_sequences(n=128, seed=13)
    np.testing.assert_allclose(np.stack(points[:2]), BOOK_N128_SEED13_FIRST_TWO, rtol=0, atol=5e-9)
    assert directions[:2].tolist() == [1, 0]  # clockwise from [1, 1]; counter-clockwise from [1, -1]
    points, directions = generate_sequences(n=256, seed=13)
    np.testing.assert_allclose(points[0], BOOK_N256_SEED13_FIRST, rtol=0, atol=5e-9)
    assert directions[:10].tolist() == BOOK_N256_SEED13_DIRECTIONS_0_TO_9
    assert len(points) == 256 and int(directions.sum()) == 123  # the book's 256 directions: 123 clockwise
    points, _ = generate_sequences(seed=17)
    np.testing.assert_allclose(points[0], BOOK_N128_SEED17_FIRST, rtol=0, atol=5e-9)


def test_a_counter_clockwise_sequence_is_the_clockwise_path_from_its_base_reversed():
    """The book reverses the whole clockwise path, so direction 0 starts one corner before the base."""
    points, directions = generate_sequences(n=64, seed=13)
    bases = np.random.RandomState(13).randint(0, 4, size=64)  # the first draw: the base corners
    for sequence, direction, base in zip(points, directions, bases):
        start = base if direction == 1 else (base - 1) % 4
        assert _corner_index(sequence)[0] == start


def test_variable_lengths_are_the_books_too():
    """Lengths are drawn between the bases and the directions, as in the book."""
    points, directions = generate_sequences(n=50, variable_len=True, seed=13)
    rng = np.random.RandomState(13)
    rng.randint(0, 4, size=50)  # bases
    lengths = rng.randint(2, 5, size=50)
    assert [len(p) for p in points] == lengths.tolist()
    assert np.array_equal(directions, rng.randint(0, 2, size=50))


def test_global_random_states_are_untouched():
    np.random.seed(0)
    torch.manual_seed(0)
    numpy_state = np.random.get_state()
    torch_state = torch.get_rng_state()
    generate_sequences(n=50, variable_len=True, seed=3)
    generate_sequences(n=5, seed=None)
    square_datasets(n_train=8, n_test=4)
    after = np.random.get_state()
    assert after[0] == numpy_state[0] and np.array_equal(after[1], numpy_state[1]) and after[2:] == numpy_state[2:]
    assert torch.equal(torch.get_rng_state(), torch_state)


def test_points_are_corners_plus_noise_of_std_one_tenth():
    points, _ = generate_sequences(n=2000, seed=1)
    points = np.stack(points)  # (2000, 4, 2)
    corners = CLOCKWISE[_corner_index(points.reshape(-1, 2))].reshape(points.shape)  # (2000, 4, 2)
    noise = points - corners
    assert abs(noise.mean()) < 0.005
    assert noise.std() == pytest.approx(0.1, abs=0.003)
    # every point belongs to a different corner of its square, and every start corner occurs
    indices = _corner_index(points.reshape(-1, 2)).reshape(-1, 4)  # (2000, 4)
    assert all(len(set(row)) == 4 for row in indices)
    assert set(indices[:, 0]) == {0, 1, 2, 3}


def test_direction_one_is_clockwise_and_zero_counter_clockwise():
    points, directions = generate_sequences(n=200, seed=2)
    assert set(directions) == {0, 1}
    for sequence, direction in zip(points, directions):
        indices = _corner_index(sequence)  # (4,)
        step = 1 if direction == 1 else -1
        assert np.array_equal(indices, (indices[0] + step * np.arange(4)) % 4)
        area = _signed_area(CLOCKWISE[indices])  # the noise-free path
        assert (area < 0) if direction == 1 else (area > 0)


def test_variable_lengths_keep_the_first_corners_of_the_path():
    points, directions = generate_sequences(n=300, variable_len=True, seed=4)
    lengths = [len(p) for p in points]
    assert set(lengths) == {2, 3, 4}
    for sequence, direction in zip(points, directions):
        indices = _corner_index(sequence)
        step = 1 if direction == 1 else -1
        assert np.array_equal(indices, (indices[0] + step * np.arange(len(sequence))) % 4)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"n": 0}, ValueError, "n must be a positive int, got 0"),
        ({"n": 2.5}, TypeError, "n must be a positive int, got float 2.5"),
        ({"n": True}, TypeError, "n must be a positive int, got bool"),
        ({"variable_len": "yes"}, TypeError, "variable_len must be True or False, got str"),
        ({"seed": -1}, ValueError, "seed must be a non-negative int, got -1"),
        ({"seed": 2**32}, ValueError, r"seed must be at most 2\*\*32 - 1 \(a legacy NumPy seed\), got 4294967296"),
        ({"seed": "13"}, TypeError, "seed must be an int or None, got str"),
        ({"seed": 13.0}, TypeError, "seed must be an int or None, got float"),
    ],
)
def test_generate_sequences_rejects_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        generate_sequences(**kwargs)


def test_datasets_shapes_and_dtypes():
    train_data, test_data = square_datasets(n_train=16, n_test=8)
    assert isinstance(train_data, TensorDataset) and isinstance(test_data, TensorDataset)
    full, train_target = train_data.tensors
    source, test_target = test_data.tensors
    assert full.shape == (16, 4, 2) and train_target.shape == (16, 2, 2)
    assert source.shape == (8, 2, 2) and test_target.shape == (8, 2, 2)
    assert all(t.dtype == torch.float32 for t in (full, train_target, source, test_target))
    assert torch.equal(train_target, full[:, 2:])


def test_datasets_come_from_their_own_seeds():
    train_data, test_data = square_datasets(n_train=16, n_test=8, train_seed=13, test_seed=17)
    train_points, _ = generate_sequences(16, seed=13)
    test_points, _ = generate_sequences(8, seed=17)
    expected_train = torch.tensor(np.stack(train_points), dtype=torch.float32)  # (16, 4, 2)
    expected_test = torch.tensor(np.stack(test_points), dtype=torch.float32)  # (8, 4, 2)
    torch.testing.assert_close(train_data.tensors[0], expected_train)
    torch.testing.assert_close(test_data.tensors[0], expected_test[:, :2])
    torch.testing.assert_close(test_data.tensors[1], expected_test[:, 2:])


def test_test_set_is_not_built_from_the_training_points():
    train_data, test_data = square_datasets(n_train=64, n_test=64)
    train_points = train_data.tensors[0].reshape(-1, 2)  # (256, 2)
    test_points = torch.cat(test_data.tensors, dim=1).reshape(-1, 2)  # (256, 2)
    # no test point coincides with any training point
    assert torch.cdist(test_points, train_points).min() > 1e-6


def test_datasets_reject_bad_arguments():
    with pytest.raises(ValueError, match="n_train must be a positive int, got 0"):
        square_datasets(n_train=0)
    with pytest.raises(TypeError, match="test_seed must be an int or None, got float"):
        square_datasets(test_seed=1.0)


def test_splits_keep_the_training_and_test_sets_of_square_datasets():
    train_data, val_data, test_data = square_splits(n_train=16, n_val=8, n_test=8)
    old_train, old_test = square_datasets(n_train=16, n_test=8)
    for new, old in ((train_data, old_train), (test_data, old_test)):
        assert all(torch.equal(a, b) for a, b in zip(new.tensors, old.tensors))


def test_validation_set_is_drawn_like_the_test_set_with_its_own_seed():
    _, val_data, _ = square_splits(n_train=16, n_val=8, n_test=8, val_seed=19)
    val_points, _ = generate_sequences(8, seed=19)
    expected = torch.tensor(np.stack(val_points), dtype=torch.float32)  # (8, 4, 2)
    source, target = val_data.tensors
    assert source.shape == (8, 2, 2) and target.shape == (8, 2, 2) and source.dtype == torch.float32
    torch.testing.assert_close(source, expected[:, :2])
    torch.testing.assert_close(target, expected[:, 2:])


def test_the_three_sets_share_no_point():
    train_data, val_data, test_data = square_splits(n_train=64, n_val=64, n_test=64)
    train = train_data.tensors[0].reshape(-1, 2)  # (256, 2)
    val = torch.cat(val_data.tensors, dim=1).reshape(-1, 2)  # (256, 2)
    test = torch.cat(test_data.tensors, dim=1).reshape(-1, 2)  # (256, 2)
    for a, b in ((val, train), (val, test), (test, train)):
        assert torch.cdist(a, b).min() > 1e-6


def test_splits_reject_bad_arguments_and_equal_seeds():
    with pytest.raises(ValueError, match="n_val must be a positive int, got 0"):
        square_splits(n_val=0)
    with pytest.raises(TypeError, match="val_seed must be an int or None, got str"):
        square_splits(val_seed="19")
    with pytest.raises(ValueError, match="the three seeds must differ"):
        square_splits(val_seed=13)
    with pytest.raises(ValueError, match="the three seeds must differ"):
        square_splits(val_seed=17)
    square_splits(n_train=2, n_val=2, n_test=2, train_seed=None, val_seed=None, test_seed=None)  # fresh entropy
