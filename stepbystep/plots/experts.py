"""Chapter 17: which expert each sub-task's tokens go to."""
import matplotlib.pyplot as plt
import numpy as np

from ._heatmaps import WEIGHTS, heatmap

__all__ = ["expert_routing"]


def expert_routing(routing, sub_tasks, title=None):
    """``routing`` ``(sub_tasks, experts)``: the share of each sub-task's routing choices that went to
    each expert (rows sum to 1), one row per name of ``sub_tasks``, each cell written. A balanced
    router that ignores the sub-task gives every cell 1/experts. Returns the Figure."""
    routing = np.asarray(routing, dtype=float)
    if routing.ndim != 2 or routing.shape[0] != len(sub_tasks):
        raise ValueError(f"routing must be (sub-tasks, experts) with {len(sub_tasks)} rows, got shape {routing.shape}")
    n_tasks, n_experts = routing.shape
    fig, ax = plt.subplots(figsize=(1.1 * n_experts + 2.4, 0.55 * n_tasks + 1.3), layout="constrained")
    mesh = heatmap(ax, routing, WEIGHTS, annot=True, xticklabels=[f"expert {e}" for e in range(n_experts)],
                   yticklabels=list(sub_tasks))
    fig.colorbar(mesh, ax=ax, label="share of the sub-task's tokens")
    ax.set_title(title or f"where each sub-task's tokens go (even: {1 / n_experts:.2f} each)", fontsize=10)
    return fig
