"""stackwars reproduce: the seeds' experiments as one edition (each part a stored run, the
edition file kept after each part, a budget that leaves parts listed as not run, a resume on
the same machine only), and the findings rendered from the edition file alone."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from stackwars.cli import main
from stackwars.errors import UsageError
from stackwars.instruments.claims.verdict import ClaimResult
from stackwars.instruments.reproduce import service
from stackwars.instruments.reproduce.data import (
    DONE,
    EDITION_FORMAT,
    INTERRUPTED,
    NOT_RUN,
    PartResult,
    read_edition,
)
from stackwars.instruments.reproduce.plan import CELLS, CLAIMS, FULL, TINY, Part, parts_at
from stackwars.instruments.reproduce.render.evidence import Evidence
from stackwars.instruments.reproduce.render.findings import (
    cells_table,
    evidence_sentences,
    findings_markdown,
    status_counts,
)
from stackwars.report.markdown_text import escape
from stackwars.report.table import format_seconds
from stackwars.results.schema import Cell
from stackwars.results.store import Store
from stackwars.service import api

TINY_EDITION = Path(__file__).parent / "data" / "edition-tiny.json"


def test_the_findings_name_each_seed_claim_once_with_its_verdict() -> None:
    edition = read_edition(TINY_EDITION)
    text = findings_markdown(edition)
    claims = [data for part in edition.parts for data in part.claims]
    assert claims
    for data in claims:
        assert text.count(f"`{data['id']}`") == 1
        assert f"**{data['verdict']}** `{data['id']}`" in text
    assert "## Seed 000" in text and "## Seed 002" in text
    assert edition.id in text and str(edition.machine["fingerprint"]) in text


def test_each_verdict_carries_the_evidence_of_its_own_part_s_cells() -> None:
    """A per-call reading is explained by the per-call cells, not by the resident cells of the
    same label; an IR claim by the IR another part captured; a claim with nothing measured
    here has no evidence line."""
    edition = read_edition(TINY_EDITION)
    whys = evidence_sentences(edition.parts)
    steady = {
        part.name: {c["stack"]: c["steady_s"] for c in part.cells if "poly" in c["cell"]}
        for part in edition.parts
        if part.name in ("claims", "claims-per-call")
    }
    assert steady["claims"] != steady["claims-per-call"]
    for part, claim in (("claims", "seed002-jit-poly-6x"),
                        ("claims-per-call", "seed002-jit-poly-6x-per-call")):  # fmt: skip
        said = f"jax:jit: steady {format_seconds(steady[part]['jax:jit'])}"
        assert whys[claim].startswith(said), whys[claim]
    assert re.search(r"jax:jit: stablehlo \d+ lines \(", whys["seed001-stablehlo-lines-jax"])
    assert "compilations: first run 1" in whys["seed001-ops-jax-steady-after-one"]
    assert whys["seed000-gpu-27x"] == ""
    findings = findings_markdown(edition)
    assert f"  - *Evidence:* {escape(whys['seed002-jit-poly-6x'])}." in findings


def _claim(statistic: str, *cells: str) -> ClaimResult:
    return ClaimResult.from_dict({"id": "c", "statistic": statistic, "cells": list(cells)})


def test_a_memory_verdict_says_what_the_work_held_and_the_plan_predicted() -> None:
    entry = {"cell": "c", "stack": "jax:jit", "status": "ok", "peak_rss_bytes": 3 * 2**30,
             "rss_after_import_bytes": 2**30, "predicted_bytes": 2 * 2**30}  # fmt: skip
    claim = _claim("held-memory", "c")
    said = Evidence({"c": entry}, {}).why(claim)
    assert said == ("jax:jit: peak RSS 3.00 GiB, 1.00 GiB after imports, so the work held "
                    "2.00 GiB, the plan predicted 2.00 GiB")  # fmt: skip
    split = {**entry, "first_run_peak_rss_bytes": 3 * 2**30, "timed_peak_rss_bytes": 2**31}
    assert ("the first run's peak (the compiler's working memory included) 3.00 GiB, the "
            "timed runs' 2.00 GiB") in Evidence({"c": split}, {}).why(claim)  # fmt: skip


def test_a_failed_cell_s_evidence_is_its_reason() -> None:
    entry = {"cell": "c", "stack": "jax:jit", "status": "oom", "reason": "trace\nout of memory"}
    claim = _claim("steady", "c")
    assert Evidence({"c": entry}, {}).why(claim) == "jax:jit: oom (out of memory)"


def test_earlier_editions_are_listed_newest_first_after_this_one() -> None:
    current = read_edition(TINY_EDITION)
    older = copy.deepcopy(current)
    older.id, older.started = "20261101-000000-aaaaaa", "2026-11-01T00:00:00+00:00"
    text = findings_markdown(current, [older])
    assert text.index(current.id) < text.index(older.id)
    assert f"| {older.id} | 2026-11-01T00:00:00+00:00 |" in text


def test_the_verdicts_changed_since_the_newest_earlier_edition_are_listed() -> None:
    """A claim whose verdict differs from the newest earlier edition's is listed with both
    verdicts and values (one the earlier did not judge: "not judged"); the others are not,
    and each claim's finding still stands once."""
    current = read_edition(TINY_EDITION)
    older, oldest = copy.deepcopy(current), copy.deepcopy(current)
    older.id, older.started = "20261101-000000-aaaaaa", "2026-11-01T00:00:00+00:00"
    oldest.id, oldest.started = "20261001-000000-bbbbbb", "2026-10-01T00:00:00+00:00"
    claims = [claim for part in older.parts for claim in part.claims]
    flipped, dropped = claims[0], claims[1]
    flipped["verdict"] = "fails" if flipped["verdict"] != "fails" else "holds"
    next(part for part in older.parts if dropped in part.claims).claims.remove(dropped)
    same = findings_markdown(current, [oldest])
    assert f"None of the {len(claims)} claims' verdicts changed." in same
    text = findings_markdown(current, [oldest, older])
    assert f"## Verdicts changed since edition `{older.id}`" in text
    assert f"2 of {len(claims)} claims:" in text
    now = {c["id"]: c for part in current.parts for c in part.claims}
    assert f"| {escape(flipped['id'])} | {escape(flipped['verdict'])}, " in text
    assert (
        f"| {escape(dropped['id'])} | not judged | {escape(now[dropped['id']]['verdict'])}, "
        in text
    )
    assert f"| {escape(claims[2]['id'])} |" not in text
    for claim in claims:
        assert text.count(f"`{claim['id']}`") == 1


