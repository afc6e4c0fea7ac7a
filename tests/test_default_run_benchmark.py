"""benchmarks/default_run.py: the default run timed from outside its process, kept as a digest
of its run file, and rendered (the newest the current answer) into results.md and the README."""

from __future__ import annotations

import json
import runpy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT: dict[str, Any] = runpy.run_path(str(ROOT / "benchmarks" / "default_run.py"))
README_RUN = ROOT / "docs" / "data" / "readme-example" / "gemm-256.json"


def run_file(walls: Mapping[str, float | None], started: str = "2026-11-30T03:00:00+00:00") -> dict:
    """A stored run file (the README example's header) with a cell of ``walls`` per stack, the
    numpy cell looked at twice."""
    run = json.loads(README_RUN.read_text(encoding="utf-8"))
    run["run"]["started"] = started
    run["run"]["id"] = started.replace(":", "")
    template = run["cells"][0]
    run["cells"] = []
    for stack, wall in walls.items():
        cell = {**template, "stack": stack, "wall_s": wall, "settings": {}}
        if stack == "numpy:eager":
            cell["settings"] = {"second_look": {"status": "ok", "wall_s": 0.75}}
        run["cells"].append(cell)
    return run


WALLS = {
    "numpy:eager": 1.0,
    "tensorflow:graph": 5.0,
    "keras-jax:eager": 4.0,
    "torch:compile": 12.0,
    "torch:xla": 3.0,
    "torch-xla:lazy": 2.0,
}


def write(folder: Path, record: dict[str, Any]) -> None:
    folder.mkdir(exist_ok=True)
    (folder / f"run-{record['run_id']}.json").write_text(json.dumps(record), encoding="utf-8")


def test_the_digest_groups_the_workers_time_by_what_each_cell_pays_for() -> None:
    record = SCRIPT["digest"](run_file(WALLS), 31.416, ["--stacks", "numpy"])
    assert record["command"] == "stackwars run --stacks numpy"
    assert record["wall_s"] == 31.42
    assert SCRIPT["group_walls"](record) == {
        "TensorFlow": (1, 5.0),
        "Keras": (1, 4.0),
        "torch.compile": (1, 12.0),
        "torch:xla": (2, 5.0),
        "the others": (1, 1.0),
    }
    assert SCRIPT["second_look"](record) == (1, 0.75)
    sentence = SCRIPT["readme_sentence"](record)
    assert sentence.startswith("The run took **31 s** (`stackwars run --stacks numpy` on AMD EPYC")
    assert "6 cells on 6 stacks, each" in sentence and "the second look 1 s on 1 cells" in sentence
    run = run_file({**WALLS, "torch-xla:lazy": None})
    run["cells"][-1]["status"] = "unsupported"
    record = SCRIPT["digest"](run, 31.416, [])
    assert SCRIPT["group_walls"](record)["torch:xla"] == (1, 3.0)
    assert "5 cells on 5 stacks (and 1 torch-xla:lazy unsupported: no worker)" in (
        SCRIPT["readme_sentence"](record)
    )


def test_the_newest_digest_is_current_and_a_changed_wall_changes_the_rendering(
    tmp_path: Path,
) -> None:
    older = SCRIPT["digest"](run_file(WALLS, "2026-11-29T10:00:00+00:00"), 120.0, [])
    newer = SCRIPT["digest"](run_file(WALLS), 100.0, [])
    write(tmp_path, newer)
    write(tmp_path, older)
    rows = [line for line in SCRIPT["table"](SCRIPT["read"](tmp_path)).splitlines() if "**" in line]
    assert [("(current)" in row, "**100 s**" in row) for row in rows] == [
        (True, True),
        (False, False),
    ]
    assert "(history)" in rows[1] and "**120 s**" in rows[1]
    before = SCRIPT["readme_sentence"](SCRIPT["read"](tmp_path)[-1])
    write(tmp_path, {**newer, "wall_s": 140.0})
    assert SCRIPT["readme_sentence"](SCRIPT["read"](tmp_path)[-1]) != before


def test_a_folder_without_digests_or_with_an_unknown_format_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"no run-\*\.json .*default_run\.py measure"):
        SCRIPT["read"](tmp_path)
    write(tmp_path, {**SCRIPT["digest"](run_file(WALLS), 1.0, []), "format": 99})
    with pytest.raises(SystemExit, match="format 99, this script reads 1"):
        SCRIPT["read"](tmp_path)


def test_run_options_are_refused_where_they_mean_nothing(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        SCRIPT["main"](["render", str(tmp_path), "--", "--stacks", "numpy"])


def test_measure_times_a_real_run_from_outside(tmp_path: Path) -> None:
    """One tiny real run: its digest holds the wall time from outside, longer than its one
    worker's, and the command as a user types it."""
    options = ["--workload", "gemm", "--param", "n=32", "--stacks", "numpy", "--budget", "0.05"]
    path = SCRIPT["measure"](tmp_path / "digests", [*options, "--second-look", "0", "--quiet"])
    record = json.loads(path.read_text(encoding="utf-8"))
    (cell,) = record["cells"]
    assert cell["stack"] == "numpy:eager" and cell["status"] == "ok"
    assert record["wall_s"] > cell["wall_s"] > 0
    assert record["command"].startswith("stackwars run --workload gemm")
