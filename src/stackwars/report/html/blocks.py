"""The blocks a report section is made of (headings, paragraphs, figures, tables of display
strings, lists, folded parts): ``layout.py`` builds the core's sections of them, an instrument's
``render.py`` its own (``report/sections.py``), and ``page.py`` and ``markdown.py`` write them.
Strings here are raw: each renderer escapes them its own way."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Heading:
    text: str
    anchor: str = ""


@dataclass(frozen=True)
class Paragraph:
    text: str
    kind: str = "note"  # note, warning, empty (a section with nothing to show, and why)


@dataclass(frozen=True)
class FigureRef:
    name: str  # the key of plots.draw_figures' answer
    alt: str


@dataclass(frozen=True)
class TableBlock:
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    failed: frozenset[int] = frozenset()  # rows to mark as failures
    wide: frozenset[int] = frozenset()  # columns of long text (reasons, settings)


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Folded:
    """Blocks a reader opens when wanted (HTML ``<details>``)."""

    summary: str
    blocks: tuple[Block, ...]


Block = Heading | Paragraph | FigureRef | TableBlock | Bullets | Folded


@dataclass(frozen=True)
class Section:
    id: str
    heading: str
    blocks: tuple[Block, ...] = field(default_factory=tuple)