def test_a_cell_measured_on_another_kind_of_machine_is_named(tmp_path: Path) -> None:
    data = json.loads(TINY_EDITION.read_text(encoding="utf-8"))
    part = next(part for part in data["parts"] if part["cells"])
    assert "**Not one machine" not in findings_markdown(read_edition(TINY_EDITION))
    part["cells"][0]["nodes"] = ["0123456789ab"]
    path = tmp_path / "edition.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    text = findings_markdown(read_edition(path))
    assert "**Not one machine:** 1 cell(s)" in text and "0123456789ab" in text


def test_a_changed_stored_value_changes_the_findings(tmp_path: Path) -> None:
    data = json.loads(TINY_EDITION.read_text(encoding="utf-8"))
    before = findings_markdown(read_edition(TINY_EDITION))
    changed = copy.deepcopy(data)
    claims = next(part for part in changed["parts"] if part["claims"])["claims"]
    measured = next(claim for claim in claims if claim["value"] is not None)
    measured["value"] *= 1.5
    path = tmp_path / "edition.json"
    path.write_text(json.dumps(changed), encoding="utf-8")
    assert findings_markdown(read_edition(path)) != before


def test_an_edition_of_another_format_is_refused_with_the_fix(tmp_path: Path) -> None:
    data = json.loads(TINY_EDITION.read_text(encoding="utf-8"))
    path = tmp_path / "edition.json"
    path.write_text(json.dumps({**data, "format": EDITION_FORMAT + 1}), encoding="utf-8")
    with pytest.raises(UsageError, match="run 'stackwars reproduce' again"):
        read_edition(path)


def test_a_second_reading_is_a_claim_of_its_own_name() -> None:
    """Seed 002's 6x with its inputs placed in every call is judged under a name of its own,
    never blended with the resident reading."""
    per_call = next(part for part in FULL if part.inputs == "per-call")
    chosen = service.chosen_claims(per_call)
    assert chosen and all(claim.id.endswith("-per-call") for claim in chosen)
    assert all("inputs per-call" in claim.note for claim in chosen)


