"""Chapter 09: temperature, top-k and top-p over a decoder-only model's next token, with samples."""
import html

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from ..data import EOS, is_consistent, is_date_shaped, prompt_ids, split_stream
from ..models import generate, next_token_logits, sampling_distribution
from ..plots import token_distribution
from ._figure_box import FigureBox, show

__all__ = ["sampling_explorer_state", "sampling_explorer"]


def sampling_explorer_state(model, vocab, prompt="March", temperature=1.0, top_k=None, top_p=None, n_samples=5,
                            seed=0):
    """What the sampling widget shows for a decoder-only ``model`` and a partial text ``prompt``.

    The next-token distribution after ``<sos>`` + ``prompt`` (at ``temperature``; at 0 all of it
    on the arg-max, as greedy decoding draws), which tokens the settings keep (``sampling_distribution``), and
    ``n_samples`` continuations drawn with these settings from a ``torch.Generator`` seeded
    with ``seed`` (the same settings always give the same samples).

    Returns a dict: ``probs`` ``(V,)``, ``kept`` ``(V,)`` bool, ``samples`` a list of
    ``(text, iso, date_shaped, consistent)``: the text written before ``=``, the ISO date after
    it (``None`` without one), whether the stream is date-shaped and whether its date is the
    one the text writes.
    """
    ids = prompt_ids(prompt, vocab, separator=False)
    logits = next_token_logits(model, ids).float()  # (V,)
    probs = sampling_distribution(logits.unsqueeze(0), temperature)[0]  # (V,): tempered, before top-k and top-p
    kept = sampling_distribution(logits.unsqueeze(0), temperature, top_k, top_p)[0] > 0  # (V,)
    generator = torch.Generator(device=logits.device).manual_seed(seed)
    new_tokens = min(model.max_len - len(ids), 40)
    streams = generate(model, [ids] * n_samples, new_tokens, temperature=temperature, top_k=top_k, top_p=top_p,
                       eos_id=EOS, generator=generator)  # (n_samples, L + T)
    samples = []
    for row in streams.cpu():
        text, iso, _ = split_stream(row, vocab)
        date_shaped = is_date_shaped(row, vocab)
        samples.append((text, iso, date_shaped, date_shaped and is_consistent(text, iso)))
    return {"probs": probs.cpu(), "kept": kept.cpu(), "samples": samples}


def _samples_html(samples):
    lines = []
    for text, iso, date_shaped, consistent in samples:
        stream = html.escape(text if iso is None else f"{text} = {iso}", quote=False)
        verdict = "✓ right" if consistent else ("date-shaped, wrong date" if date_shaped else "✗ not date-shaped")
        lines.append(f"<code>{stream}</code> &nbsp; <i>{verdict}</i>")
    return "<br>".join(lines)


def sampling_explorer(model, vocab, prompt="March", n_samples=5, seed=0):
    """Sliders for temperature, top-k and top-p over a decoder-only model's next token.

    Draws the next-token distribution after ``prompt`` (editable in a text box) with the tokens the settings keep in
    orange (``token_distribution``) and lists ``n_samples`` sampled continuations, each marked
    right, date-shaped but wrong, or not date-shaped (``sampling_explorer_state``). top-k 0
    and top-p 1 switch those filters off. Returns a ``VBox``; its ``figure`` is redrawn in
    place, ``prompt``, ``temperature``, ``top_k``, ``top_p`` are the controls and ``samples`` the list.
    """
    temperature = widgets.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.1, description="temperature",
                                      continuous_update=False)
    top_k = widgets.IntSlider(value=0, min=0, max=20, description="top-k (0: off)", continuous_update=False)
    top_p = widgets.FloatSlider(value=1.0, min=0.05, max=1.0, step=0.05, description="top-p",
                                continuous_update=False)
    prompt_box = widgets.Text(value=prompt, description="prompt", continuous_update=False)
    samples = widgets.HTML()
    output = widgets.Output()
    figure = Figure(figsize=(8, 3), layout="constrained")

    def redraw(_change=None):
        state = sampling_explorer_state(model, vocab, prompt_box.value, temperature.value, top_k.value or None,
                                        None if top_p.value >= 1 else top_p.value, n_samples, seed)
        title = (f"after {prompt_box.value!r}: T = {temperature.value:g}, top-k {top_k.value or 'off'}, "
                 f"top-p {top_p.value if top_p.value < 1 else 'off'} ({int(state['kept'].sum())} tokens kept)")
        token_distribution(state["probs"], vocab, state["kept"], title=title, fig=figure)
        samples.value = _samples_html(state["samples"])
        show(output, figure)

    for control in (prompt_box, temperature, top_k, top_p):
        control.observe(redraw, names="value")
    redraw()
    box = FigureBox([prompt_box, widgets.HBox([temperature, top_k, top_p]), output, samples], figure)
    box.prompt, box.temperature, box.top_k, box.top_p, box.samples = prompt_box, temperature, top_k, top_p, samples
    return box
