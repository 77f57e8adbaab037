"""Chapter 09's figures keep their labels clear: of the frame, of the bars and of each other."""
import matplotlib

matplotlib.use("Agg")

from stepbystep.plots import seed_panels, smoothed_targets  # noqa: E402


def test_seed_panels_leave_room_above_the_highest_reference_line():
    results = {"plain": [{"c": 0.999}, {"c": 0.998}], "smoothed": [{"c": 0.90}, {"c": 0.91}]}
    fig = seed_panels(results, {"c": "confidence"}, references={"c": [(0.9016, "cap"), (0.999, "ours")]})
    ax = fig.axes[0]
    assert ax.get_ylim()[1] >= 0.999 * 1.25
    labels = {text.get_text(): text for text in ax.texts}
    assert set(labels) == {"cap", "ours"}
    assert all(text.get_bbox_patch() is not None for text in labels.values())  # on white, readable over a bar


def test_the_epsilon_over_v_label_points_at_its_line_from_above_the_bars():
    fig = smoothed_targets(64, 16, 0.1)
    (label,) = [text for text in fig.axes[1].texts if text.get_text().startswith("ε/V")]
    assert label.xy[1] == 0.1 / 64  # the arrow's head: on the line
    assert label.xyann[1] > 4 * 0.1 / 64  # the text: well above the bars' tops (a log axis)