def test_tiny_has_each_kind_of_experiment_of_the_full_edition() -> None:
    assert {part.kind for part in TINY} == {part.kind for part in FULL}
    assert {part.name for part in TINY} <= {part.name for part in FULL}
    claims = next(part for part in TINY if part.kind == CLAIMS)
    assert {key for key, _ in claims.claim_params} <= set(claims.claims)
    with pytest.raises(UsageError, match="--scale 'huge'"):
        parts_at("huge")


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_part_past_the_budget_is_listed_not_run_and_a_resume_with_more_runs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each part takes 40 s on a fake clock under a 100 s budget: three run, the others are
    not run, saying why; --resume with a larger budget runs only those."""
    clock, measured = FakeClock(), []

    def fake_part(part: Any, kept: Any, context: Any) -> None:
        measured.append(part.name)
        clock.now += 40

    monkeypatch.setattr(service, "_measure_part", fake_part)
    path = tmp_path / "edition.json"
    store = Store(tmp_path / "db.sqlite")
    edition = service.begin("tiny", 100, ["stackwars", "reproduce"])
    service.measure(edition, path, store, _no_reporter, clock=clock)
    kept = read_edition(path)
    assert [p.status for p in kept.parts] == [DONE] * 3 + [NOT_RUN] * (len(TINY) - 3)
    assert "time budget (100 s) was spent" in kept.parts[3].reason
    assert measured == [part.name for part in TINY[:3]]
    resumed = service.with_budget(service.resume_edition(path), 1000)
    service.measure(resumed, path, store, _no_reporter, clock=clock)
    assert measured[3:] == [part.name for part in TINY[3:]]
    assert [p.status for p in read_edition(path).parts] == [DONE] * len(TINY)


def test_parts_a_resume_measured_are_named_with_its_command_and_newer_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edition begun at one commit and resumed at another by another command is still one
    edition, but the findings say which parts the resume measured, by what command and with
    what code."""
    clock, commit = FakeClock(), {"commit": "a" * 40, "dirty": False}

    def fake_part(part: Any, kept: Any, context: Any) -> None:
        clock.now += 40

    monkeypatch.setattr(service, "_measure_part", fake_part)
    monkeypatch.setattr(service.metadata, "git_state", lambda source: dict(commit))
    path, store = tmp_path / "edition.json", Store(tmp_path / "db.sqlite")
    service.measure(service.begin("tiny", 100, ["stackwars"]), path, store, _no_reporter,
                    clock=clock)  # fmt: skip
    assert "Resumed" not in findings_markdown(read_edition(path))
    commit["commit"] = "b" * 40
    again = ["stackwars", "reproduce", "--resume", "--time-budget", "1000"]
    resumed = service.with_budget(service.resume_edition(path), 1000)
    service.measure(resumed, path, store, _no_reporter, clock=clock, command=again)
    kept = read_edition(path)
    assert [p.command for p in kept.parts] == [["stackwars"]] * 3 + [again] * (len(TINY) - 3)
    findings = findings_markdown(kept)
    by = f"by `{' '.join(again)}` at `{'b' * 12}`"
    assert all(f"{p.name} {by}" in findings for p in TINY[3:])
    assert not any(f"{p.name} by `" in findings for p in TINY[:3])


def test_an_edition_of_format_1_still_reads_and_says_its_format() -> None:
    edition = read_edition(TINY_EDITION)
    assert edition.file_format == 1 and all(part.source is None for part in edition.parts)
    assert "(format 1)" in findings_markdown(edition, size_bytes=1)


