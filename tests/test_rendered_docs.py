"""Figures in the docs are rendered from stored data, never typed: every block a document
holds between ``<!-- rendered: python SCRIPT ARGS -->`` and ``<!-- end rendered -->`` is what
that script prints from the data it names, and this test renders each block again."""

from __future__ import annotations

import contextlib
import io
import json
import re
import runpy
import shlex
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(
    r"<!-- rendered: python (?P<command>[^\n]*?) -->\n(?P<body>.*?)<!-- end rendered -->\n", re.S
)
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks() -> list[tuple[str, str, str]]:
    """(document, command, body) for every rendered block."""
    found = []
    for document in DOCUMENTS:
        for match in BLOCK.finditer(document.read_text(encoding="utf-8")):
            found.append((document.name, match["command"], match["body"]))
    return found


def render(command: str) -> str:
    """What ``python SCRIPT ARGS`` prints, run here from the repository's root (with the
    script's folder first on the import path, as ``python SCRIPT`` puts it)."""
    script, *args = shlex.split(command)
    out = io.StringIO()
    argv, path = sys.argv, list(sys.path)
    sys.argv = [script, *(str(ROOT / arg) if (ROOT / arg).exists() else arg for arg in args)]
    sys.path.insert(0, str((ROOT / script).parent))
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(str(ROOT / script), run_name="__main__")
    finally:
        sys.argv, sys.path[:] = argv, path
    return out.getvalue()


def test_the_documents_hold_rendered_blocks() -> None:
    assert any(document == "log.md" for document, _, _ in blocks())


@pytest.mark.parametrize(("document", "command", "body"), blocks(), ids=lambda v: str(v)[:40])
def test_each_rendered_block_is_what_its_data_renders(
    document: str, command: str, body: str
) -> None:
    assert render(command) == body, f"{document}: render again with `python {command}`"


def test_a_changed_stored_value_changes_the_rendering(tmp_path: Path) -> None:
    visit = ROOT / "docs" / "data" / "gpu-visit-6"
    copy = tmp_path / "visit"
    shutil.copytree(visit, copy)
    path = copy / "maxbatch-bert-torch.json"
    run = json.loads(path.read_text(encoding="utf-8"))
    run["cells"][0]["memory"]["device_peak_bytes"] += 2**30
    path.write_text(json.dumps(run), encoding="utf-8")
    original = render("benchmarks/gpu/render_visit.py docs/data/gpu-visit-6")
    assert render(f"benchmarks/gpu/render_visit.py {copy}") != original


def test_the_readme_example_is_rendered_from_its_run_file(tmp_path: Path) -> None:
    """The README's first example is its run file's rendering: a changed median changes it."""
    command = "benchmarks/render_run.py docs/data/readme-example/gemm-256.json"
    assert ("README.md", command) in {(document, shown) for document, shown, _ in blocks()}
    run = json.loads((ROOT / command.split()[1]).read_text(encoding="utf-8"))
    run["cells"][0]["steady"]["median_s"] *= 2
    changed = tmp_path / "gemm-256.json"
    changed.write_text(json.dumps(run), encoding="utf-8")
    assert render(f"benchmarks/render_run.py {changed}") != render(command)


def test_a_changed_peak_changes_the_memory_table(tmp_path: Path) -> None:
    """docs/log.md's GPT-Neo table is its run file's rendering: a changed peak changes it."""
    command = "benchmarks/render_memory.py docs/data/gpt-neo-2026-11-28/gpt-neo-infer-train.json"
    assert ("log.md", command) in {(document, shown) for document, shown, _ in blocks()}
    run = json.loads((ROOT / command.split()[1]).read_text(encoding="utf-8"))
    run["cells"][0]["memory"]["peak_rss_bytes"] += 2**30
    changed = tmp_path / "run.json"
    changed.write_text(json.dumps(run), encoding="utf-8")
    assert render(f"benchmarks/render_memory.py {changed}") != render(command)


