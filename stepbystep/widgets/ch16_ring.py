"""Chapter 16: step through a ring all-reduce on N workers: which chunk moves where, what each worker
holds, and the bytes sent so far against the 2 (N - 1) / N of the gradient a whole all-reduce sends."""
import ipywidgets as widgets

from ..checks import check_int_range, check_positive_int
from ..training.parallel_costs import ring_all_reduce, ring_all_reduce_bytes

__all__ = ["ring_state", "ring_html", "ring_explorer"]

MAX_WORKERS = 8
ADDED, COPIED = "#e6550d", "#3182bd"  # the outline of a chunk received this step: added to, or copied


def ring_state(n_workers, step, n_elements=124_000_000, bytes_per_element=4):
    """The ring all-reduce of a gradient of ``n_elements`` numbers on ``n_workers`` workers after
    ``step`` of its 2 (N - 1) steps (``ring_schedule``). A dict: ``holds[w][c]`` the workers whose part
    of chunk ``c`` worker ``w``'s copy sums (a sorted tuple); ``moves`` the step just taken (``(sender,
    receiver, chunk, phase)``, none at step 0); ``phase``; ``n_steps``; ``chunk_bytes`` (1/N of the
    gradient); ``sent_bytes`` what each worker has sent so far; ``total_bytes`` what it sends in the
    whole all-reduce (``ring_all_reduce_bytes``); ``gradient_bytes``."""
    check_int_range("n_workers", n_workers, 1, MAX_WORKERS)
    n_steps = 2 * (n_workers - 1)
    check_int_range("step", step, 0, n_steps)
    check_positive_int("n_elements", n_elements)
    check_positive_int("bytes_per_element", bytes_per_element)
    start = [[(w,) for _ in range(n_workers)] for w in range(n_workers)]  # worker w holds its own part of each chunk
    holds, taken = ring_all_reduce(start, steps=step)  # tuples add up to the list of parts summed
    gradient_bytes = n_elements * bytes_per_element
    chunk_bytes = gradient_bytes / n_workers
    moves = taken[-1] if taken else []
    return {"holds": [[tuple(sorted(parts)) for parts in row] for row in holds], "moves": moves,
            "phase": moves[0][3] if moves else "start", "n_steps": n_steps, "chunk_bytes": chunk_bytes,
            "sent_bytes": step * chunk_bytes,  # every worker sends one chunk per step
            "total_bytes": ring_all_reduce_bytes(n_elements, n_workers, bytes_per_element),
            "gradient_bytes": gradient_bytes}


def _megabytes(n_bytes):
    return f"{n_bytes / 1e6:,.0f} MB"


def ring_html(state):
    """A ``ring_state`` as an HTML table: a row per worker, a column per chunk, each cell the workers whose
    parts it sums (green once it sums all), outlined where it was received this step; below it, the moves."""
    n = len(state["holds"])
    received = {(to, c): phase for _, to, c, phase in state["moves"]}
    head = "".join(f"<th style='padding:2px 8px'>chunk {c}</th>" for c in range(n))
    rows = []
    for w, row in enumerate(state["holds"]):
        cells = []
        for c, parts in enumerate(row):
            colour = "#a1d99b" if len(parts) == n else "#f0f0f0"
            phase = received.get((w, c))
            outline = f"outline:3px solid {ADDED if phase == 'reduce-scatter' else COPIED};" if phase else ""
            cells.append(f"<td data-chunk='{w},{c}' style='background:{colour}; {outline} padding:2px 8px; "
                         f"text-align:center; font-family:monospace'>{'+'.join(map(str, parts))}</td>")
        rows.append(f"<tr><th style='padding:2px 8px'>worker {w}</th>{''.join(cells)}</tr>")
    verb = {"reduce-scatter": "adds it", "all-gather": "copies it"}
    moves = "; ".join(f"{s}→{r}: chunk {c}" for s, r, c, _ in state["moves"])
    moved = (f"<p class='ring-moves'>this step, each worker sends one chunk to the next, which "
             f"{verb[state['phase']]}: {moves}</p>") if state["moves"] else "<p class='ring-moves'>no chunk sent yet</p>"
    return f"<table style='border-collapse:separate; border-spacing:4px'><tr><th></th>{head}</tr>{''.join(rows)}</table>{moved}"


class RingBox(widgets.VBox):
    """A ``VBox`` that also offers its table as plain HTML, for pages that cannot run widgets."""

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/html"] = self.summary.value + self.table.value
        return bundle


def ring_explorer(n_workers=4, step=0, n_elements=124_000_000, bytes_per_element=4):
    """Sliders for the number of workers (2 to 8) and the step (0 to 2 (N - 1)): what each worker holds of
    each chunk (``ring_html``) and the bytes each has sent so far against the whole all-reduce's, for a
    gradient of ``n_elements`` numbers (GPT-2 small's, by default). Returns a ``VBox`` with ``workers``,
    ``step``, ``summary`` and ``table`` attributes (the controls and the two HTML parts)."""
    check_int_range("n_workers", n_workers, 2, MAX_WORKERS)  # one worker: a step slider with nowhere to go
    ring_state(n_workers, step, n_elements, bytes_per_element)  # refuses what it cannot show
    workers = widgets.IntSlider(value=n_workers, min=2, max=MAX_WORKERS, description="workers",
                                continuous_update=False)
    steps = widgets.IntSlider(value=step, min=0, max=2 * (n_workers - 1), description="step", continuous_update=False)
    summary, table = widgets.HTML(), widgets.HTML()

    def redraw(_change=None):
        steps.max = 2 * (workers.value - 1)  # clamps the step, which redraws once more
        state = ring_state(workers.value, steps.value, n_elements, bytes_per_element)
        phase = "" if state["phase"] == "start" else f" ({state['phase']})"
        summary.value = (f"step <b>{steps.value} of {state['n_steps']}</b>{phase}: each worker has sent "
                         f"<b>{_megabytes(state['sent_bytes'])}</b> of the <b>{_megabytes(state['total_bytes'])}</b> "
                         f"the all-reduce sends (2 × {workers.value - 1} / {workers.value} of the "
                         f"{_megabytes(state['gradient_bytes'])} gradient), one chunk of "
                         f"{_megabytes(state['chunk_bytes'])} per step")
        table.value = ring_html(state)

    for control in (workers, steps):
        control.observe(redraw, names="value")
    redraw()
    box = RingBox([widgets.HBox([workers, steps]), summary, table])
    box.workers, box.step, box.summary, box.table = workers, steps, summary, table
    return box