def test_each_part_s_run_keeps_the_edition_and_its_report_shows_the_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """show and the report of any part's run have the section of its edition, with the
    claims' verdicts and evidence, in its latest state."""
    from stackwars.instruments.reproduce.render import SECTIONS
    from stackwars.report.html.blocks import Heading, TableBlock
    from stackwars.results.run import Run

    store, source = Store(tmp_path / "db.sqlite"), read_edition(TINY_EDITION)

    def fake_part(part: Any, kept: Any, context: Any) -> None:
        run = Run(id=f"r-{part.name}", started="2026-11-28T00:00:00+00:00", machine={},
                  versions={}, argv=[], identity={})  # fmt: skip
        store.begin_run(run)
        done = source.part(part.name)
        assert done is not None
        kept.run_id, kept.cells, kept.claims = run.id, done.cells, done.claims

    monkeypatch.setattr(service, "_measure_part", fake_part)
    edition = service.begin("tiny", 100, ["stackwars", "reproduce"])
    service.measure(edition, tmp_path / "edition.json", store, _no_reporter)
    (section,) = SECTIONS
    first = store.load_run(f"r-{TINY[0].name}")
    blocks = section.report(SimpleNamespace(runs=[first]))
    assert Heading("Seed 002: JAX vs NumPy") in blocks
    rows = [row for b in blocks if isinstance(b, TableBlock) for row in b.rows]
    whys = evidence_sentences(read_edition(tmp_path / "edition.json").parts)
    assert rows[[r[1] for r in rows].index(
        "seed002-jit-poly-6x")][:2] == ("fails", "seed002-jit-poly-6x")  # fmt: skip
    assert any(row[-1] == whys["seed002-jit-poly-6x"] != "" for row in rows)
    assert [part.status for part in read_edition(tmp_path / "edition.json").parts] == [DONE] * 5
    assert section.markdown(first) == findings_markdown(read_edition(tmp_path / "edition.json"))
    assert section.report(SimpleNamespace(runs=[])) == []


def test_an_interrupted_part_is_kept_as_such_and_resumed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(part: Any, kept: Any, context: Any) -> None:
        if part.name == TINY[1].name:
            raise KeyboardInterrupt

    monkeypatch.setattr(service, "_measure_part", interrupted)
    path = tmp_path / "edition.json"
    edition = service.begin("tiny", 100, ["stackwars", "reproduce"])
    with pytest.raises(KeyboardInterrupt):
        service.measure(edition, path, Store(tmp_path / "db.sqlite"), _no_reporter)
    statuses = [part.status for part in read_edition(path).parts]
    assert statuses == [DONE, INTERRUPTED] + [NOT_RUN] * (len(TINY) - 2)


