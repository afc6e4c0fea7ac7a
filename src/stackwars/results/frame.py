"""The Python API for stored results: one pandas DataFrame row per cell."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stackwars.results import flat, store

if TYPE_CHECKING:
    import pandas


def results_frame(run: str | None = "latest", db: str | None = None) -> pandas.DataFrame:
    """Cells of one run (an id, or ``latest``), or of every run when ``run`` is None.

    Columns are dotted field names of the result schema (``steady.median_s``,
    ``parity.max_rel_err``, ``params.n``...); raw samples are JSON text. The store is
    ``db``, else ``$STACKWARS_DB``, else ``./stackwars.sqlite``.
    """
    import pandas

    results = store.Store.existing(store.default_path(db))
    ids = results.run_ids() if run is None else [results.resolve(run)]
    rows = flat.rows(results.load_run(run_id) for run_id in ids)
    return pandas.DataFrame(rows, columns=flat.columns(rows))
