"""Store files written by earlier versions of stackwars, committed under tests/data, read by
this version: every claim, profile, behave outcome and IR capture they hold comes back equal
to what was written (the migration loses nothing).

Each committed file was made by the ``make_store_v*`` function below, run with the code of
its version (``python -c "from tests.test_store_files import make_store_v6 as m;
m('tests/data/store-v6.sqlite')"`` at the commit that added it); the tests read the committed
file, never one made now."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
V6 = DATA / "store-v6.sqlite"

TIMING_RUN = "20261201-000000-v6time"
BEHAVE_RUN = "20261201-000001-v6behv"
STARTED = "2026-12-01T00:00:00+00:00"


def v6_cells() -> list[Any]:
    from stackwars.results.schema import Cell, Steady

    return [
        Cell(
            "gemm",
            {"n": n},
            stack,
            status="ok",
            steady=Steady(median_s=1e-3 * n / 64, ci95_low_s=9e-4, ci95_high_s=1.1e-3),
            wall_s=2.0,
        )
        for n in (64, 128)
        for stack in ("numpy:eager", "jax:jit")
    ]


def v6_claims() -> list[dict[str, Any]]:
    from stackwars.instruments.claims.verdict import FAILS, HOLDS, ClaimResult

    holds = ClaimResult(
        "jit-beats-numpy",
        "jax:jit >= 1.5x numpy:eager on gemm n=128",
        "steady",
        ">= 1.5x",
        HOLDS,
        1.8,
        1.6,
        2.0,
        "x",
        "the interval is above 1.5",
        "seed 000",
        "JAX is faster",
        "a note <b>with</b> | markup",
        ("gemm n=128 numpy:eager", "gemm n=128 jax:jit"),
        (3, 3),
    )
    fails = dataclasses.replace(holds, id="numpy-beats-jit", verdict=FAILS, value=0.5)
    return [holds.to_dict(), fails.to_dict()]


def v6_profiles() -> list[dict[str, Any]]:
    from stackwars.profiling.categories import CATEGORIES
    from stackwars.profiling.result import Profile

    found = []
    for stack in ("numpy:eager", "jax:jit"):
        profile = Profile(stack, "gemm", {"n": 64}, steady_s=1e-3, profiled_s=1.2e-3, traced_s=1e-3)
        profile.categories = dict.fromkeys(CATEGORIES, 0.0)  # a profile has every one
        profile.categories.update({"matmul/conv": 8e-4, "overhead/idle": 2e-4})
        found.append(profile.to_dict())
    return found


def v6_captures() -> dict[int, dict[str, str]]:
    """Cell index (in :func:`v6_cells`) -> stage -> IR text."""
    return {
        1: {"jaxpr": "{ lambda ; a:f32[64,64]. let b = dot_general a a in (b,) }",
            "stablehlo": "func.func @main(%arg0: tensor<64x64xf32>) { stablehlo.dot_general }"},
        3: {"jaxpr": "{ lambda ; a:f32[128,128]. let b = dot_general a a in (b,) }"},
    }  # fmt: skip


def v6_outcomes() -> list[dict[str, Any]]:
    from stackwars.instruments.behave.data import Outcome

    return [
        dataclasses.asdict(outcome)
        for outcome in (
            Outcome("boolean-mask", "numpy:eager", "works", "", compiles=None),
            Outcome("retrace", "jax:jit", "retraced 3", "new shapes", 3, [[0.1, 1.0], [0.2, 2.0]]),
        )
    ]


def make_store_v6(path: str) -> None:
    """The store committed as tests/data/store-v6.sqlite (store version 6), made through the
    store's own methods with hand-built data, nothing measured."""
    from stackwars.results.run import Run
    from stackwars.results.store import Store

    results: Any = Store(Path(path))  # version 6's methods, gone since
    timing = Run(TIMING_RUN, STARTED, {}, {}, ["stackwars", "claims"], status="running")
    results.begin_run(timing)
    for cell in v6_cells():
        timing.cells.append(cell)
        results.add_cell(timing, cell)
    for claim in v6_claims():
        results.add_claim(timing, claim)
    for profile in v6_profiles():
        results.add_profile(timing, profile)
    for index, stages in v6_captures().items():
        results.add_captures(timing, timing.cells[index], stages)
    timing.status, timing.finished = "complete", STARTED
    results.finish_run(timing)

    behave = Run(BEHAVE_RUN, STARTED, {}, {}, ["stackwars", "behave"], kind="behave")
    results.begin_run(behave)
    for outcome in v6_outcomes():
        results.add_outcome(behave, outcome)
    behave.status, behave.finished = "complete", STARTED
    results.finish_run(behave)


def _copy(tmp_path: Path, source: Path) -> Path:
    path = tmp_path / source.name
    shutil.copyfile(source, path)
    return path


def test_a_version_6_store_reads_back_everything_it_holds(tmp_path: Path) -> None:
    from stackwars.results.store import Store, key_text

    results = Store(_copy(tmp_path, V6))
    timing = results.load_run(TIMING_RUN)
    assert [cell.to_dict() for cell in timing.cells] == [cell.to_dict() for cell in v6_cells()]
    assert timing.claims == v6_claims()
    assert timing.profiles == v6_profiles()
    cells = v6_cells()
    assert results.captures(TIMING_RUN) == {
        key_text(cells[index].key()): stages for index, stages in v6_captures().items()
    }
    behave = results.load_run(BEHAVE_RUN)
    assert behave.kind == "behave" and behave.outcomes == v6_outcomes()


def test_opening_a_version_6_store_moves_its_tables_into_instrument_data(tmp_path: Path) -> None:
    import sqlite3

    from stackwars.results.store import STORE_VERSION, Store

    path = _copy(tmp_path, V6)
    results = Store(path)
    with sqlite3.connect(path) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        (version,) = db.execute("SELECT value FROM meta WHERE key = 'store_version'").fetchone()
    assert int(version) == STORE_VERSION == 7
    assert not tables & {"captures", "outcomes", "claims", "profiles"}
    assert [entry.payload for entry in results.data_of(TIMING_RUN, "claims")] == v6_claims()
    assert {entry.format_version for entry in results.data_of(TIMING_RUN, "profile")} == {1}
    counts = {header["id"]: counted for header, counted in results.summaries()}
    assert counts[BEHAVE_RUN] == {"works": 1, "retraced": 1}
    assert counts[TIMING_RUN] == {"ok": 4}
