"""The token explorer of chapter 15: the state behind it, the spans it draws, and the widget following its controls."""
import pytest

from stepbystep.data import BytePairTokenizer
from stepbystep.widgets import token_explorer, token_explorer_state, tokens_html

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def tokenizer():
    return BytePairTokenizer.train("aaabdaaabac " * 3 + "the cat, the hat", 263, special_tokens=["<|end|>"])


def test_state_uses_the_first_merges_only(tokenizer):
    state = token_explorer_state(tokenizer, "aaab", 256)
    assert state["ids"] == [97, 97, 97, 98] and state["tokens"] == [b"a", b"a", b"a", b"b"]
    state = token_explorer_state(tokenizer, "aaab", 257)
    assert state["ids"] == BytePairTokenizer(tokenizer.merges[:1]).encode("aaab") == [256, 97, 98]
    full = token_explorer_state(tokenizer, "aaabdaaabac", 262)
    assert full["ids"] == tokenizer.encode("aaabdaaabac") and len(full["ids"]) < 11
    assert b"".join(full["tokens"]) == b"aaabdaaabac" and full["n_bytes"] == 11


def test_special_tokens_stay_whole_and_take_the_ids_after_the_merges_applied(tokenizer):
    state = token_explorer_state(tokenizer, "ab<|end|>é", 258)
    assert state["tokens"][-3:] == [b"<|end|>", b"\xc3", b"\xa9"]
    assert state["ids"][-3] == 258 and state["special"] == [False] * (len(state["ids"]) - 3) + [True, False, False]
    assert state["n_bytes"] == len("ab<|end|>é".encode("utf-8"))


@pytest.mark.parametrize("vocab_size, error", [(255, ValueError), (263, ValueError), (257.0, TypeError)])
def test_a_vocabulary_outside_the_merges_is_refused(tokenizer, vocab_size, error):
    with pytest.raises(error, match="vocab_size"):
        token_explorer_state(tokenizer, "a", vocab_size)


def test_html_shows_each_token_with_its_id_escaped_and_whitespace_visible(tokenizer):
    state = token_explorer_state(tokenizer, "<b> a\n", 256)
    shown = tokens_html(state)
    assert shown.count("<span") == 6 == len(state["ids"])
    assert "&lt;" in shown and "<b>" not in shown.replace("<br>", "")
    assert "·" in shown and "↵" in shown
    for i in state["ids"]:
        assert f"<small>{i}</small>" in shown


def test_the_widget_follows_text_and_slider(tokenizer):
    widget = token_explorer(tokenizer, text="aaabdaaabac")
    assert widget.vocab.min == 256 and widget.vocab.max == widget.vocab.value == 262
    full = tokenizer.encode("aaabdaaabac")
    assert f"<b>{len(full)}</b> tokens" in widget.summary.value and "<b>6</b> merges" in widget.summary.value
    widget.vocab.value = 256
    assert "<b>11</b> tokens" in widget.summary.value and widget.tokens.value.count("<span") == 11
    widget.text.value = "the cat"
    assert widget.tokens.value.count("<span") == 7 and "<b>0</b> merges" in widget.summary.value
    widget.text.value = ""
    assert "<b>0</b> tokens" in widget.summary.value and "bytes per token" not in widget.summary.value
    bundle = widget._repr_mimebundle_()
    assert WIDGET_VIEW in bundle and bundle["text/html"] == widget.summary.value + widget.tokens.value


def test_the_widget_wants_a_byte_pair_tokenizer():
    with pytest.raises(TypeError, match="tokenizer"):
        token_explorer("gpt2")
