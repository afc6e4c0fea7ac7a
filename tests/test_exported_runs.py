"""Results that travel: runs compared as exported files from any store, imported into a
store, labelled, tied to their machine and git state, and reported as Markdown and JSON."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

from stackwars.cli import main
from stackwars.commands.options import EXIT_UNDERPOWERED
from stackwars.report.history import HISTORY_JSON_VERSION
from stackwars.results import metadata, store
from stackwars.results.run import Run, now
from stackwars.results.schema import Cell, Steady

FINGERPRINT = metadata.fingerprint(metadata.machine_info())


def workers(center: float, seed: int) -> list[Cell]:
    rng = random.Random(seed)
    cells = []
    for repeat in range(3):
        level = center * (1 + rng.gauss(0, 0.05))
        samples = [level * (1 + rng.gauss(0, 0.01)) for _ in range(50)]
        steady = Steady(median_s=sorted(samples)[25], samples_s=samples, blocks=50)
        cells.append(
            Cell("gemm", {"n": 8}, "numpy:eager", repeat=repeat, status="ok", steady=steady)
        )
    return cells


def exported(folder: Path, run_id: str, center: float, seed: int, fingerprint: str) -> Path:
    identity = {"label": run_id, "hostname": "here", "fingerprint": fingerprint, "git": None}
    run = Run(run_id, now(), {}, {}, ["stackwars"], status="complete", identity=identity)
    run.cells = workers(center, seed)
    path = folder / f"{run_id}.json"
    run.write_json(path)
    return path


def test_compare_reads_exported_files_and_writes_markdown_json_and_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    base = exported(tmp_path, "base", 1e-3, 1, FINGERPRINT)
    slow = exported(tmp_path, "slow", 2e-3, 2, FINGERPRINT)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    argv = ["compare", str(base), str(slow), "--fail-above", "10", "--github-summary"]
    argv += ["--markdown", str(tmp_path / "c.md"), "--json", str(tmp_path / "c.json")]
    assert main(argv) == 1
    assert "REGRESSION above 10%" in capsys.readouterr().out
    markdown = (tmp_path / "c.md").read_text(encoding="utf-8")
    first, _, rest = markdown.partition("\n\n")
    assert first.startswith("**Gate: FAIL (1 failure(s); family: 1 regression tests")
    assert rest.startswith("### slow against base") and "| slower † |" in markdown
    assert "† two single runs: each interval includes a run-to-run drift of 4.0 %" in markdown
    assert "- REGRESSION above 10%: gemm(n=8) numpy:eager @ cpu" in markdown
    assert summary.read_text(encoding="utf-8") == markdown + "\n"
    written = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    assert written["format"] == 5 and written["gate"]["fail_above"] == 10
    assert written["outcome"] == "fail" and written["exit_status"] == 1
    (row,) = written["rows"]
    assert row["comparison"]["verdict"] == "slower" and row["comparison"]["workers"] == [3, 3]


def test_runs_from_different_machines_are_never_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = exported(tmp_path, "base", 1e-3, 1, "aaaaaaaaaaaa")
    slow = exported(tmp_path, "slow", 2e-3, 2, "bbbbbbbbbbbb")
    argv = ["compare", str(base), str(slow), "--fail-above", "10"]
    assert main(argv) == EXIT_UNDERPOWERED
    captured = capsys.readouterr()
    out, err = " ".join(captured.out.split()), " ".join(captured.err.split())
    assert "warning: the runs come from different machines" in err
    assert out.startswith("Gate: UNDERPOWERED") and "REGRESSION" not in out
    assert "undecided: gemm(n=8) numpy:eager @ cpu: inconclusive; the runs come from" in out


def test_import_adds_an_exported_run_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = exported(tmp_path, "base", 1e-3, 1, FINGERPRINT)
    db = str(tmp_path / "db.sqlite")
    assert main(["import", str(base), "--db", db]) == 0
    assert "imported run base (3 cells)" in capsys.readouterr().out
    assert len(store.Store(Path(db)).load_run("base").cells) == 3
    assert main(["import", str(base), "--db", db]) == 2
    assert "already in" in capsys.readouterr().err
    assert main(["runs", "--db", db, "--label", "base"]) == 0
    assert "base" in capsys.readouterr().out
    assert main(["runs", "--db", db, "--label", "other"]) == 0
    assert "base" not in capsys.readouterr().out.split("command")[-1]
    assert main(["runs", "--db", db, "--machine", FINGERPRINT]) == 0
    assert "base" in capsys.readouterr().out.split("command")[-1]
    assert main(["runs", "--db", db, "--machine", "000000000000"]) == 0
    assert "base" not in capsys.readouterr().out.split("command")[-1]


def test_a_file_that_is_not_a_run_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bogus = tmp_path / "bogus.json"
    bogus.write_text('{"hello": 1}', encoding="utf-8")
    assert main(["compare", str(bogus), str(bogus)]) == 2
    err = capsys.readouterr().err
    assert "is not a stackwars run file" in err and len(err.strip().splitlines()) == 1


def test_a_run_records_its_label_machine_and_git_state(tmp_path: Path) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f.txt").write_text("x", encoding="utf-8")
    subprocess.run([*git, "-C", str(tmp_path), "add", "f.txt"], check=True)
    subprocess.run([*git, "-C", str(tmp_path), "commit", "-qm", "x"], check=True)
    identity = metadata.run_identity("nightly", tmp_path)
    assert identity["label"] == "nightly"
    assert identity["fingerprint"] == FINGERPRINT
    assert identity["git"]["dirty"] is False and len(identity["git"]["commit"]) == 40
    (tmp_path / "f.txt").write_text("changed", encoding="utf-8")
    changed = metadata.git_state(tmp_path)
    assert changed is not None and changed["dirty"] is True and changed["branch"]
    assert metadata.git_state(Path("/")) is None


def test_history_never_mixes_machines_and_filters_by_label_and_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db.sqlite")
    for run_id, fingerprint, seed in (("a1", "aaaaaaaaaaaa", 1), ("b1", "bbbbbbbbbbbb", 2)):
        path = exported(tmp_path, run_id, 1e-3, seed, fingerprint)
        assert main(["import", str(path), "--db", db]) == 0
    capsys.readouterr()
    argv = ["history", "--workload", "gemm", "--stack", "numpy:eager", "--db", db]
    assert (
        main([*argv, "--markdown", str(tmp_path / "h.md"), "--json", str(tmp_path / "h.json")]) == 0
    )
    out = capsys.readouterr().out
    assert "on machine aaaaaaaaaaaa" in out and "on machine bbbbbbbbbbbb" in out
    assert (tmp_path / "h.md").read_text(encoding="utf-8").count("### ") == 2
    written = json.loads((tmp_path / "h.json").read_text(encoding="utf-8"))
    assert written["schema_version"] == HISTORY_JSON_VERSION and len(written["series"]) == 2
    assert main([*argv, "--machine", "aaaaaaaaaaaa"]) == 0
    out = capsys.readouterr().out
    assert "a1" in out and "b1" not in out and "on machine" not in out
    assert main([*argv, "--label", "b1"]) == 0
    assert "b1" in capsys.readouterr().out
    assert main([*argv, "--label", "nope"]) == 2
    assert "with label nope" in capsys.readouterr().err
