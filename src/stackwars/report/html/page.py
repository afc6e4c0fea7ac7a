"""``stackwars report`` as one self-contained HTML file: styles and figures (inline SVG) are
inside, there is no script, and a Content-Security-Policy forbids the page any request, so
the file opens offline and can be mailed or attached as it is.

Every string from a run (workload names are user code, reasons are stderr tails) goes
through ``html.escape``; the figures' text was escaped by matplotlib's SVG writer.
"""

from __future__ import annotations

import html
from collections.abc import Mapping

from stackwars.report.html.blocks import (
    Block,
    Bullets,
    FigureRef,
    Heading,
    Paragraph,
    Section,
    TableBlock,
)
from stackwars.report.html.data import Report
from stackwars.report.html.layout import layout

CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'"
CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d1d1f; }
header { background: #f4f4f6; padding: 1em 2em; border-bottom: 1px solid #ddd; }
header h1 { font-size: 1.3em; margin: 0 0 .4em; }
nav a { margin-right: 1em; white-space: nowrap; }
main { padding: 0 2em 3em; max-width: 1400px; }
section { border-top: 2px solid #ccc; margin-top: 2em; }
h2 { font-size: 1.2em; } h3 { font-size: 1em; margin: 1.6em 0 .4em; }
figure { margin: .5em 0; } figure svg { max-width: 100%; height: auto; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 12px; margin: .4em 0; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f4f4f6; }
td.wide { white-space: pre-wrap; max-width: 48em; overflow-wrap: anywhere; }
tr.failed td { background: #fdecec; }
p.empty { color: #666; font-style: italic; }
p.warning { color: #8a4b00; font-weight: 600; }
ul { font-size: 12px; color: #444; }
details { margin: .4em 0; } summary { cursor: pointer; }
"""


def render_html(report: Report, figures: Mapping[str, str]) -> str:
    """The page; ``figures``: SVG text by name (``plots.draw_figures``)."""
    sections = layout(report)
    nav = " ".join(f'<a href="#{_e(s.id)}">{_e(s.heading)}</a>' for s in sections)
    body = "\n".join(_section(section, figures) for section in sections)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(report.title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        f"<header><h1>{_e(report.title)}</h1><nav>{nav}</nav></header>\n"
        f"<main>\n{body}\n</main>\n</body>\n</html>\n"
    )


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _section(section: Section, figures: Mapping[str, str]) -> str:
    inner = "\n".join(_block(block, figures) for block in section.blocks)
    return f'<section id="{_e(section.id)}">\n<h2>{_e(section.heading)}</h2>\n{inner}\n</section>'


def _block(block: Block, figures: Mapping[str, str]) -> str:
    if isinstance(block, Heading):
        anchor = f' id="{_e(block.anchor)}"' if block.anchor else ""
        return f"<h3{anchor}>{_e(block.text)}</h3>"
    if isinstance(block, Paragraph):
        return f'<p class="{_e(block.kind)}">{_e(block.text)}</p>'
    if isinstance(block, FigureRef):
        return _figure(block, figures)
    if isinstance(block, TableBlock):
        return _table(block)
    if isinstance(block, Bullets):
        items = "".join(f"<li>{_e(item)}</li>" for item in block.items)
        return f"<ul>{items}</ul>" if items else ""
    inner = "\n".join(_block(child, figures) for child in block.blocks)
    return f"<details><summary>{_e(block.summary)}</summary>\n{inner}\n</details>"


def _figure(block: FigureRef, figures: Mapping[str, str]) -> str:
    text = figures.get(block.name)
    if text is None:
        return ""
    # The XML prolog and doctype are not HTML; the <svg> element itself is.
    start = text.find("<svg")
    return f'<figure class="plot" aria-label="{_e(block.alt)}">{text[start:]}</figure>'


def _table(block: TableBlock) -> str:
    head = "".join(f"<th>{_e(name)}</th>" for name in block.columns)
    rows = []
    for index, row in enumerate(block.rows):
        cells = "".join(
            f'<td class="wide">{_e(text)}</td>' if i in block.wide else f"<td>{_e(text)}</td>"
            for i, text in enumerate(row)
        )
        marked = ' class="failed"' if index in block.failed else ""
        rows.append(f"<tr{marked}>{cells}</tr>")
    body = "\n".join(rows)
    table = f"<table><thead><tr>{head}</tr></thead>\n<tbody>{body}</tbody></table>"
    return f'<div class="scroll">{table}</div>'
