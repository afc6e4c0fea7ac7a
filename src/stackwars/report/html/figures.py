"""The report's figures, drawn with matplotlib as SVG text, from ``data.py``'s values.

matplotlib is imported here only, on first use: no other command pays for it. Figures are
made with ``matplotlib.figure.Figure`` directly, never through pyplot, so no GUI backend is
chosen and no global figure state is kept. Text stays text in the SVG (``svg.fonttype``
none): smaller than glyph outlines, and matplotlib's writer escapes it, so a workload named
``<script>`` is drawn as those characters. Mathtext is off (``text.parse_math``): a ``$``
in a name from a run is a dollar sign.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from stackwars.errors import UsageError
from stackwars.report.glyphs import TIMES
from stackwars.report.html.data import Report
from stackwars.report.html.figure_kit import (
    PALETTE,
    Colours,
    legend_in,
    log_scale,
    panels,
    time_unit,
)
from stackwars.report.html.figures_across import comparison_figure, explain_figure, sweep_figure
from stackwars.report.html.groups import Group, StackCell
from stackwars.report.table import format_seconds

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

STYLE: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    # Element ids from a hash of their content, not a random salt: the same report twice is
    # the same file, and inline SVGs share ids only where their definitions are identical.
    "svg.hashsalt": "stackwars",
    "text.parse_math": False,
    # Each text element of the SVG names its fonts: one, then the generic family, instead of
    # matplotlib's ten (a quarter of a figure's bytes).
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 7.5,
    "axes.titlesize": 8,
    "axes.titlelocation": "left",
    # A title at a fixed height: placing it automatically measures every tick label first,
    # which was a third of the drawing time (no figure here has ticks on top).
    "axes.titley": 1.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "legend.fontsize": 6.5,
}
# No date, creator or RDF links: the file is the same for the same data, and holds no URL.
_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}
_MIB = 2.0**20
WARMUP_COLUMNS = 4
# A warm-up may last a thousand runs; drawn whole, each point costs bytes in the SVG and time
# to draw. The early runs, where warm-up happens, are kept; after them an even sample.
WARMUP_POINTS = 240
WARMUP_EARLY = 80
WARMUP_MARKERS = 40  # a marker per run up to this many points, a line alone beyond


@contextmanager
def drawing() -> Iterator[type[Figure]]:
    """matplotlib's Figure with the report's style in force."""
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise UsageError(
            f"stackwars report draws its plots with matplotlib ({exc}); "
            "fix: pip install 'stackwars[report]'"
        ) from None
    with matplotlib.rc_context(STYLE):
        yield Figure


def svg(figure: Figure) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata=_METADATA)
    return buffer.getvalue()


def draw_figures(report: Report) -> dict[str, str]:
    """Every figure of the report as standalone SVG text, by the anchor of what it shows."""
    colour = Colours()
    drawn: dict[str, str] = {}
    with drawing() as figure_class:
        for group in report.groups:
            drawn[group.anchor] = svg(group_figure(figure_class, group, colour))
            warmup = warmup_figure(figure_class, group, colour)
            if warmup is not None:
                drawn[f"{group.anchor}-warmup"] = svg(warmup)
        for view in report.sweeps:
            drawn[view.anchor] = svg(sweep_figure(figure_class, view, colour))
        for explained in report.explained:
            drawn[explained.anchor] = svg(explain_figure(figure_class, explained, colour))
        for comparison in report.comparisons:
            forest = comparison_figure(figure_class, comparison)
            if forest is not None:
                drawn[comparison.anchor] = svg(forest)
    return drawn


def group_figure(figure_class: type[Figure], group: Group, colour: Colours) -> Figure:
    """Steady median with its interval and speed-up; the first run by phase; memory."""
    labels = [stack.stack for stack in group.stacks]
    figure, (steady_ax, phases_ax, memory_ax), slots = panels(figure_class, labels, "pplpl")
    _steady_bars(steady_ax, group, colour)
    _phase_bars(phases_ax, group.stacks)
    legend_in(slots[0], phases_ax)
    _memory_bars(memory_ax, group.stacks)
    legend_in(slots[1], memory_ax)
    return figure


def _steady_bars(ax: Axes, group: Group, colour: Colours) -> None:
    timed = [s.steady.value for s in group.stacks if s.steady and s.steady.value]
    scale, unit = time_unit(max(timed, default=1.0))
    top = max(((s.steady.high or 0.0) for s in group.stacks if s.steady), default=0.0) / scale
    for row, stack in enumerate(group.stacks):
        if stack.steady is None or stack.steady.value is None:
            ax.text(0, row, f" {stack.status.upper()}", va="center", color="#b00020")
            continue
        value, low, high = (x / scale for x in _bounds(stack.steady))
        error = [[max(0.0, value - low)], [max(0.0, high - value)]]
        ax.barh(row, value, xerr=error, color=colour(stack.stack), capsize=2, height=0.6)
        if stack.speed_up is not None and stack.speed_up.value is not None:
            text = f" {stack.speed_up.value:.3g}{TIMES}"
            ax.text(high, row, text, va="center", fontsize=6.5)
    ax.set_title("Steady median, 95 % interval")
    speed_up = f"; n{TIMES}: speed-up vs {group.baseline}" if group.baseline else ""
    ax.set_xlabel(unit + speed_up)
    ax.set_xlim(0, (top or 1.0) * 1.3)


def _bounds(estimate: Any) -> tuple[float, float, float]:
    value = estimate.value or 0.0
    return value, estimate.low if estimate.low is not None else value, estimate.high or value


def _phase_bars(ax: Axes, stacks: Sequence[StackCell]) -> None:
    firsts = [s.first_run_s for s in stacks if s.first_run_s]
    scale, unit = time_unit(max(firsts, default=1.0))
    names = list(dict.fromkeys(name for stack in stacks for name, _ in stack.phases))
    colours = {name: PALETTE[(i + 3) % len(PALETTE)] for i, name in enumerate(names)}
    drawn: set[str] = set()
    for row, stack in enumerate(stacks):
        left = 0.0
        for name, seconds in stack.phases:
            label = None if name in drawn else name
            drawn.add(name)
            width = seconds / scale
            ax.barh(row, width, left=left, color=colours[name], height=0.6, label=label)
            left += width
        if stack.first_run_s:
            ax.text(left, row, f" {format_seconds(stack.first_run_s)}", va="center", fontsize=6.5)
    ax.set_xlim(0, max(firsts, default=1.0) / scale * 1.3)
    ax.set_title("First run, by phase")
    ax.set_xlabel(unit)


def _memory_bars(ax: Axes, stacks: Sequence[StackCell]) -> None:
    kinds = [kind for kind, _ in stacks[0].memory] if stacks else []
    shown = [k for k in kinds if any(dict(s.memory).get(k) for s in stacks)]
    height = 0.8 / max(1, len(shown))
    for index, kind in enumerate(shown):
        offsets = [row - 0.4 + height * (index + 0.5) for row in range(len(stacks))]
        values = [(dict(s.memory).get(kind) or 0) / _MIB for s in stacks]
        hue = PALETTE[(kinds.index(kind) + 6) % len(PALETTE)]  # the same kind, the same hue
        ax.barh(offsets, values, height=height, label=kind, color=hue)
    ax.set_title("Memory")
    ax.set_xlabel("MiB")


def warmup_figure(figure_class: type[Figure], group: Group, colour: Colours) -> Figure | None:
    """A small series per stack: each run before steady state over the steady median, on
    one log scale shared by all (so that the stacks' warm-ups compare at a glance)."""
    stacks = [s for s in group.stacks if any(t > 0 for t in s.warmup_s)]
    if not stacks:
        return None
    columns = min(WARMUP_COLUMNS, len(stacks))
    rows = math.ceil(len(stacks) / columns)
    width, height = 2.5 * columns + 0.6, 0.45 + 1.45 * rows
    figure = figure_class(figsize=(width, height))
    grid = figure.add_gridspec(
        rows,
        columns,
        left=0.6 / width,
        right=0.98,
        top=1 - 0.25 / height,
        bottom=0.4 / height,
        hspace=0.8,
        wspace=0.12,
    )
    axes = grid.subplots(sharey=True, squeeze=False)
    for ax, stack in zip(axes.ravel(), stacks, strict=False):
        _warmup_series(ax, stack, colour(stack.stack))
    for ax in axes.ravel()[len(stacks) :]:
        ax.set_axis_off()
    for ax in axes[:, 0]:
        ax.set_ylabel("÷ steady median")
    return figure


def thinned(points: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
    """At most ``WARMUP_POINTS`` of the points: the first ``WARMUP_EARLY``, then an even
    sample of the rest, the last point always kept."""
    if len(points) <= WARMUP_POINTS:
        return list(points)
    rest = points[WARMUP_EARLY:]
    step = math.ceil(len(rest) / (WARMUP_POINTS - WARMUP_EARLY))
    return [*points[:WARMUP_EARLY], *rest[::step][:-1], rest[-1]]


def _warmup_series(ax: Axes, stack: StackCell, colour: str) -> None:
    points = [(i, t) for i, t in enumerate(stack.warmup_s, start=1) if t > 0]
    unit = stack.steady.value if stack.steady and stack.steady.value else points[-1][1]
    shown = thinned(points)
    style = ".-" if len(shown) <= WARMUP_MARKERS else "-"
    ax.plot([i for i, _ in shown], [t / unit for _, t in shown], style, color=colour, lw=0.8)
    log_scale(ax, "y")
    ax.axhline(1.0, color="#555555", ls=":", lw=0.7)
    if stack.runs_to_steady:
        ax.axvline(stack.runs_to_steady, color="#555555", ls="--", lw=0.7)
    steady = f", steady from run {stack.runs_to_steady}" if stack.runs_to_steady else ""
    ax.set_title(f"{stack.stack}{steady}", fontsize=7)
    ax.locator_params(axis="x", nbins=4)
    ax.set_xlabel("run")
