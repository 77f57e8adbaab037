"""Line images: shapes and types, the lines' geometry per class, noise, seeding, the book's images,
and the datasets."""
import numpy as np
import pytest
import torch
from torch.utils.data import TensorDataset

from stepbystep.data import LINE_CLASSES, LINE_NOISE, generate_dataset, line_datasets, line_pixels


def _line_mask(images):
    return images == 255  # (N, 1, s, s): the noise never reaches 255


def test_shapes_types_and_values():
    images, labels = generate_dataset(img_size=12, n_images=50, seed=1)
    assert images.shape == (50, 1, 12, 12) and images.dtype == np.uint8
    assert labels.shape == (50,) and labels.dtype == np.int64
    assert set(np.unique(labels)) <= {0, 1, 2}
    assert images.max() == 255
    off_line = images[~_line_mask(images)]
    assert off_line.max() <= LINE_NOISE < 255
    assert len(LINE_CLASSES) == 3


def test_every_image_holds_one_line_of_its_class():
    images, labels = generate_dataset(img_size=12, n_images=400, seed=2)
    for image, label in zip(images[:, 0], labels):
        rows, cols = np.nonzero(image == 255)
        order = np.argsort(cols, kind="stable")
        rows, cols = rows[order], cols[order]
        if label == 0:  # a full row or a full column
            assert len(rows) == 12 and (len(set(rows)) == 1 or len(set(cols)) == 1)
        else:  # a diagonal: one pixel per column, rows moving by one, up (/) or down (\)
            steps = np.diff(rows)
            assert len(set(cols)) == len(cols) and np.all(np.diff(cols) == 1)
            assert np.all(steps == (-1 if label == 1 else 1))
            # it runs from one edge of the image to another
            assert cols.max() == 11 or rows.min() == 0 or rows.max() == 11
            assert cols.min() == 0 or rows.min() == 0 or rows.max() == 11


def test_line_pixels_corner_cases():
    rows, cols = line_pixels(-11, 1, img_size=12)  # / from the last column of the bottom edge: one pixel
    assert rows.tolist() == [11] and cols.tolist() == [11]
    rows, cols = line_pixels(11, 1, img_size=12)  # / from the bottom-left corner: the anti-diagonal
    assert rows.tolist() == list(range(11, -1, -1)) and cols.tolist() == list(range(12))
    rows, cols = line_pixels(0, 2, img_size=12)  # \ never starts in column 0: it moves to column 1
    assert rows.tolist() == list(range(11)) and cols.tolist() == list(range(1, 12))
    rows, cols = line_pixels(0, 0, img_size=12)  # │ in column 0
    assert rows.tolist() == list(range(12)) and cols.tolist() == [0] * 12
    rows, cols = line_pixels(5, 0, img_size=12)  # ─ in row 5
    assert rows.tolist() == [5] * 12 and cols.tolist() == list(range(12))


def test_number_of_distinct_lines():
    lines = {tuple(map(tuple, line_pixels(start, direction, 12))) for start in range(-11, 12) for direction in range(3)}
    assert len(lines) == 67  # 23 straight lines, 22 of each diagonal


def test_noise_level_and_clean_images():
    noisy, _ = generate_dataset(n_images=300, seed=4, noise=64)
    background = noisy[~_line_mask(noisy)]
    assert background.min() == 0 and background.max() == 64
    assert abs(background.mean() - 32) < 1.0  # uniform on 0..64
    clean, labels = generate_dataset(n_images=300, seed=4, noise=0)
    assert set(np.unique(clean)) == {0, 255}
    assert np.array_equal(_line_mask(clean), _line_mask(noisy))  # the noise is drawn after the lines
    assert np.array_equal(labels, generate_dataset(n_images=300, seed=4, noise=64)[1])


def test_clean_images_are_the_books_draws():
    """With noise=0 the seeded draws are the book's: starts, then directions, from RandomState(seed)."""
    images, labels = generate_dataset(img_size=12, n_images=200, seed=17, noise=0)
    rng = np.random.RandomState(17)
    starts = rng.randint(-11, 12, size=200)
    directions = rng.randint(0, 3, size=200)
    assert np.array_equal(labels, directions)
    for image, start, direction in zip(images[:, 0], starts, directions):
        expected = np.zeros((12, 12), dtype=np.uint8)
        expected[line_pixels(int(start), int(direction), 12)] = 255
        assert np.array_equal(image, expected)


def test_binary_labels_as_in_the_book():
    images, labels = generate_dataset(n_images=300, binary=True, seed=17, noise=0)
    _, three = generate_dataset(n_images=300, binary=False, seed=17, noise=0)
    assert np.array_equal(labels, (three > 0).astype(np.int64))
    for image, label in zip(images[:, 0], labels):  # every diagonal drawn rising, as the book's generator does
        if label == 1:
            rows, cols = np.nonzero(image == 255)
            assert np.all(np.diff(rows[np.argsort(cols)]) == -1)


def test_same_seed_same_images_other_seed_differs():
    first = generate_dataset(n_images=100, seed=7)
    again = generate_dataset(n_images=100, seed=7)
    other = generate_dataset(n_images=100, seed=8)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not np.array_equal(first[0], other[0])


def test_global_random_states_are_untouched():
    np.random.seed(0)
    torch.manual_seed(0)
    numpy_state = np.random.get_state()
    torch_state = torch.get_rng_state()
    generate_dataset(n_images=50, seed=3)
    line_datasets(n_train=20, n_val=10)
    after = np.random.get_state()
    assert after[0] == numpy_state[0] and np.array_equal(after[1], numpy_state[1]) and after[2:] == numpy_state[2:]
    assert torch.equal(torch.get_rng_state(), torch_state)


def test_line_datasets_scaled_and_split():
    train_data, val_data = line_datasets(n_train=30, n_val=10, seed=17)
    assert isinstance(train_data, TensorDataset) and isinstance(val_data, TensorDataset)
    x, y = train_data.tensors
    assert x.shape == (30, 1, 12, 12) and x.dtype == torch.float32 and y.dtype == torch.int64
    assert x.min() >= 0 and x.max() == 1.0 and len(val_data) == 10
    images, labels = generate_dataset(n_images=40, seed=17)
    both = torch.cat([x, val_data.tensors[0]])
    assert torch.equal(both, torch.as_tensor(images, dtype=torch.float32) / 255)
    assert torch.equal(torch.cat([y, val_data.tensors[1]]), torch.as_tensor(labels))


@pytest.mark.parametrize("kwargs, error, message", [
    ({"n_images": 0}, ValueError, "n_images must be a positive int, got 0"),
    ({"n_images": 2.5}, TypeError, "n_images must be a positive int, got float 2.5"),
    ({"img_size": 1}, ValueError, "img_size must be an int >= 2, got 1"),
    ({"noise": 255}, ValueError, "noise must be an int from 0 to 254, got 255"),
    ({"binary": "yes"}, TypeError, "binary must be True or False, got str"),
    ({"seed": -1}, ValueError, "seed must be a non-negative int, got -1"),
])
def test_bad_arguments_are_clear_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        generate_dataset(**kwargs)


def test_line_pixels_rejects_bad_starts_and_directions():
    with pytest.raises(ValueError, match="start must be an int from -11 to 11, got 12"):
        line_pixels(12, 0, 12)
    with pytest.raises(ValueError, match="direction must be an int from 0 to 2, got 3"):
        line_pixels(3, 3, 12)
