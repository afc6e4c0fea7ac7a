"""``run --find-max-batch`` as a table."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from stackwars.instruments.maxbatch.data import MAX_BATCH, MaxBatch

GIB = 2**30


def _gib(count: int | None) -> str:
    return f"{count / GIB:.2f} GiB" if count else "-"


def max_batch_table(
    answers: Sequence[MaxBatch], budget: int, device: str = "cpu", device_budget: int | None = None
) -> Table:
    """One row per cell; on an accelerator, the device's budget and predicted peak too (the
    device's budget "unknown" when no size was given or found)."""
    on_device = not device.startswith("cpu")
    title = f"Largest batch predicted to fit {budget / GIB:.2f} GiB"
    if on_device:
        known = _gib(device_budget) if device_budget else "an unknown size (not checked)"
        title += f" of host memory and {known} on {device}"
    table = Table(title=title)
    columns = ["workload", "params", "stack", "max batch", "predicted peak at it"]
    for column in [*columns, "predicted device peak at it"] if on_device else columns:
        table.add_column(column)
    for answer in answers:
        params = ",".join(f"{k}={v}" for k, v in answer.params.items() if k != "batch")
        if answer.batch is None:
            cells = ["unsupported", "-", "-"]
        else:
            cells = [_batch(answer.batch), _gib(answer.predicted_bytes)]
            device_peak = _gib(answer.predicted_device_bytes)
            cells.append(
                f"{device_peak} ({answer.device_limit})" if answer.device_limit else device_peak
            )
        table.add_row(answer.workload, params, answer.stack, *cells[: 3 if on_device else 2])
    return table


def _batch(batch: int) -> str:
    if batch == 0:
        return "none fits"
    # The search stops doubling at MAX_BATCH: a batch there was bounded by nothing, which on
    # an accelerator of unknown size is no answer at all.
    return f"{batch} or more (no limit found)" if batch >= MAX_BATCH else str(batch)
