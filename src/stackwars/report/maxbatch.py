"""``run --find-max-batch`` as a table."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from stackwars.results.maxbatch import MaxBatch

GIB = 2**30


def max_batch_table(answers: Sequence[MaxBatch], budget: int) -> Table:
    table = Table(title=f"Largest batch predicted to fit {budget / GIB:.2f} GiB")
    for column in ("workload", "params", "stack", "max batch", "predicted peak at it"):
        table.add_column(column)
    for answer in answers:
        params = ",".join(f"{k}={v}" for k, v in answer.params.items() if k != "batch")
        if answer.batch is None:
            table.add_row(answer.workload, params, answer.stack, "unsupported", "-")
            continue
        best = str(answer.batch) if answer.batch else "none fits"
        peak = f"{answer.predicted_bytes / GIB:.2f} GiB" if answer.predicted_bytes else "-"
        table.add_row(answer.workload, params, answer.stack, best, peak)
    return table
