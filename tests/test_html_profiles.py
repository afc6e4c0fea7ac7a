"""The report's "Where the time goes" section: a run's profiles (run --profile) and profile
files (stackwars profile --json, report --profiles), each cell's stacks side by side."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from stackwars.cli import main
from stackwars.profiling.result import PROFILE_FORMAT, AddsUp, OpRow, Profile
from stackwars.report.html.data import ReportInputs, build_report
from stackwars.report.html.markdown import render_markdown
from stackwars.report.html.page import render_html
from stackwars.report.html.profiles import EMPTY, profile_views
from stackwars.report.table import format_seconds
from stackwars.results.run import Run
from stackwars.results.schema import Cell, Steady

SELU = {"n": 2000, "dtype": "float32"}
HOSTILE = "<script>alert(3)</script>"


def profile(stack: str, elementwise: float, idle: float, **kwargs: object) -> Profile:
    traced = elementwise + idle
    found = Profile(stack, "selu", dict(SELU), steady_s=traced, profiled_s=traced * 1.1)
    found.traced_s, found.calls = traced, 20
    found.categories = {
        "matmul/conv": 0.0,
        "elementwise/fused": elementwise,
        "reduction": 0.0,
        "data movement": 0.0,
        "overhead/idle": idle,
    }
    found.ops = [OpRow(f"fusion {HOSTILE}", "elementwise/fused", 1.0, elementwise, elementwise)]
    found.ops_per_call, found.fusions_per_call = 1.0, 1.0
    found.adds_up = AddsUp(traced, traced * 1.1)
    found.files = {"perfetto": f"/traces/{stack}/trace.json.gz"}
    for name, value in kwargs.items():
        setattr(found, name, value)
    return found


PROFILES = [
    profile("jax:jit", 4.5e-3, 0.1e-3, blind_spots="what happens inside one XLA operation"),
    profile("tensorflow:xla", 1.9e-3, 0.1e-3, notes=["1 of 20 profiled calls recorded nothing"]),
    Profile("numpy:eager", "selu", dict(SELU), "unsupported", "numpy has no profiler"),
]


def profiled_run() -> Run:
    cells = [
        Cell("selu", dict(SELU), stack, status="ok", steady=Steady(median_s=2e-3))
        for stack in ("numpy:eager", "jax:jit", "tensorflow:xla")
    ]
    run = Run("run-p", "2026-11-25T10:00:00+00:00", {}, {}, ["stackwars"], cells=cells)
    run.status, run.profiles = "complete", [p.to_dict() for p in PROFILES]
    return run


def section(page: str) -> str:
    match = re.search(r'<section id="profiles">(.*?)</section>', page, re.DOTALL)
    assert match, "the profiles section"
    return match.group(1)


def test_a_runs_profiles_are_side_by_side_per_cell() -> None:
    report = build_report(ReportInputs(runs=[profiled_run()]))
    (view,) = profile_views([profiled_run()])
    assert view.title == "selu(n=2000, dtype=float32) @ cpu"
    assert view.columns == ("per call", "jax:jit", "tensorflow:xla")
    rows = {row[0]: row[1:] for row in view.rows}
    # Each category with its share of the traced call, from the profiles' own numbers.
    assert rows["elementwise/fused"] == (
        f"{format_seconds(4.5e-3)} (98%)",
        f"{format_seconds(1.9e-3)} (95%)",
    )
    assert rows["matmul/conv"] == ("-", "-")
    assert rows["= traced per call"] == (format_seconds(4.6e-3), format_seconds(2e-3))
    assert rows["profiler overhead"] == ("+10%", "+10%")
    assert [title for title, _ in view.operations] == [
        "jax:jit: 1 of 1 operations",
        "tensorflow:xla: 1 of 1 operations",
    ]
    assert "numpy:eager: unsupported: numpy has no profiler" in view.notes
    assert "jax:jit: perfetto /traces/jax:jit/trace.json.gz" in view.notes
    # What each profiler cannot see, and what it noticed in this trace.
    assert "jax:jit: cannot see: what happens inside one XLA operation" in view.notes
    assert "tensorflow:xla: 1 of 20 profiled calls recorded nothing" in view.notes

    page = section(render_html(report, {}))
    assert '<h3 id="profile-0">selu(n=2000, dtype=float32) @ cpu</h3>' in page
    assert format_seconds(4.5e-3) in page and "tensorflow:xla" in page
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in page and HOSTILE not in page
    assert "numpy has no profiler" in render_markdown(report, {})


def test_without_profiles_the_section_says_how_to_make_them() -> None:
    run = profiled_run()
    run.profiles = []
    report = build_report(ReportInputs(runs=[run]))
    assert profile_views([run]) == ()
    assert EMPTY.split(":")[0] in section(render_html(report, {}))


def test_report_shows_profile_files_beside_the_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, out = str(tmp_path / "db.sqlite"), tmp_path / "report.html"
    profiled_run().write_json(tmp_path / "run.json")
    assert main(["import", str(tmp_path / "run.json"), "--db", db]) == 0
    written = tmp_path / "profiles.json"
    data = {"format": PROFILE_FORMAT, "profiles": [PROFILES[1].to_dict()]}
    written.write_text(json.dumps(data), encoding="utf-8")
    argv = ["report", "run-p", "--db", db, "--out", str(out)]
    assert main([*argv, "--profiles", str(written)]) == 0
    page = section(out.read_text(encoding="utf-8"))
    assert f"selu(n=2000, dtype=float32) @ cpu ({written})" in page
    assert 'id="profile-1"' in page
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    assert main([*argv, "--profiles", str(bad)]) == 2
    assert "not a file 'stackwars profile --json' wrote" in capsys.readouterr().err
