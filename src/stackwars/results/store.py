"""The results store: a SQLite file where every run and cell lands the moment it ends.

Location: ``--db PATH``, else the ``STACKWARS_DB`` environment variable, else
``stackwars.sqlite`` in the working directory. Each cell is stored as its full JSON (the
schema in ``schema.py``) next to a few indexed columns for listing and lookup.

History of STORE_VERSION (the layout of the tables, apart from the JSON they hold):

* 1 (2026-11-22): tables meta, runs, cells.
* 2 (2026-11-22): cells.cell_key (workload, parameters, stack, device, to-host), so that
  ``--resume`` finds finished cells without parsing every cell's JSON; filled in from the
  stored JSON when a version-1 store is opened.
* 3 (2026-11-22): table captures, the compiler IR of a run's cells (``run --capture-ir``).
* 4 (2026-11-23): table outcomes, what each probe did on each stack in a ``stackwars behave``
  run (a run of kind ``behave``: it has outcomes, no cells).
* 5 (2026-11-24): table claims, each claim a ``stackwars claims`` run checked: its statement,
  value, interval and verdict (``instruments/claims/verdict.py``, ``ClaimResult``), stored
  after the cells.
* 6 (2026-11-25): table profiles, each a cell of the run profiled after its timed cells
  (``run --profile``: ``profiling.result.Profile``), stored as each profile worker ends.
* 7 (2026-11-28): table instrument_data, what every instrument keeps with a run, one row an
  entry: the run, the instrument (its folder's name), the entry's place, the version of the
  instrument's own format and its payload (JSON in that format), with an optional key (an entry
  stored again under its key replaces the earlier one) and tally (what ``stackwars runs``
  counts it as). The tables captures, outcomes, claims and profiles of versions 3-6 moved into
  it (instruments ``ir``, ``behave``, ``claims``, ``profile``, each payload as that table's
  JSON, format 1; a capture as its cell key, stage and text) and were dropped.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stackwars.errors import StoreError, UsageError
from stackwars.results.jsonio import dump
from stackwars.results.run import Kept, Run
from stackwars.results.schema import Cell, CellKey

STORE_VERSION = 7
DEFAULT_DB = "stackwars.sqlite"
SQLITE_HEADER = b"SQLite format 3\x00"

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, started TEXT NOT NULL, finished TEXT, status TEXT NOT NULL,
    header TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cells (
    run_id TEXT NOT NULL REFERENCES runs(id), seq INTEGER NOT NULL,
    workload TEXT NOT NULL, params TEXT NOT NULL, stack TEXT NOT NULL, device TEXT NOT NULL,
    to_host INTEGER NOT NULL, status TEXT NOT NULL, median_s REAL, data TEXT NOT NULL,
    cell_key TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX IF NOT EXISTS cells_by_workload ON cells (workload, stack);
CREATE TABLE IF NOT EXISTS instrument_data (
    run_id TEXT NOT NULL REFERENCES runs(id), instrument TEXT NOT NULL, seq INTEGER NOT NULL,
    format_version INTEGER NOT NULL, key TEXT, tally TEXT, payload TEXT NOT NULL,
    PRIMARY KEY (run_id, instrument, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS instrument_data_by_key
    ON instrument_data (run_id, instrument, key);
"""


_INSTRUMENT_DATA = _TABLES[_TABLES.index("CREATE TABLE IF NOT EXISTS instrument_data") :].strip()
_INSTRUMENT_DATA = _INSTRUMENT_DATA.rstrip(";")
# The IR of a run's cells (``run --capture-ir``): the capture is the core's (``ir/``,
# ``runner/ir_task.py``), kept through the seam under this instrument's name.
CAPTURES = "ir"
CAPTURES_FORMAT = 1  # {"cell_key": key_text(cell key), "stage": ..., "text": ...}


def key_text(key: CellKey) -> str:
    return json.dumps(key)


def capture_key(cell_key: str, stage: str) -> str:
    """A capture's key in instrument_data: a cell's stage captured again replaces it."""
    return json.dumps([cell_key, stage])


@dataclass(frozen=True)
class Entry:
    """One entry an instrument keeps with a run: its payload in the instrument's format of
    version ``format_version``."""

    format_version: int
    payload: dict[str, Any]


