"""Chapter 11's figures: patch numbers beside the pixels, the learned table highlighted as new, the
position-similarity panels laid out alike."""
import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from stepbystep.experiments.vit_positions import small_vit  # noqa: E402
from stepbystep.plots import patch_grid, position_similarity_grid  # noqa: E402
from stepbystep.plots.architecture import HIGHLIGHT, PARTS, architecture_diagram  # noqa: E402


def test_patch_grid_numbers_no_pixel_and_frames_lie_outside_the_pixels():
    image = torch.arange(144.0).reshape(1, 12, 12) / 144
    whole = patch_grid(image, 4).axes[0]
    extents = [shown.get_extent() for shown in whole.images]  # (left, right, bottom, top), y pointing down
    assert len(extents) == 9
    for shown, (number, (left, right, bottom, top)) in zip(whole.images, enumerate(extents)):
        row, col = divmod(number, 3)
        np.testing.assert_array_equal(shown.get_array(), image[0, 4 * row:4 * row + 4, 4 * col:4 * col + 4].numpy())
        assert (right - left, bottom - top) == pytest.approx((4, 4))  # one data unit per pixel
    for text in whole.texts:  # no number lies on any patch's pixels
        x, y = text.get_position()
        assert not any(left <= x <= right and top <= y <= bottom for left, right, bottom, top in extents), text
    for frame, (left, right, bottom, top) in zip(whole.patches, extents):  # each frame surrounds its patch
        (x0, y0), width, height = frame.get_xy(), frame.get_width(), frame.get_height()
        assert x0 < left and y0 < top and x0 + width > right and y0 + height > bottom
    # patch 3's number sits above patch 3, not on it
    x, y = whole.texts[3].get_position()
    left, right, bottom, top = extents[3]
    assert left < x < right and y < top


def test_the_learned_table_can_be_highlighted_apart_from_the_sinusoids():
    assert "pos_embed" in PARTS
    fig = architecture_diagram(small_vit(0, n_outputs=3), highlight=("pos_embed",))
    boxes = {t.get_text(): to_hex(t.get_bbox_patch().get_facecolor()) for t in fig.axes[0].texts
             if t.get_bbox_patch() is not None and t.get_text()}
    assert [text for text, color in boxes.items() if color == HIGHLIGHT] == ["+ learned positions (pos_embed)"]
    everything_positional = architecture_diagram(small_vit(0, n_outputs=3), highlight=("positions",))
    highlighted = [t.get_text() for t in everything_positional.axes[0].texts
                   if t.get_bbox_patch() is not None and to_hex(t.get_bbox_patch().get_facecolor()) == HIGHLIGHT]
    assert "+ learned positions (pos_embed)" in highlighted and len(highlighted) == 2  # and the sinusoids' box


@pytest.mark.parametrize("n_tables", [2, 3])
def test_position_similarity_panels_line_up(n_tables):
    similarity = torch.arange(81.0).reshape(9, 9) / 81
    fig = position_similarity_grid({f"table {i}": similarity for i in range(n_tables)})
    fig.canvas.draw()
    maps = [ax for ax in fig.axes if ax.images]
    boxes = [ax.get_window_extent() for ax in maps]  # in pixels of the whole figure
    first = boxes[:9]
    for table in range(1, n_tables):
        for mine, other in zip(first, boxes[9 * table:9 * table + 9]):
            assert mine.y0 == pytest.approx(other.y0, abs=0.5) and mine.height == pytest.approx(other.height, abs=0.5)
            assert mine.width == pytest.approx(other.width, abs=0.5)
    colour_bar = next(ax for ax in fig.axes if not ax.images)
    assert colour_bar.get_window_extent().x0 > max(box.x1 for box in boxes)  # beside the last table, not inside it
