"""Chapter 02: the decoder mask's off-by-one diagonal gets its own diagnosis, the exercise's
messages put "an" before a vowel, and two figures keep their labels off the marks they name."""
import math

import matplotlib
import numpy as np
import pytest
import torch

from stepbystep import plots
from stepbystep.exercises import ch02
from stepbystep.exercises.ch02 import _a
from stepbystep.models import DecoderSelfAttn, EncoderDecoderSelfAttn, EncoderSelfAttn


def _real(lengths, size):
    return torch.arange(size) < lengths[:, None]  # (N, L)


@pytest.mark.parametrize("wrong", [
    lambda lengths, size: torch.ones(size, size, dtype=torch.bool).tril(1)[None] & _real(lengths, size)[:, None, :],
    lambda lengths, size: torch.ones(size, size, dtype=torch.bool).tril(1).expand(len(lengths), size, size),
])
def test_decoder_mask_one_diagonal_too_many_is_named(fails_with, wrong):
    fails_with(ch02.decoder_mask, wrong, "one diagonal too many")


def test_the_right_mask_is_not_called_off_by_one():
    assert ch02.decoder_mask.check(ch02.decoder_mask._solution)


def test_class_names_get_their_article():
    assert _a("EncoderSelfAttn") == "an EncoderSelfAttn" and _a("DecoderPe") == "a DecoderPe"
    assert _a("int") == "an int" and _a("list") == "a list"


def test_the_link_label_sits_beside_its_arrow_along_it():
    matplotlib.use("Agg")
    model = EncoderDecoderSelfAttn(EncoderSelfAttn(3, 2, 10, n_features=2), DecoderSelfAttn(3, 2, 10, n_features=2),
                                   input_len=2, target_len=2)
    fig = plots.architecture_diagram(model)
    ax = fig.axes[0]
    label = next(text for text in ax.texts if text.get_text() == "keys and values")
    arrow = next(text for text in ax.texts if text.get_text() == "" and text.xy != text.xyann
                 and abs(text.xy[0] - text.xyann[0]) > 0.1)  # the one arrow across the two columns
    (u0, v0), (u1, v1) = ax.transData.transform([arrow.xyann, arrow.xy])
    slope = math.degrees(math.atan2(v1 - v0, u1 - u0))
    assert label.get_rotation() == pytest.approx(slope % 360, abs=0.5)
    dx, dy = label.xyann  # offset points, perpendicular to the arrow, on its upper side
    assert dy > 0 and math.hypot(dx, dy) == pytest.approx(4) and abs(dx * (u1 - u0) + dy * (v1 - v0)) < 1e-6


def test_corner_numbers_point_away_from_the_square_centre():
    corners = np.array([[-1.0, -1.0], [-1.0, 1.0], [1.0, 1.0], [1.0, -1.0]])
    source, target = corners[None, :2], corners[None, 2:]  # (1, 2, 2) each
    fig = plots.sequence_predictions(source, target, (target + target[:, ::-1]) / 2, n=1)
    numbers = {text.get_text(): text for text in fig.axes[0].texts}
    assert sorted(numbers) == ["0", "1", "2", "3"]
    for order, (x, y) in enumerate(corners):
        dx, dy = numbers[str(order)].xyann
        assert np.sign(dx) == np.sign(x) and np.sign(dy) == np.sign(y), order
