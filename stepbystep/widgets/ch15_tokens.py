"""Chapter 15: type text, see its tokens as coloured spans with their ids; slide over the merges applied."""
import html

import ipywidgets as widgets

from ..checks import check_instance, check_int_range
from ..data import BytePairTokenizer

__all__ = ["token_explorer_state", "token_explorer", "tokens_html"]

COLOURS = ["#c6dbef", "#fdd0a2", "#c7e9c0", "#dadaeb", "#fcbba1", "#f2e394"]  # pale, so the text stays legible
SPECIAL = "#969696"


def token_explorer_state(tokenizer, text, vocab_size):
    """``text`` encoded with the first ``vocab_size - 256`` merges of ``tokenizer`` (its pattern and
    special tokens kept; the specials take the ids after those merges). A dict with ``ids`` (list),
    ``tokens`` (each id's bytes), ``special`` (whether each id is a special token) and ``n_bytes``
    (the text's UTF-8 length)."""
    check_instance("tokenizer", tokenizer, BytePairTokenizer)
    check_instance("text", text, str, "a str")
    check_int_range("vocab_size", vocab_size, 256, 256 + len(tokenizer.merges))
    fewer = BytePairTokenizer(tokenizer.merges[:vocab_size - 256], pattern=tokenizer.pattern,
                              special_tokens=list(tokenizer.special_tokens))
    ids = fewer.encode(text)
    specials = set(fewer.special_tokens.values())
    return {"ids": ids, "tokens": [fewer.vocab[i] for i in ids], "special": [i in specials for i in ids],
            "n_bytes": len(text.encode("utf-8"))}


def _shown(token):
    """A token's bytes as text a reader can see: spaces as '·', newlines as '↵', bytes that are
    not whole characters as U+FFFD."""
    text = token.decode("utf-8", errors="replace")
    return html.escape(text.replace(" ", "·").replace("\n", "↵"), quote=False)


def tokens_html(state):
    """The tokens of a ``token_explorer_state`` as coloured spans, each with its id below it."""
    spans = []
    for k, (i, token, special) in enumerate(zip(state["ids"], state["tokens"], state["special"])):
        colour = SPECIAL if special else COLOURS[k % len(COLOURS)]
        spans.append(f"<span title='id {i}' style='display:inline-block; margin:1px; padding:0 2px; "
                     f"background:{colour}; text-align:center; font-family:monospace'>"
                     f"{_shown(token)}<br><small>{i}</small></span>")
    return "<div style='line-height:1.1'>" + "".join(spans) + "</div>"


class TokenBox(widgets.VBox):
    """A ``VBox`` that also offers its tokens as plain HTML, for pages that cannot run widgets."""

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/html"] = self.summary.value + self.tokens.value
        return bundle


def token_explorer(tokenizer, text="O brave new world, that has such people in't!"):
    """A text box and a slider over the vocabulary size (256: bytes only, up to every merge of
    ``tokenizer``): the text's tokens as coloured spans with their ids, and how many bytes each
    token covers on average. Returns a ``VBox`` with ``text``, ``vocab``, ``summary`` and ``tokens``
    attributes (the controls and the two HTML lines)."""
    check_instance("tokenizer", tokenizer, BytePairTokenizer)
    largest = 256 + len(tokenizer.merges)
    box_text = widgets.Textarea(value=text, description="text", continuous_update=False,
                                layout=widgets.Layout(width="90%"))
    vocab = widgets.IntSlider(value=largest, min=256, max=largest, description="vocabulary",
                              continuous_update=False, layout=widgets.Layout(width="90%"))
    summary, tokens = widgets.HTML(), widgets.HTML()

    def redraw(_change=None):
        state = token_explorer_state(tokenizer, box_text.value, vocab.value)
        n = len(state["ids"])
        per_token = f", {state['n_bytes'] / n:.2f} bytes per token" if n else ""
        summary.value = (f"<b>{vocab.value - 256:,}</b> merges applied: {state['n_bytes']:,} bytes → "
                         f"<b>{n:,}</b> tokens{per_token}")
        tokens.value = tokens_html(state)

    for control in (box_text, vocab):
        control.observe(redraw, names="value")
    redraw()
    box = TokenBox([box_text, vocab, summary, tokens])
    box.text, box.vocab, box.summary, box.tokens = box_text, vocab, summary, tokens
    return box
