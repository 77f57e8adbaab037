"""expert_routing draws the routing table it is given: one row per sub-task, one column per expert,
each cell's share written on it, on the attention weights' fixed 0-1 scale."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from stepbystep.plots import expert_routing  # noqa: E402

TASKS = ("copy", "reverse", "sort", "add one")
ROUTING = np.array([[0.7, 0.1, 0.1, 0.1], [0.25, 0.25, 0.25, 0.25], [0.0, 0.5, 0.5, 0.0], [0.1, 0.2, 0.3, 0.4]])


def test_the_cells_are_the_table_with_sub_tasks_as_rows_and_experts_as_columns():
    fig = expert_routing(ROUTING, TASKS)
    ax = fig.axes[0]
    mesh = ax.collections[0]
    np.testing.assert_allclose(np.asarray(mesh.get_array()).reshape(4, 4), ROUTING)
    assert mesh.get_clim() == (0.0, 1.0)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(TASKS)
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"expert {e}" for e in range(4)]
    assert sorted(t.get_text() for t in ax.texts) == sorted(f"{v:.2f}" for v in ROUTING.flatten())
    assert "even: 0.25 each" in ax.get_title()
    plt.close(fig)


def test_a_table_whose_rows_are_not_the_sub_tasks_is_refused():
    with pytest.raises(ValueError, match=r"routing must be \(sub-tasks, experts\) with 4 rows, got shape \(3, 4\)"):
        expert_routing(ROUTING[:3], TASKS)