def test_a_changed_spread_changes_the_cheap_rounds_tables(tmp_path: Path) -> None:
    """docs/evidence.md's cheap rounds are their sessions' rendering: a cell's changed spread
    changes the rounds it needs, and so the tables."""
    command = "benchmarks/power/render_rounds.py docs/data/rounds-2026-11-29"
    assert ("evidence.md", command) in {(document, shown) for document, shown, _ in blocks()}
    copy = tmp_path / "rounds"
    shutil.copytree(ROOT / command.split()[1], copy)
    path = copy / "duet-noise.json"
    noise = json.loads(path.read_text(encoding="utf-8"))
    for cell in noise["cells"].values():
        cell["spread"] /= 4
    path.write_text(json.dumps(noise), encoding="utf-8")
    assert render(f"benchmarks/power/render_rounds.py {copy}") != render(command)


def test_a_changed_wall_time_changes_what_the_reuse_saves(tmp_path: Path) -> None:
    """docs/log.md's reuse table is the 2026-11-28 edition's and its wall times' rendering."""
    folder = "docs/data/editions/20261128-200157-ca68ac"
    walls = f"{folder}/walls.json"
    command = f"benchmarks/render_reuse.py {folder}/edition.json {walls}"
    assert ("log.md", command) in {(document, shown) for document, shown, _ in blocks()}
    data = json.loads((ROOT / walls).read_text(encoding="utf-8"))
    for cell in data["walls"]["unified"]:  # the time the reused cells took in unified
        data["walls"]["unified"][cell] += 100
    changed = tmp_path / "walls.json"
    changed.write_text(json.dumps(data), encoding="utf-8")
    assert render(command.replace(walls, str(changed))) != render(command)


def test_an_edition_that_listed_cells_counts_them_at_the_wall_time_of_the_part_that_ran_them(
    tmp_path: Path,
) -> None:
    """The committed edition's Keras part listed cells earlier parts measured: docs/log.md's
    table counts each at its wall time in the part that ran it, and says what measuring them
    again would have added; a changed wall time there changes it."""
    walls = "docs/data/edition/walls.json"
    command = f"benchmarks/render_reuse.py docs/data/edition/edition.json {walls}"
    assert ("log.md", command) in {(document, shown) for document, shown, _ in blocks()}
    assert "measuring those cells again would have added about" in render(command)
    data = json.loads((ROOT / walls).read_text(encoding="utf-8"))
    for cell in data["walls"]["models"]:
        data["walls"]["models"][cell] += 100
    changed = tmp_path / "walls.json"
    changed.write_text(json.dumps(data), encoding="utf-8")
    assert render(command.replace(walls, str(changed))) != render(command)


EDITION = "docs/data/edition/edition.json"
EARLIER = "docs/data/editions/20261128-200157-ca68ac/edition.json"
FINDINGS = f"benchmarks/render_findings.py {EDITION}"


def test_the_findings_are_the_committed_editions_with_every_claim_once() -> None:
    """docs/findings.md is the committed edition rendered (checked with every block above),
    listing the edition before it, and names each built-in claim once, each judged once per
    reading."""
    from stackwars.instruments.claims.service import load_claims

    page = f"{FINDINGS} --earlier {EARLIER}"
    assert ("findings.md", page) in {(document, shown) for document, shown, _ in blocks()}
    text = (ROOT / "docs" / "findings.md").read_text(encoding="utf-8")
    for claim in load_claims([], builtin=True):
        assert text.count(f"`{claim.id}`") == 1, claim.id
    assert ("README.md", f"{FINDINGS} --headlines") in {(d, shown) for d, shown, _ in blocks()}


def test_a_changed_value_in_a_copy_of_the_edition_changes_the_findings(tmp_path: Path) -> None:
    data = json.loads((ROOT / EDITION).read_text(encoding="utf-8"))
    claims = next(part for part in data["parts"] if part["claims"])["claims"]
    measured = next(claim for claim in claims if claim["value"] is not None)
    measured["value"] *= 1.01
    changed = tmp_path / "edition.json"
    changed.write_text(json.dumps(data, indent=1), encoding="utf-8")
    assert render(f"benchmarks/render_findings.py {changed}") != render(FINDINGS)
