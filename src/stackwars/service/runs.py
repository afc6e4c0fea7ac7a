"""Stored runs as the service layer reads them: the results store, a run by id or from its
exported JSON file, and a run file imported into a store. Re-exported by ``api.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

from stackwars.errors import UsageError
from stackwars.results import store
from stackwars.results.run import Run, tally
from stackwars.results.schema import SCHEMA_VERSION


def open_store(db: str | None = None, must_exist: bool = False) -> store.Store:
    """The results store at ``db``, else ``$STACKWARS_DB``, else ``./stackwars.sqlite``."""
    path = store.default_path(db)
    return store.Store.existing(path) if must_exist else store.Store(path)


def load_run(run: str, db: str | None = None) -> Run:
    """A stored run (an id or ``latest``), or a run exported as JSON (``export --format json``,
    ``run --json``): a path to an existing ``.json`` file, from any machine or store."""
    path = Path(run)
    if path.suffix == ".json" and path.is_file():
        return read_run_file(path)
    return open_store(db, must_exist=True).load_run(run)


def read_run_file(path: Path) -> Run:
    """A run from its JSON export; one line saying what is wrong when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        version = data["schema_version"]
        if version > SCHEMA_VERSION:
            raise UsageError(
                f"{path} is a result file of schema version {version}; this stackwars reads up "
                f"to {SCHEMA_VERSION} (upgrade stackwars)"
            )
        return Run.from_dict(data)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(
            f"{path} is not a stackwars run file ({type(exc).__name__}: {exc}); write one with "
            "'stackwars export RUN --format json' or 'stackwars run --json PATH'"
        ) from None


def import_run(path: Path, db: str | None = None) -> Run:
    """Add an exported run to a store (e.g. a baseline downloaded as a CI artefact)."""
    record = read_run_file(path)
    results = open_store(db)
    if record.id in results.run_ids():
        raise UsageError(f"run {record.id} is already in {results.path}; nothing imported")
    results.begin_run(record)
    for cell in record.cells:
        results.add_cell(record, cell)
    for instrument, kept in record.kept.items():
        for payload in kept.entries:
            counted = tally(payload) if record.kind == instrument else None
            results.add_data(record, instrument, kept.format_version, payload, tally=counted)
    results.finish_run(record)
    return record
