"""benchmarks/edition_walls.py reads each cell's worker wall time from the lines the
progress of ``stackwars reproduce`` prints, part by part, over the sittings' logs in order."""

from __future__ import annotations

import io
import runpy
from pathlib import Path
from typing import Any

from rich.console import Console

from stackwars.report.progress import Progress
from stackwars.results.schema import Cell

WALLS: dict[str, Any] = runpy.run_path(
    str(Path(__file__).resolve().parents[1] / "benchmarks" / "edition_walls.py")
)


def printed(*walls: float) -> str:
    """The lines a part's progress prints for cells of ``walls`` seconds (the time left
    after the first)."""
    out = io.StringIO()
    progress = Progress(total=len(walls), console=Console(file=out, width=300),
                        stacks=["numpy:eager"] * len(walls))  # fmt: skip
    with progress:
        for index, wall in enumerate(walls):
            progress.start_cell("gemm")
            progress.end_cell(Cell("gemm", {"n": 8 + index}, "numpy:eager", wall_s=wall))
    return out.getvalue()


def test_each_cells_wall_time_by_part_the_last_of_a_cell_printed_twice() -> None:
    first = "part 1/8: claims (seeds 000-002), 10800 s of the budget left\n" + printed(1.5, 2.25)
    second = "part 2/8: seed-blog (seed 000), 9000 s of the budget left\n" + printed(3.0)
    resumed = "part 1/8: claims (seeds 000-002), 8000 s of the budget left\n" + printed(4.0)
    assert "left (estimate)" in first, "a line with the time left after its wall time"
    assert WALLS["walls"]([first, second, resumed]) == {
        "claims": {
            "gemm(n=8) on numpy:eager @ cpu": 4.0,
            "gemm(n=9) on numpy:eager @ cpu": 2.25,
        },
        "seed-blog": {"gemm(n=8) on numpy:eager @ cpu": 3.0},
    }
