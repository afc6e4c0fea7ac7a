"""The one Markdown escaper (report/markdown_text.py): what a user names is shown literally, in a
GitHub table cell and as text, read back through a CommonMark parser with GitHub's tables and
strike-through (markdown-it-py, which rich depends on)."""

from __future__ import annotations

import html
import re

import pytest
from markdown_it import MarkdownIt

from stackwars.report.markdown_text import escape, table_row

GITHUB = MarkdownIt("commonmark").enable("table").enable("strikethrough")
HOSTILE = [
    "a | b",
    "**bold** and __bold__ and *em* and _em_",
    "`code` and ``code``",
    "~~struck~~ and ~unstable~",
    "[link](https://example.com) and ![image](x.png)",
    "<script>alert(1)</script> & &amp; <https://example.com>",
    "# heading",
    "back\\slash\\| and \\*",
    "$x^2$ math",
    "- a list",
    "+ a list",
    "12. ordered",
    "3) ordered",
    "> quoted",
    "line one\nline two | x",
]


def cells(markdown: str) -> list[str]:
    """The text of each body cell, as a reader sees it (HTML tags dropped, entities decoded)."""
    found = re.findall(r"<td>(.*?)</td>", GITHUB.render(markdown), re.S)
    return [html.unescape(cell) for cell in found]


def shown(markdown: str) -> str:
    """The text of a Markdown block, as a reader sees it: tags dropped, entities decoded."""
    rendered = GITHUB.render(markdown)
    assert "<td" not in rendered
    return html.unescape(re.sub(r"<[^>]+>", "", rendered)).strip()


@pytest.mark.parametrize("text", HOSTILE)
def test_a_cell_shows_its_text_literally_and_stays_one_cell(text: str) -> None:
    table = "\n".join([table_row(["before", "text", "after"]), "| --- | --- | --- |"])
    table += "\n" + table_row(["1", text, "2"])
    assert cells(table) == ["1", " ".join(text.split()), "2"]


@pytest.mark.parametrize("text", HOSTILE)
def test_text_in_a_heading_a_bullet_or_a_paragraph_shows_literally(text: str) -> None:
    flat = " ".join(text.split())
    assert shown(f"### {escape(text)}") == flat
    assert shown(f"- {escape(text)}") == flat
    assert shown(escape(text)) == flat


def test_a_pipe_does_not_split_the_column() -> None:
    row = table_row(["x | y", "z"])
    assert row == "| x \\| y | z |"
    assert cells(f"| a | b |\n| --- | --- |\n{row}") == ["x | y", "z"]


def test_a_newline_does_not_end_the_row_and_plain_text_is_left_alone() -> None:
    assert escape("reason:\n  Traceback") == "reason: Traceback"
    assert escape("gemm(n=1024) 6.41x -3.2 % 2.1 ms") == "gemm(n=1024) 6.41x -3.2 % 2.1 ms"


def test_markup_is_escaped_not_dropped() -> None:
    assert escape("<b>*x*</b>") == "&lt;b&gt;\\*x\\*&lt;/b&gt;"
    assert escape("~1.2 ms") == "\\~1.2 ms"
