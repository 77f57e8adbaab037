"""The ring all-reduce explorer of chapter 16: the state behind it (what each worker holds after each step,
the bytes sent), the table it draws, and the widget following its sliders."""
import pytest

from stepbystep.training.parallel_costs import ring_all_reduce_bytes, ring_schedule
from stepbystep.widgets import ring_explorer, ring_html, ring_state

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def test_at_the_start_each_worker_holds_only_its_own_parts():
    state = ring_state(3, 0, n_elements=300)
    assert state["holds"] == [[(0,)] * 3, [(1,)] * 3, [(2,)] * 3]
    assert state["moves"] == [] and state["phase"] == "start" and state["sent_bytes"] == 0


def test_reduce_scatter_then_all_gather_leave_every_chunk_summed_on_every_worker():
    n = 4
    scattered = ring_state(n, n - 1)
    assert scattered["phase"] == "reduce-scatter"
    for w in range(n):  # worker w owns the whole sum of chunk w + 1, and only of that one
        whole = [c for c in range(n) if scattered["holds"][w][c] == tuple(range(n))]
        assert whole == [(w + 1) % n]
    done = ring_state(n, 2 * (n - 1))
    assert done["phase"] == "all-gather" and done["moves"] == ring_schedule(n)[-1]
    assert all(parts == (0, 1, 2, 3) for row in done["holds"] for parts in row)


@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_the_bytes_sent_add_up_to_the_formula(n):
    n_elements, element = 1000 * n, 2
    state = ring_state(n, 2 * (n - 1), n_elements, element)
    assert state["total_bytes"] == ring_all_reduce_bytes(n_elements, n, element) == 2 * (n - 1) * n_elements * element / n
    assert state["sent_bytes"] == state["total_bytes"]  # the whole all-reduce sent: what the formula counts
    assert state["chunk_bytes"] == n_elements * element / n and state["gradient_bytes"] == n_elements * element
    if n > 1:
        assert ring_state(n, 1, n_elements, element)["sent_bytes"] == state["chunk_bytes"]


@pytest.mark.parametrize("n, step, error, name", [(0, 0, ValueError, "n_workers"), (9, 0, ValueError, "n_workers"),
                                                  (3, 5, ValueError, "step"), (3, 1.0, TypeError, "step"),
                                                  (3, 1, ValueError, "n_elements")])
def test_bad_input_is_refused(n, step, error, name):
    with pytest.raises(error, match=name):
        ring_state(n, step, n_elements=0 if name == "n_elements" else 100)


def test_the_table_outlines_the_chunks_received_this_step():
    state = ring_state(3, 1, n_elements=300)
    shown = ring_html(state)
    assert shown.count("<td") == 9 and shown.count("outline:") == 3
    for _, to, c, _ in state["moves"]:  # the receiver's cell is outlined, with the parts it now sums
        cell = shown.split(f"data-chunk='{to},{c}'")[1].split("</td>")[0]
        assert "outline:3px solid #e6550d" in cell and "+".join(map(str, state["holds"][to][c])) in cell
    assert "0→1: chunk 0" in shown and "adds it" in shown
    gathered = ring_html(ring_state(3, 3, n_elements=300))
    assert "copies it" in gathered and "#3182bd" in gathered
    assert "no chunk sent yet" in ring_html(ring_state(3, 0, n_elements=300))


def test_the_widget_follows_its_sliders():
    widget = ring_explorer(n_workers=4, step=0, n_elements=1_000_000, bytes_per_element=4)
    assert widget.step.max == 6 and "step <b>0 of 6</b>" in widget.summary.value
    assert "<b>6 MB</b> the all-reduce sends" in widget.summary.value  # 2 · 3/4 · 4 MB
    widget.step.value = 3
    assert "(reduce-scatter)" in widget.summary.value and "<b>3 MB</b> of" in widget.summary.value
    assert widget.table.value == ring_html(ring_state(4, 3, 1_000_000, 4))
    widget.workers.value = 2  # fewer steps: the step is clamped to the last one
    assert widget.step.max == 2 and widget.step.value == 2 and "step <b>2 of 2</b> (all-gather)" in widget.summary.value
    assert widget.table.value.count("<td") == 4
    bundle = widget._repr_mimebundle_()
    assert WIDGET_VIEW in bundle and bundle["text/html"] == widget.summary.value + widget.table.value


def test_the_widget_refuses_a_step_past_the_ring_and_a_lone_worker():
    with pytest.raises(ValueError, match="step must be an int from 0 to 2"):
        ring_explorer(n_workers=2, step=3)
    with pytest.raises(ValueError, match="n_workers must be an int from 2 to 8"):
        ring_explorer(n_workers=1)
