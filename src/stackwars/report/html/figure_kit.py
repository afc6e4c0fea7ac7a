"""What every figure of the report shares: a colour per stack, time units, plain-number log
axes, and a row of panels sharing the stack axis, laid out by hand.

Margins are set from the labels' lengths instead of by matplotlib's constrained layout: that
layout draws each figure twice to measure it, which made a report of the quick suite take
seconds longer. matplotlib itself is imported by ``figures.py``; here only for types, and the
ticker on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

WIDTH = 10.5  # inches: the report's column
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_CHAR_INCHES = 0.062  # a character of the 7.5 pt tick labels, generously
_ROW_INCHES = 0.26
_LEGEND_RATIO = 0.5  # a legend column's width, relative to a panel's


class Colours:
    """One colour per stack across every figure of a report, in order of first sight."""

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def __call__(self, stack: str) -> str:
        name = stack.partition(" ")[0]
        if name not in self._seen:
            self._seen[name] = PALETTE[len(self._seen) % len(PALETTE)]
        return self._seen[name]


def time_unit(seconds: float) -> tuple[float, str]:
    """The unit in which the largest value of an axis reads best."""
    return next(((s, u) for s, u in _TIME_UNITS if seconds >= s), _TIME_UNITS[-1])


def log_scale(ax: Axes, which: str) -> None:
    """A log axis (``x`` or ``y``) labelled in plain numbers (``20``, ``1e-02``), minor ticks
    too when it spans less than a decade or so (as matplotlib's own formatter decides). Minor
    ticks at 2 and 5 only: each tick is a few objects to build and draw."""
    from matplotlib.ticker import LogFormatter, LogLocator

    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
    axis.set_major_formatter(LogFormatter())
    axis.set_minor_formatter(LogFormatter(labelOnlyBase=False))


def label_inches(labels: Sequence[str], most: float = WIDTH * 0.5) -> float:
    return min(most, 0.25 + _CHAR_INCHES * max((len(label) for label in labels), default=0))


def panels(
    figure_class: type[Figure], labels: Sequence[str], columns: str
) -> tuple[Figure, list[Axes], list[Axes]]:
    """A figure of one row: ``columns`` has a ``p`` per panel (each a bar per label, the first
    label on top, labelled on the first panel only) and an ``l`` per legend slot."""
    height = 0.8 + _ROW_INCHES * len(labels)
    figure = figure_class(figsize=(WIDTH, height))
    ratios = [1.0 if kind == "p" else _LEGEND_RATIO for kind in columns]
    grid = figure.add_gridspec(
        1,
        len(columns),
        width_ratios=ratios,
        left=label_inches(labels) / WIDTH,
        right=0.99,
        top=1 - 0.3 / height,
        bottom=0.45 / height,
        wspace=0.15,
    )
    found: list[Axes] = []
    slots: list[Axes] = []
    for index, kind in enumerate(columns):
        shared = found[0] if found and kind == "p" else None
        ax = figure.add_subplot(grid[0, index], sharey=shared)
        if kind == "l":
            ax.set_axis_off()
            slots.append(ax)
        else:
            found.append(ax)
    found[0].set_yticks(range(len(labels)), labels=list(labels))
    found[0].set_ylim(len(labels) - 0.5, -0.5)  # the first on top, as in the tables
    for ax in found[1:]:
        ax.tick_params(labelleft=False)
    return figure, found, slots


def legend_in(slot: Axes, panel: Axes) -> None:
    """The panel's legend, in the slot beside it (empty when the panel labelled nothing)."""
    handles, texts = panel.get_legend_handles_labels()
    if handles:
        slot.legend(handles, texts, loc="upper left", borderaxespad=0.0)
