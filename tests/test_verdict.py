"""The gate's verdict is one object (results/verdict.py): ``stackwars.compare`` returns it to a
notebook, and ``compare`` and ``show --baseline`` print it and exit with its status alike."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

import stackwars
from stackwars.cli import main
from stackwars.errors import UsageError
from stackwars.results.comparison import FAIL, PASS, PASSED
from stackwars.results.run import Run
from stackwars.results.schema import Cell, Steady
from stackwars.results.store import Store
from stackwars.results.verdict import COMPARISON_FORMAT, EXIT_FAIL, EXIT_PASS

BASE, OTHER = "numpy:eager", "torch:eager"


def workers(stack: str, center: float, seed: int, shown_as: str = "") -> list[Cell]:
    """Ten workers of one cell, each with twenty tight samples around ``center`` (stored
    under ``shown_as`` when given)."""
    rng = random.Random(seed)
    cells = []
    for repeat in range(10):
        level = center * (1 + rng.gauss(0, 0.005))
        samples = [level * (1 + rng.gauss(0, 0.002)) for _ in range(20)]
        cells.append(
            Cell(
                workload="gemm", params={"n": 8}, stack=shown_as or stack, repeat=repeat,
                status="ok", steady=Steady(median_s=sorted(samples)[10], samples_s=samples),
            )
        )  # fmt: skip
    return cells


def stored(db: Path, run_id: str, cells: list[Cell]) -> str:
    """A finished run of ``cells`` in the store at ``db``, measured by nobody."""
    results = Store(db)
    record = Run(id=run_id, started=f"2026-12-01T10:00:0{len(results.run_ids())}+00:00",
                 machine={}, versions={}, argv=["run"], status="complete")  # fmt: skip
    results.begin_run(record)
    for cell in cells:
        results.add_cell(record, cell)
    record.finished = record.started
    results.finish_run(record)
    return run_id


def test_a_notebook_gets_the_verdict_from_the_public_api(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    before = stored(db, "before", workers(BASE, 1e-3, seed=1))
    after = stored(db, "after", workers(BASE, 1.3e-3, seed=2))
    same = stored(db, "same", workers(BASE, 1e-3, seed=3))

    result = stackwars.compare(before, after, db=str(db), fail_above=5, run_drift_pct=0)
    verdict = result.verdict
    assert (result.baseline.id, result.candidate.id) == (before, after)
    assert verdict.outcome == FAIL and verdict.exit_status == EXIT_FAIL == 1
    assert verdict.states == (FAIL,) and len(verdict.rows) == 1
    assert verdict.failures[0].startswith("REGRESSION above 5%: gemm(n=8) numpy:eager @ cpu")
    assert verdict.headline().startswith("Gate: FAIL (1 failure(s); family: 1 regression tests")
    assert verdict.family is not None and verdict.family.alpha == 0.05
    assert verdict.format == COMPARISON_FORMAT and verdict.mismatch == ""

    passed = stackwars.compare(before, same, db=str(db), fail_above=5, run_drift_pct=0).verdict
    assert (passed.outcome, passed.exit_status, passed.states) == (PASS, EXIT_PASS, (PASSED,))
    # --alpha's percentage reaches the family; no limit, no gate: nothing can fail.
    strict = stackwars.compare(before, after, db=str(db), fail_above=5, alpha_pct=1).verdict
    assert strict.family is not None and strict.family.alpha == pytest.approx(0.01)
    bare = stackwars.compare(before, after, db=str(db)).verdict
    assert (bare.outcome, bare.exit_status, bare.headline()) == (None, 0, "")
    assert bare.rows[0].result is not None and bare.rows[0].result.ratio > 1.2
    with pytest.raises(UsageError, match="--alpha 60 must be a percentage"):
        stackwars.compare(before, after, db=str(db), fail_above=5, alpha_pct=60)


def headline(out: str) -> str:
    """The gate's line, whatever the terminal's width wrapped."""
    found = re.search(r"Gate: [A-Z]+ \(.*?\(Holm\)\)", " ".join(out.split()))
    assert found, out
    return found.group(0)


@pytest.mark.parametrize(("slower", "status"), [(1.3, EXIT_FAIL), (1.0, EXIT_PASS)])
@pytest.mark.parametrize("alpha", [[], ["--alpha", "1"]])
def test_compare_and_show_baseline_print_one_verdict_and_exit_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], slower: float, status: int, alpha: list[str]
) -> None:
    """One run of two stacks (``show RUN --baseline numpy:eager``) and the same cells as two
    runs, the other stack's under the baseline's name (``compare A B``, no run-to-run term,
    as within one run): the same headline and the same exit status."""
    db = tmp_path / "s.sqlite"
    base, other = workers(BASE, 1e-3, seed=1), workers(OTHER, 1e-3 * slower, seed=2)
    both = stored(db, "both", base + other)
    first = stored(db, "first", base)
    second = stored(db, "second", workers(OTHER, 1e-3 * slower, seed=2, shown_as=BASE))
    gate = ["--db", str(db), "--fail-above", "5", *alpha]

    shown = main(["show", both, "--baseline", BASE, *gate])
    shown_out = capsys.readouterr().out
    compared = main(["compare", first, second, "--run-drift", "0", *gate])
    compared_out = capsys.readouterr().out
    assert shown == compared == status
    assert headline(shown_out) == headline(compared_out)
    assert ("at most 1 % per suite run" in headline(shown_out)) == bool(alpha)
    assert compared_out.startswith(headline(compared_out).split(" (")[0])


def test_a_bisect_step_shows_the_gate_verdict_it_was_judged_by() -> None:
    """bisect's steps are judged through the same verdict (at --alpha shared over the looks),
    and each step's lines end with its family."""
    from stackwars.instruments.ab.bisect import data, render
    from stackwars.instruments.ab.bisect.verdict import judged

    alpha = 0.01 / 8
    verdict, judgements = judged(
        workers(BASE, 1e-3, seed=1), workers(BASE, 1.3e-3, seed=2), 0.05, alpha, "8 looks"
    )
    assert verdict.outcome == FAIL and [j.word for j in judgements] == ["slower"]
    assert verdict.family is not None and verdict.family.alpha == pytest.approx(alpha)
    step = data.Step("1.0", "1.1", tuple(judgements), 3, 9.0, Path("s"), "decided", verdict=verdict)
    lines = render.step_lines(step).splitlines()
    assert lines[-1] == f"  {verdict.family.describe()}" and "8 looks" in lines[-1]


@pytest.mark.parametrize(
    ("argv", "threshold"),
    [
        (["--fail-above", "25"], 0.25),  # the rows speak of the gate's limit
        (["--fail-above", "25", "--threshold", "10"], 0.10),  # unless told otherwise
        ([], 0.05),  # no gate: the default
        (["--fail-above", "150"], 0.05),  # no row threshold reaches 100 %: the default
    ],
)
def test_an_ab_sessions_rows_read_the_gates_limit(argv: list[str], threshold: float) -> None:
    """A row judged against 5 % said 'undecided' of a cell a --fail-above 25 gate failed."""
    from stackwars.cli import build_parser
    from stackwars.instruments.ab.command import session_of

    args = build_parser().parse_args(["ab", *argv, "--", "--workload", "gemm"])
    assert session_of(args).threshold == pytest.approx(threshold)
