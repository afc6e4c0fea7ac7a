"""Issue 52, part 6: an instrument keeps its data through one seam (the store's
``add_data``) and shows it through its own render.py's ``SECTIONS``, so a new instrument edits
no core file: the toy "energy" instrument in tests/data/toy_instruments, found once its folder
is added to report/sections.py's ``FOLDERS``, stores a payload per cell with a run and appears
in ``show`` (and ``show --markdown``) and in ``stackwars report`` (HTML and Markdown)."""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from stackwars.cli import main
from stackwars.report import sections
from stackwars.results.run import Run, now
from stackwars.results.schema import Cell, Steady
from stackwars.results.store import Store

DATA = Path(__file__).parent / "data"


@pytest.fixture
def energy(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The toy instrument, discoverable for the test's length."""
    monkeypatch.syspath_prepend(str(DATA))
    folder = str(DATA / "toy_instruments")
    monkeypatch.setattr(sections, "FOLDERS", [*sections.FOLDERS, (folder, "toy_instruments.")])
    return importlib.import_module("toy_instruments.energy.render")


def _measured_run(db: Path, energy: ModuleType) -> Run:
    results = Store(db)
    run = Run("20261201-000000-energy", now(), {}, {}, ["stackwars", "run"], status="complete")
    results.begin_run(run)
    for n, joules in ((64, 0.25), (128, 1.5)):
        cell = Cell("gemm", {"n": n}, "numpy:eager", status="ok", steady=Steady(median_s=1e-3 * n))
        run.cells.append(cell)
        results.add_cell(run, cell)
        energy.keep(results, run, cell, joules)
    results.finish_run(run)
    return run


def test_a_toy_instrument_keeps_data_and_is_shown_without_a_core_edit(
    energy: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db.sqlite"
    run = _measured_run(db, energy)
    assert "energy" in [found.id for found in sections.discover()]
    stored = Store(db).data_of(run.id, "energy")
    assert [(entry.format_version, entry.payload["joules"]) for entry in stored] == [
        (1, 0.25),
        (1, 1.5),
    ]
    assert Store(db).load_run(run.id).entries("energy") == run.entries("energy")

    markdown = tmp_path / "show.md"
    assert main(["show", run.id, "--db", str(db), "--markdown", str(markdown)]) == 0
    shown = capsys.readouterr().out
    assert "Energy per call" in shown and "1.5 J" in shown
    assert "## Energy per call" in markdown.read_text()

    page = tmp_path / "report.html"
    assert main(["report", run.id, "--db", str(db), "--out", str(page)]) == 0
    html = page.read_text()
    assert '<section id="energy">' in html and "1.5 J" in html
    # After the core section it names.
    assert html.index('<section id="workloads">') < html.index('<section id="energy">')
    text = tmp_path / "report.md"
    assert main(["report", run.id, "--db", str(db), "--out", str(text), "--format", "md"]) == 0
    assert "## Energy per call" in text.read_text() and "0.25 J" in text.read_text()


def test_the_run_file_carries_a_toy_instruments_data_into_another_store(
    energy: ModuleType, tmp_path: Path
) -> None:
    run = _measured_run(tmp_path / "db.sqlite", energy)
    path = tmp_path / "run.json"
    Store(tmp_path / "db.sqlite").load_run(run.id).write_json(path)
    other = tmp_path / "other.sqlite"
    assert main(["import", str(path), "--db", str(other)]) == 0
    assert Store(other).load_run(run.id).entries("energy") == run.entries("energy")


def test_show_and_the_report_list_a_migrated_stores_claims_and_profiles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.test_store_files import TIMING_RUN, V6

    db = tmp_path / "v6.sqlite"
    shutil.copyfile(V6, db)
    assert main(["show", TIMING_RUN, "--db", str(db)]) == 0
    assert "Claims checked in run" in capsys.readouterr().out
    out = tmp_path / "report.md"
    assert main(["report", TIMING_RUN, "--db", str(db), "--out", str(out)]) == 0
    text = out.read_text()
    assert "## Claims checked" in text and "jit-beats-numpy" in text
    assert "## Where the time goes" in text and "gemm(n=64)" in text
