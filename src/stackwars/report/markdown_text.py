"""Text in GitHub-flavoured Markdown, shown as it is: the one escaper of every Markdown stackwars
writes (the run tables, what compiling buys, the Keras comparisons, claims, history, ``stackwars
report --format md``). Names and reasons come from users (workload files, claim files, a
worker's stderr), so every string put in a table cell, a heading, a bullet or a paragraph goes
through :func:`escape`; a renderer writes only the Markdown around it (``| ``, ``### ``,
``- ``)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

# Backslash first: the others add backslashes. A pipe ends a table cell (even inside a code
# span), a backtick opens code, * and _ emphasis, brackets a link (and ![ an image), ~ GitHub's
# strike-through, # a heading, $ GitHub's math.
MARKUP = "\\`*_[]|~#$"
# A line that starts with a list marker and a space is a list item: in a bullet ("- - x"), a
# nested one.
_LIST_MARKER = re.compile(r"^([-+]|\d{1,9}[.)])(?= )")


def escape(text: str) -> str:
    """``text`` as one line that GitHub shows literally, in a table cell or as text: whitespace
    (newlines included: a newline ends a table row) collapsed to one space; ``&``, ``<`` and
    ``>`` as entities (no HTML, autolink, entity reference or quote); a backslash before each
    of ``MARKUP``'s characters and before a leading list marker."""
    flat = html.escape(" ".join(text.split()), quote=False)
    for char in MARKUP:
        flat = flat.replace(char, "\\" + char)
    return _LIST_MARKER.sub(lambda found: found[1][:-1] + "\\" + found[1][-1], flat)


def table_row(texts: Iterable[str]) -> str:
    """One row of a GitHub table, each cell escaped."""
    return "| " + " | ".join(escape(text) for text in texts) + " |"