def _migrate_1_to_2(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE cells ADD COLUMN cell_key TEXT NOT NULL DEFAULT ''")
    rows = db.execute("SELECT run_id, seq, data FROM cells").fetchall()
    for run_id, seq, data in rows:
        key = key_text(Cell.from_dict(json.loads(data)).key())
        db.execute("UPDATE cells SET cell_key = ? WHERE run_id = ? AND seq = ?", (key, run_id, seq))


def _migrate_2_to_3(db: sqlite3.Connection) -> None:
    db.execute(
        "CREATE TABLE captures (run_id TEXT NOT NULL REFERENCES runs(id), cell_key TEXT NOT "
        "NULL, stage TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY (run_id, cell_key, stage))"
    )


def _migrate_3_to_4(db: sqlite3.Connection) -> None:
    db.execute(
        "CREATE TABLE outcomes (run_id TEXT NOT NULL REFERENCES runs(id), seq INTEGER NOT NULL, "
        "probe TEXT NOT NULL, stack TEXT NOT NULL, outcome TEXT NOT NULL, data TEXT NOT NULL, "
        "PRIMARY KEY (run_id, seq))"
    )


def _migrate_4_to_5(db: sqlite3.Connection) -> None:
    db.execute(
        "CREATE TABLE claims (run_id TEXT NOT NULL REFERENCES runs(id), seq INTEGER NOT NULL, "
        "claim_id TEXT NOT NULL, verdict TEXT NOT NULL, data TEXT NOT NULL, "
        "PRIMARY KEY (run_id, seq))"
    )


def _migrate_5_to_6(db: sqlite3.Connection) -> None:
    db.execute(
        "CREATE TABLE profiles (run_id TEXT NOT NULL REFERENCES runs(id), seq INTEGER NOT "
        "NULL, stack TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, seq))"
    )


def _migrate_6_to_7(db: sqlite3.Connection) -> None:
    for statement in _INSTRUMENT_DATA.split(";"):
        db.execute(statement)
    moved: dict[tuple[str, str], int] = {}

    def add(run_id: str, instrument: str, payload: str, key: str | None, tally: str | None) -> None:
        seq = moved.get((run_id, instrument), 0)
        moved[(run_id, instrument)] = seq + 1
        db.execute(
            "INSERT INTO instrument_data VALUES (?, ?, ?, 1, ?, ?, ?)",
            (run_id, instrument, seq, key, tally, payload),
        )

    for run_id, key, stage, text in db.execute(
        "SELECT run_id, cell_key, stage, text FROM captures ORDER BY run_id, cell_key, stage"
    ).fetchall():
        payload = dump({"cell_key": key, "stage": stage, "text": text})
        add(run_id, CAPTURES, payload, capture_key(key, stage), None)
    for run_id, outcome, data in db.execute(
        "SELECT run_id, outcome, data FROM outcomes ORDER BY run_id, seq"
    ).fetchall():
        add(run_id, "behave", data, None, outcome.rstrip("0123456789 "))
    for run_id, data in db.execute("SELECT run_id, data FROM claims ORDER BY run_id, seq"):
        add(run_id, "claims", data, None, None)
    for run_id, data in db.execute("SELECT run_id, data FROM profiles ORDER BY run_id, seq"):
        add(run_id, "profile", data, None, None)
    for table in ("captures", "outcomes", "claims", "profiles"):
        db.execute(f"DROP TABLE {table}")


# Version n -> n + 1, applied in order to an older store when it is opened.
_MIGRATIONS = {
    1: _migrate_1_to_2,
    2: _migrate_2_to_3,
    3: _migrate_3_to_4,
    4: _migrate_4_to_5,
    5: _migrate_5_to_6,
    6: _migrate_6_to_7,
}


def default_path(explicit: str | None = None) -> Path:
    return Path(explicit or os.environ.get("STACKWARS_DB") or DEFAULT_DB)


class Store:
    """Runs and cells in one SQLite file; each write is its own committed transaction."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with self._connect() as db:
            self._check_version(db)

    @classmethod
    def existing(cls, path: Path) -> Store:
        """A store that must already exist (for commands that only read)."""
        if not path.is_file():
            raise UsageError(
                f"no results store at {path}; run 'stackwars run' first, or point --db "
                "(or STACKWARS_DB) at an existing store"
            )
        return cls(path)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        self._refuse_foreign_file()
        db = sqlite3.connect(self.path, timeout=30)
        try:
            with db:
                yield db
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise self._unreadable(exc) from None
            raise StoreError(
                f"results store {self.path} is locked by another process ({exc}); wait for "
                "it, or use another --db"
            ) from None
        except sqlite3.DatabaseError as exc:
            raise self._unreadable(exc) from None
        finally:
            db.close()

    def _refuse_foreign_file(self) -> None:
        """Never let SQLite write into a file that is not a database: refuse it untouched."""
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return
        with self.path.open("rb") as file:
            if file.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
                raise self._unreadable("it is not an SQLite database")

    def _unreadable(self, why: object) -> StoreError:
        return StoreError(
            f"results store {self.path} cannot be read ({why}); it was left untouched: move "
            "it aside (or restore it from a copy) and run again, or point --db / STACKWARS_DB "
            "at another file"
        )

    def _check_version(self, db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        row = db.execute("SELECT value FROM meta WHERE key = 'store_version'").fetchone()
        if row is None:
            db.executescript(_TABLES)
            db.execute("INSERT INTO meta VALUES ('store_version', ?)", (str(STORE_VERSION),))
            return
        version = int(row[0])
        if version > STORE_VERSION:
            raise UsageError(
                f"results store {self.path} was written by a newer stackwars (store version "
                f"{version}, this one reads up to {STORE_VERSION}); upgrade stackwars or use "
                "another --db"
            )
        for step in range(version, STORE_VERSION):
            _MIGRATIONS[step](db)
        db.execute("UPDATE meta SET value = ? WHERE key = 'store_version'", (str(STORE_VERSION),))

    def begin_run(self, run: Run) -> None:
        # Runs started in the same second are ordered by when they were stored (rowid).
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?)",
                (run.id, run.started, run.finished, run.status, dump(run.header())),
            )

    def add_cell(self, run: Run, cell: Cell) -> None:
        with self._connect() as db:
            # After the last, not the count: --resume forgets cells lost with their node.
            seq = db.execute(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM cells WHERE run_id = ?", (run.id,)
            ).fetchone()
            db.execute(
                "INSERT INTO cells VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.id,
                    seq[0],
                    cell.workload,
                    json.dumps(cell.params, sort_keys=True),
                    cell.stack,
                    cell.device,
                    int(cell.to_host),
                    cell.status,
                    cell.steady.median_s,
                    dump(cell.to_dict()),
                    key_text(cell.key()),
                ),
            )

    def forget_cells(self, run: Run, cells: Sequence[Cell]) -> None:
        """Remove ``cells`` of ``run`` (those lost with their Ray node: --resume measures them
        again), matched by key and repeat."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT seq, cell_key, data FROM cells WHERE run_id = ?", (run.id,)
            ).fetchall()
            gone = {(key_text(cell.key()), cell.repeat) for cell in cells}
            for seq, key, data in rows:
                if (key, json.loads(data).get("repeat", 0)) in gone:
                    db.execute("DELETE FROM cells WHERE run_id = ? AND seq = ?", (run.id, seq))

    def update_cell(self, run: Run, cell: Cell) -> None:
        """Store ``cell`` again in place of the run's first cell of its key (an annotation
        added after it ended, e.g. ``settings.second_look``; one worker a key)."""
        with self._connect() as db:
            db.execute(
                "UPDATE cells SET data = ? WHERE run_id = ? AND seq = (SELECT MIN(seq) FROM "
                "cells WHERE run_id = ? AND cell_key = ?)",
                (dump(cell.to_dict()), run.id, run.id, key_text(cell.key())),
            )

    def add_data(
        self,
        run: Run,
        instrument: str,
        format_version: int,
        payload: dict[str, Any],
        *,
        key: str | None = None,
        tally: str | None = None,
    ) -> None:
        """One entry ``instrument`` keeps with ``run`` (the seam every instrument stores
        through): ``payload`` in the instrument's own format of version ``format_version``,
        stored after the instrument's earlier entries of the run; under ``key`` it replaces
        the entry of that key; ``tally``: what ``stackwars runs`` counts it as (none: not
        counted)."""
        with self._connect() as db:
            if key is not None:
                db.execute(
                    "DELETE FROM instrument_data WHERE run_id = ? AND instrument = ? AND key = ?",
                    (run.id, instrument, key),
                )
            seq = db.execute(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM instrument_data WHERE run_id = ? AND "
                "instrument = ?",
                (run.id, instrument),
            ).fetchone()
            db.execute(
                "INSERT INTO instrument_data VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run.id, instrument, seq[0], format_version, key, tally, dump(payload)),
            )

    def data_of(self, run_id: str, instrument: str) -> list[Entry]:
        """What ``instrument`` kept with a run (an id or ``latest``), in the order stored."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT format_version, payload FROM instrument_data WHERE run_id = ? AND "
                "instrument = ? ORDER BY seq",
                (self.resolve(run_id), instrument),
            ).fetchall()
        return [Entry(version, json.loads(payload)) for version, payload in rows]

    def finish_run(self, run: Run) -> None:
        with self._connect() as db:
            db.execute(
                "UPDATE runs SET finished = ?, status = ?, header = ? WHERE id = ?",
                (run.finished, run.status, dump(run.header()), run.id),
            )

    def run_ids(self) -> list[str]:
        with self._connect() as db:
            return [row[0] for row in db.execute("SELECT id FROM runs ORDER BY started, rowid")]

    def resolve(self, run_id: str) -> str:
        """A run id as given, or the newest run for ``latest``."""
        if run_id != "latest":
            return run_id
        ids = self.run_ids()
        if not ids:
            raise UsageError(f"no runs in {self.path} yet; start one with 'stackwars run'")
        return ids[-1]

    def summaries(self) -> list[tuple[dict[str, Any], dict[str, int]]]:
        """Per run, oldest first: its header, and its count of cells by status (of outcomes
        by kind, for a behave run)."""
        with self._connect() as db:
            runs = db.execute("SELECT id, header FROM runs ORDER BY started, rowid").fetchall()
            counts = db.execute(
                "SELECT run_id, status, COUNT(*) FROM cells GROUP BY run_id, status"
            ).fetchall()
            # What instruments keep counts by its tally (a behave run's outcomes by kind).
            counts += db.execute(
                "SELECT run_id, tally, COUNT(*) FROM instrument_data WHERE tally IS NOT NULL "
                "GROUP BY run_id, tally"
            ).fetchall()
        by_run: dict[str, dict[str, int]] = {}
        for run_id, status, count in counts:
            run_counts = by_run.setdefault(run_id, {})
            run_counts[status] = run_counts.get(status, 0) + count
        return [(json.loads(header), by_run.get(run_id, {})) for run_id, header in runs]

    def cells_of(self, workload: str, stack: str) -> list[tuple[str, str, Cell]]:
        """(run id, run start, cell) for every stored cell of a workload on a stack, oldest
        run first."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT runs.id, runs.started, cells.data FROM cells JOIN runs "
                "ON runs.id = cells.run_id WHERE cells.workload = ? AND cells.stack = ? "
                "ORDER BY runs.started, runs.rowid, cells.seq",
                (workload, stack),
            ).fetchall()
        return [
            (run_id, started, Cell.from_dict(json.loads(data))) for run_id, started, data in rows
        ]

    def identities(self) -> dict[str, dict[str, Any]]:
        """Every run's identity (label, hostname, machine fingerprint, git state); empty for
        runs stored before runs recorded one."""
        with self._connect() as db:
            rows = db.execute("SELECT id, header FROM runs").fetchall()
        return {run_id: json.loads(header).get("identity", {}) for run_id, header in rows}

    def captures(self, run_id: str) -> dict[str, dict[str, str]]:
        """Stored IR of a run: cell key (as JSON text) -> stage -> text."""
        found: dict[str, dict[str, str]] = {}
        for entry in sorted(self.data_of(run_id, CAPTURES), key=lambda e: e.payload["cell_key"]):
            capture = entry.payload
            found.setdefault(capture["cell_key"], {})[capture["stage"]] = capture["text"]
        return found

    def finished_keys(self, run_id: str) -> set[str]:
        with self._connect() as db:
            rows = db.execute("SELECT cell_key FROM cells WHERE run_id = ?", (run_id,))
            return {row[0] for row in rows}

    def load_run(self, run_id: str) -> Run:
        run_id = self.resolve(run_id)
        with self._connect() as db:
            row = db.execute("SELECT header FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise UsageError(f"no run {run_id!r} in {self.path}; see 'stackwars runs'")
            cells = db.execute(
                "SELECT data FROM cells WHERE run_id = ? ORDER BY seq", (run_id,)
            ).fetchall()
            kept = db.execute(
                "SELECT instrument, format_version, payload FROM instrument_data WHERE "
                "run_id = ? ORDER BY instrument, seq",
                (run_id,),
            ).fetchall()
        record = Run.from_dict(
            {"run": json.loads(row[0]), "cells": [json.loads(c[0]) for c in cells]}
        )
        for instrument, version, payload in kept:
            record.kept.setdefault(instrument, Kept(version)).entries.append(json.loads(payload))
        return record
