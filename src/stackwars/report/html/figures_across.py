"""The report's figures across cells: a sweep with its crossovers, the explain signals of a
group, and the forest plot of a comparison between runs (see ``figures.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from stackwars.report.html.data import ComparisonView
from stackwars.report.html.explain import Explained
from stackwars.report.html.figure_kit import (
    PALETTE,
    WIDTH,
    Colours,
    label_inches,
    legend_in,
    log_scale,
    panels,
    time_unit,
)
from stackwars.report.html.groups import SweepView
from stackwars.report.table import shorten
from stackwars.timing.compare import FASTER, FASTER_UNSURE, SLOWER, SLOWER_UNSURE

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

COMPARISON_ROWS = 80  # the forest plot's cells; the table lists every one
VERDICT_COLOURS = {
    SLOWER: "#d62728",
    SLOWER_UNSURE: "#ff7f0e",
    FASTER: "#2ca02c",
    FASTER_UNSURE: "#98df8a",
}
_SWEEP_HEIGHT = 3.2


def sweep_figure(figure_class: type[Figure], view: SweepView, colour: Colours) -> Figure:
    """Time and speed-up against the swept parameter, log axes, crossovers marked."""
    figure = figure_class(figsize=(WIDTH, _SWEEP_HEIGHT))
    grid = figure.add_gridspec(
        1, 2, left=0.6 / WIDTH, right=0.99, top=1 - 0.3 / _SWEEP_HEIGHT, bottom=0.15, wspace=0.2
    )
    time_ax, speed_ax = figure.add_subplot(grid[0, 0]), figure.add_subplot(grid[0, 1])
    medians = [p[1] for line in view.lines for p in line.points]
    scale, unit = time_unit(max(medians, default=1.0))
    for line in view.lines:
        _errorbar(time_ax, line.points, scale, line.stack, colour(line.stack))
        if line.stack != view.baseline:
            _errorbar(speed_ax, line.speed_up, 1.0, line.stack, colour(line.stack))
    for ax in (time_ax, speed_ax):
        log_scale(ax, "x")
        log_scale(ax, "y")
        ax.set_xlabel(view.param)
        for mark in view.crossovers:
            ax.axvline(mark.at, color="#333333", ls=":" if mark.uncertain else "--", lw=0.8)
    for mark in view.crossovers:
        label = f"{mark.label}{' (within noise)' if mark.uncertain else ''}"
        time_ax.annotate(
            label, (mark.at, 1.0), xycoords=("data", "axes fraction"), rotation=90, va="top",
            ha="right", fontsize=6,
        )  # fmt: skip
    speed_ax.axhline(1.0, color="#333333", lw=0.6)
    time_ax.set_title(f"Steady median ({unit}), 95 % interval")
    speed_ax.set_title(f"Speed-up vs {view.baseline} (above 1 is faster)")
    time_ax.legend(loc="upper left")
    return figure


def _errorbar(
    ax: Axes,
    points: Sequence[tuple[float, float, float, float]],
    scale: float,
    label: str,
    colour: str,
) -> None:
    if not points:
        return
    xs = [p[0] for p in points]
    ys = [p[1] / scale for p in points]
    errors = [
        [max(0.0, (p[1] - p[2]) / scale) for p in points],
        [max(0.0, (p[3] - p[1]) / scale) for p in points],
    ]
    ax.errorbar(xs, ys, yerr=errors, marker="o", ms=3, capsize=2, lw=1, label=label, color=colour)


def explain_figure(figure_class: type[Figure], explained: Explained, colour: Colours) -> Figure:
    """Time next to what a call costs besides it: CPU, page faults, dispatch."""
    rows = explained.rows
    labels = [row.stack for row in rows]
    figure, axes, slots = panels(figure_class, labels, "pplppl")
    time_ax, cpu_ax, faults_ax, dispatch_ax = axes
    scale, unit = time_unit(max(row.median_s for row in rows))
    places = range(len(rows))
    medians = [row.median_s / scale for row in rows]
    time_ax.barh(places, medians, color=[colour(row.stack) for row in rows], height=0.6)
    time_ax.set_title(f"Steady median ({unit})")
    user = [(row.user_s or 0.0) / scale for row in rows]
    system = [(row.sys_s or 0.0) / scale for row in rows]
    cpu_ax.barh(places, user, height=0.6, color=PALETTE[0], label="user")
    cpu_ax.barh(places, system, left=user, height=0.6, color=PALETTE[3], label="system")
    cpu_ax.plot(medians, places, "k|", ms=9, label="steady median")
    cpu_ax.set_title(f"CPU per call ({unit})")
    legend_in(slots[0], cpu_ax)
    faults = [row.page_faults or 0.0 for row in rows]
    faults_ax.barh(places, faults, height=0.6, color=PALETTE[5])
    faults_ax.set_title("Page faults per call")
    dispatch = [(row.dispatch_s or 0.0) / scale for row in rows]
    latency = [(row.latency_s or 0.0) / scale for row in rows]
    dispatch_ax.barh([p - 0.17 for p in places], dispatch, height=0.34, label="dispatch")
    dispatch_ax.barh([p + 0.17 for p in places], latency, height=0.34, label="call+sync")
    dispatch_ax.set_title(f"Dispatch, call+sync ({unit})")
    legend_in(slots[1], dispatch_ax)
    return figure


def comparison_figure(figure_class: type[Figure], view: ComparisonView) -> Figure | None:
    """Each judged cell's ratio with its interval, coloured by verdict (a forest plot)."""
    rows = [row for row in view.rows if row.result is not None][:COMPARISON_ROWS]
    if not rows:
        return None
    labels = [shorten(row.label, 80) for row in rows]
    height = 0.8 + 0.22 * len(rows)
    figure = figure_class(figsize=(WIDTH, height))
    left = label_inches(labels, most=WIDTH * 0.55) / WIDTH
    ax = figure.add_axes((left, 0.5 / height, 0.97 - left, 1 - 0.6 / height))
    for place, row in enumerate(rows):
        result = row.result
        assert result is not None  # filtered above; for the type checker
        error = [
            [max(0.0, result.ratio - result.ci_low)],
            [max(0.0, result.ci_high - result.ratio)],
        ]
        colour = VERDICT_COLOURS.get(result.verdict, "#7f7f7f")
        ax.errorbar(result.ratio, place, xerr=error, fmt="o", ms=3, capsize=2, color=colour)
    ax.set_yticks(range(len(labels)), labels=labels)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.axvline(1.0, color="#333333", lw=0.6)
    log_scale(ax, "x")
    ax.set_xlabel("candidate median ÷ baseline median, 95 % interval (below 1 is faster)")
    return figure
