"""``stackwars report --format md``: the same sections as the HTML report, as GitHub
Markdown (for pull requests and docs), its figures as SVG files beside it."""

from __future__ import annotations

import html
from collections.abc import Mapping

from stackwars.report.html.blocks import (
    Block,
    Bullets,
    FigureRef,
    Folded,
    Heading,
    Paragraph,
    TableBlock,
)
from stackwars.report.html.data import Report
from stackwars.report.html.layout import layout
from stackwars.report.markdown_text import escape, table_row


def render_markdown(report: Report, figure_files: Mapping[str, str]) -> str:
    """The document; ``figure_files``: figure name -> its file's path relative to the
    document."""
    parts = [f"# {escape(report.title)}"]
    for section in layout(report):
        parts.append(f"## {escape(section.heading)}")
        parts.extend(_block(block, figure_files) for block in section.blocks)
    return "\n\n".join(part for part in parts if part) + "\n"


def _block(block: Block, figure_files: Mapping[str, str]) -> str:
    if isinstance(block, Heading):
        return f"### {escape(block.text)}"
    if isinstance(block, Paragraph):
        text = escape(block.text)
        return {"warning": f"**warning:** {text}", "empty": f"*{text}*"}.get(block.kind, text)
    if isinstance(block, FigureRef):
        path = figure_files.get(block.name)
        return "" if path is None else f"![{escape(block.alt)}]({path})"
    if isinstance(block, TableBlock):
        return _table(block)
    if isinstance(block, Bullets):
        return "\n".join(f"- {escape(item)}" for item in block.items)
    return _folded(block, figure_files)


def _folded(block: Folded, figure_files: Mapping[str, str]) -> str:
    # GitHub renders Markdown inside <details> when blank lines surround it.
    inner = "\n\n".join(_block(child, figure_files) for child in block.blocks)
    summary = html.escape(block.summary)
    return f"<details><summary>{summary}</summary>\n\n{inner}\n\n</details>"


def _table(block: TableBlock) -> str:
    lines = [table_row(block.columns), table_row(["---"] * len(block.columns))]
    lines.extend(table_row(row) for row in block.rows)
    return "\n".join(lines)