def test_a_cells_part_continued_by_a_resume_names_both_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cells part interrupted and continued by a resume with other code keeps the first
    session (its run holds that session's cells too), and the findings name both."""
    from stackwars.results.run import Run

    cells = next(part for part in TINY if part.kind == CELLS)
    commit, stops = {"commit": "a" * 40, "dirty": False}, [cells.name]
    path, store = tmp_path / "edition.json", Store(tmp_path / "db.sqlite")

    def fake_part(part: Any, kept: Any, context: Any) -> None:
        if kept.run_id is None:  # a resume goes on with the part's run
            run = Run(id=f"r-{part.name}", started="2026-11-29T00:00:00+00:00", machine={},
                      versions={}, argv=[], identity={})  # fmt: skip
            store.begin_run(run)
            kept.run_id = run.id
        if part.name in stops:
            stops.remove(part.name)
            raise KeyboardInterrupt

    monkeypatch.setattr(service, "_measure_part", fake_part)
    monkeypatch.setattr(service.metadata, "git_state", lambda source: dict(commit))
    with pytest.raises(KeyboardInterrupt):
        service.measure(service.begin("tiny", 100, ["stackwars"]), path, store, _no_reporter)
    commit["commit"] = "b" * 40
    again = ["stackwars", "reproduce", "--resume"]
    service.measure(service.resume_edition(path), path, store, _no_reporter, command=again)
    part = read_edition(path).part(cells.name)
    assert part is not None and part.status == DONE
    assert [session["source"]["commit"] for session in part.earlier] == ["a" * 40]
    assert part.earlier[0]["command"] == ["stackwars"] and part.command == again
    findings = findings_markdown(read_edition(path))
    assert f"{cells.name} by `stackwars` (begun " in findings
    assert f"continued by `stackwars reproduce --resume` at `{'b' * 12}`" in findings


def test_a_part_cut_by_the_budget_is_interrupted_and_the_edition_still_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget runs out inside a part: that part stops after the cell that ended (its run
    resumable), the parts after it are not run, and the edition ends with its findings."""

    clock = FakeClock()

    def cut(part: Any, kept: Any, context: Any) -> None:
        clock.now += 60
        if part.name == TINY[1].name:
            raise service.TimeBudgetSpent

    monkeypatch.setattr(service, "_measure_part", cut)
    path = tmp_path / "edition.json"
    edition = service.begin("tiny", 100, ["stackwars", "reproduce"])
    service.measure(edition, path, Store(tmp_path / "db.sqlite"), _no_reporter, clock=clock)
    kept = read_edition(path)
    assert [p.status for p in kept.parts] == [DONE, INTERRUPTED] + [NOT_RUN] * (len(TINY) - 2)
    assert "spent during this part" in kept.parts[1].reason and kept.ended is not None


def test_the_deadline_lets_a_cell_end_then_stops_the_run() -> None:
    seen: list[str] = []

    class Inner:
        def __enter__(self) -> Inner:
            return self

        def __exit__(self, *exc: object) -> None:
            seen.append("closed")

        def start_cell(self, label: str) -> None:
            seen.append(label)

        def phase(self, text: str) -> None: ...

        def end_cell(self, cell: Any) -> None:
            seen.append("ended")

        def more(self, stacks: Any) -> None: ...

    spent = iter([False, True])
    watched = service._deadline(lambda cells, stacks: Inner(), lambda: next(spent))
    with pytest.raises(service.TimeBudgetSpent), watched(2, []) as reporter:
        for label in ("a", "b", "c"):
            reporter.start_cell(label)
            reporter.end_cell(Cell("gemm", {}, "numpy:eager"))
    assert seen == ["a", "ended", "b", "ended", "closed"]


def test_the_budget_stops_a_probes_part_after_the_outcome_that_ends_past_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """behave's probes take no reporter: the outcome that ends past the budget stops them,
    the outcomes so far kept and the cut run named by its label."""
    from stackwars.instruments.behave.data import Outcome
    from stackwars.results.run import Run

    store = Store(tmp_path / "db.sqlite")
    label = "edition e: pitfalls"

    def fake_behave(*args: Any, on_outcome: Any, **kwargs: Any) -> Any:
        run = Run(id="r-probes", started="2026-11-28T00:00:00+00:00", machine={}, versions={},
                  argv=[], identity={"label": label}, kind="behave")  # fmt: skip
        store.begin_run(run)
        for probe in ("value-if", "side-effect", "new-shape"):
            on_outcome(Outcome(probe, "jax:jit", "works", ""))
        raise AssertionError("the budget should have stopped the probes")

    monkeypatch.setattr(service, "behave_run", fake_behave)
    spent = iter([False, True])
    context = service._Context(store, _no_reporter, service.Where(), label, [], True, 0.0,
                               spent=lambda: next(spent))  # fmt: skip
    kept = service.files.PartResult("pitfalls", "seed 000", "?", "probes")
    with pytest.raises(service.TimeBudgetSpent):
        service._probes(next(p for p in FULL if p.kind == "probes"), kept, context)
    assert [o["probe"] for o in kept.outcomes] == ["value-if", "side-effect"]
    assert kept.run_id == "r-probes"


def test_a_resume_without_an_edition_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="start one with 'stackwars reproduce --out"):
        service.resume_edition(tmp_path / "edition.json")


def test_options_that_would_be_ignored_are_refused_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ed"
    service.begin("tiny", 100, ["stackwars", "reproduce"]).write(service.edition_path(out))
    for argv, fix in (
        (["--earlier", str(TINY_EDITION)], "use it with --render EDITION"),
        (["--resume", "--scale", "full", "--out", str(out)], "drop --scale"),
    ):
        assert main(["reproduce", *argv, "--db", str(tmp_path / "db.sqlite")]) == 2
        assert fix in capsys.readouterr().err
    assert not (tmp_path / "db.sqlite").exists()


def test_an_edition_from_another_machine_is_not_resumed(tmp_path: Path) -> None:
    edition = service.begin("tiny", 100, ["stackwars", "reproduce"])
    edition.machine["fingerprint"] = "elsewhere"
    path = tmp_path / "edition.json"
    edition.write(path)
    with pytest.raises(UsageError, match="begun on another machine"):
        service.resume_edition(path)


def _no_reporter(cells: int, stacks: Any) -> Any:
    raise AssertionError("the fake parts report nothing")


class _Quiet:
    def __enter__(self) -> _Quiet:
        return self

    def __exit__(self, *exc: object) -> None: ...

    def start_cell(self, label: str) -> None: ...

    def phase(self, text: str) -> None: ...

    def end_cell(self, cell: Any) -> None: ...

    def more(self, stacks: Any) -> None: ...


@pytest.mark.slow
def test_a_reusing_part_lists_what_an_earlier_part_measured_and_measures_the_rest(
    tmp_path: Path,
) -> None:
    """The unified part's native cells are the models part's: a cell an earlier cells part
    measured ok is listed with the part that measured it, and only the others get a worker
    (one real NumPy worker here); a claims part's cells, or another input placement's, are
    never taken, nor a cell that failed."""
    ops = Part("ops", "seed 001", "q", CELLS, workload="gemm", params=("n=32",),
               stacks="numpy:eager")  # fmt: skip
    asks = Part("asks", "seed 001", "q", CLAIMS, claims=("x",))
    per_call = replace(ops, name="per-call", inputs="per-call")
    unified = replace(ops, name="unified", params=("n=32,48", "dtype=float32,float64"),
                      reuse=True)  # fmt: skip
    selection = api.Selection(workload="gemm", params=("n=32",), stacks="numpy:eager")
    (spec,), _ = api.choose_cells(selection)
    entry = {"cell": spec.label(), "workload": "gemm", "params": spec.params,
             "stack": "numpy:eager", "device": "cpu", "to_host": False, "status": "ok",
             "workers": 1, "steady_s": 1e-5}  # fmt: skip
    failed = {**entry, "params": {**spec.params, "dtype": "float64"}, "status": "error"}
    claimed = {**entry, "params": {"n": 48, "dtype": "float32"}}
    earlier = [
        PartResult("ops", "seed 001", "q", CELLS, DONE, run_id="r1", cells=[entry, failed]),
        PartResult("asks", "seed 001", "q", CLAIMS, DONE, run_id="r2", cells=[claimed]),
        PartResult("per-call", "seed 001", "q", CELLS, DONE, run_id="r3",
                   cells=[{**claimed, "params": {"n": 48, "dtype": "float64"}}]),
    ]  # fmt: skip
    plan = {part.name: part for part in (ops, asks, per_call, unified)}
    reusable = service.measured_before(unified, earlier, plan)
    assert list(reusable.values()) == [{**entry, "measured_in": "ops", "run_id": "r1"}]
    assert service.measured_before(ops, earlier, plan) == {}
    kept = PartResult("unified", "seed 001", "q", CELLS)
    context = service._Context(
        Store(tmp_path / "db.sqlite"), lambda cells, stacks: _Quiet(), service.Where(),
        "edition e: unified", [], True, 0.0, reusable=reusable,
    )  # fmt: skip
    service._cells(unified, kept, context)
    measured = [cell for cell in kept.cells if "measured_in" not in cell]
    assert sorted((c["params"]["n"], c["params"]["dtype"]) for c in measured) == [
        (32, "float64"), (48, "float32"), (48, "float64")
    ]  # fmt: skip
    assert [cell["measured_in"] for cell in kept.cells if "measured_in" in cell] == ["ops"]
    assert "(1 of them measured by ops)" in status_counts(kept)
    assert "1 worker, measured by part ops" in "\n".join(cells_table(kept.cells))


@pytest.mark.slow
def test_the_tiny_edition_runs_end_to_end_from_another_folder(tmp_path: Path) -> None:
    """The command a user types, from a folder that is not the repository, with a plausible
    hostile KERAS_BACKEND set: first under a budget far below the edition's time, which runs
    out in a part or between two (which one rests on the machine's speed: on 2026-11-29 the
    claims part ended within it; the fake-clock tests above pin each case): the parts before
    done, the one it ran out in interrupted, the rest listed not run, the findings written all
    the same; then resumed with a larger one: every part done, each a run in the store, the
    findings rendered again identically from the file."""
    environment = {**os.environ, "KERAS_BACKEND": "torch"}
    command = [sys.executable, "-m", "stackwars", "reproduce", "--scale", "tiny", "--quiet"]
    command += ["--db", str(tmp_path / "db.sqlite"), "--out", str(tmp_path / "edition")]

    def reproduce(*extra: str) -> None:
        done = subprocess.run(
            [*command, *extra], check=False, cwd=tmp_path, env=environment, capture_output=True,
            text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr

    reproduce("--time-budget", "20")
    cut = read_edition(tmp_path / "edition" / "edition.json")
    statuses = [part.status for part in cut.parts]
    ran = statuses.count(DONE) + statuses.count(INTERRUPTED)
    assert statuses.count(INTERRUPTED) <= 1 and NOT_RUN in statuses, statuses
    assert statuses == sorted(statuses, key=[DONE, INTERRUPTED, NOT_RUN].index), statuses
    assert 0 < ran < len(statuses), statuses
    findings = (tmp_path / "edition" / "findings.md").read_text(encoding="utf-8")
    assert "was spent before" in findings
    assert ("was spent during this part" in findings) == (INTERRUPTED in statuses)
    reproduce("--resume", "--time-budget", "900")
    edition = read_edition(tmp_path / "edition" / "edition.json")
    assert edition.id == cut.id
    assert [part.status for part in edition.parts] == [DONE] * len(TINY)
    runs = set(Store(tmp_path / "db.sqlite").run_ids())
    assert {part.run_id for part in edition.parts} <= runs
    claims = {data["id"]: data for part in edition.parts for data in part.claims}
    assert claims["seed000-gpu-27x"]["verdict"] == "not checkable here"
    assert claims["seed001-stablehlo-lines-jax"]["value"] > 0
    assert claims["seed002-jit-poly-6x"]["workers"][0] >= 3
    assert "seed002-jit-poly-6x-per-call" in claims
    models = edition.part("models")
    assert models is not None and any(entry["stage"] == "stablehlo" for entry in models.ir)
    findings = (tmp_path / "edition" / "findings.md").read_text(encoding="utf-8")
    again = tmp_path / "again.md"
    render = [sys.executable, "-m", "stackwars", "reproduce", "--render"]
    render += [str(tmp_path / "edition" / "edition.json"), "--markdown", str(again)]
    subprocess.run(render, cwd=tmp_path, check=True, capture_output=True)
    assert again.read_text(encoding="utf-8") == findings
    claims_run = edition.part("claims")
    assert claims_run is not None and claims_run.run_id is not None
    report = [sys.executable, "-m", "stackwars", "report", claims_run.run_id, "--db"]
    report += [str(tmp_path / "db.sqlite"), "--out", str(tmp_path / "report.html")]
    subprocess.run(report, cwd=tmp_path, check=True, capture_output=True, env=environment)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "What stackwars found" in page and "seed002-jit-poly-6x-per-call" in page


@pytest.mark.slow
def test_a_part_interrupted_with_another_store_keeps_its_cells_and_measures_the_rest(
    tmp_path: Path,
) -> None:
    """An edition file resumed where its store is not (a new machine of the same kind): the
    interrupted part's cells stay as measured, naming their run, and a new run measures only
    the cells it lacks; a cut of that run keeps both."""
    part = Part("ops", "seed 001", "q", CELLS, workload="gemm", params=("n=32,48",),
                stacks="numpy:eager")  # fmt: skip
    (first, _), _ = api.choose_cells(_selection(part))
    entry = {"cell": first.label(), "workload": "gemm", "params": first.params,
             "stack": "numpy:eager", "device": "cpu", "to_host": False, "status": "ok",
             "workers": 1, "steady_s": 1e-5}  # fmt: skip
    kept = PartResult("ops", "seed 001", "q", CELLS, INTERRUPTED, run_id="gone", cells=[entry])
    store = Store(tmp_path / "db.sqlite")
    context = service._Context(
        store, lambda cells, stacks: _Quiet(), service.Where(), "edition e: ops", [], True, 0.0,
        resumed="gone",
    )  # fmt: skip
    service._cells(part, kept, context)
    assert kept.run_id in store.run_ids()
    assert kept.cells[0] == {**entry, "run_id": "gone"}
    assert [cell["params"]["n"] for cell in kept.cells[1:]] == [48]
    assert len(store.load_run(kept.run_id).cells) == 1
    service._cut(kept, store, "interrupted")
    assert [(cell["params"]["n"], cell.get("run_id")) for cell in kept.cells] == [
        (32, "gone"), (48, None)
    ]  # fmt: skip


def _selection(part: Part) -> api.Selection:
    return api.Selection(workload=part.workload, params=part.params, stacks=part.stacks)
