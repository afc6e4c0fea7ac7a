"""``run --find-max-batch`` as the service layer answers it: the selected cells, the options
that hold the budgets, and each cell's largest batch predicted to fit (``predict.py``);
nothing runs."""

from __future__ import annotations

from stackwars.config import RunOptions
from stackwars.instruments.maxbatch import predict
from stackwars.instruments.maxbatch.data import MaxBatch
from stackwars.runner.plan import DeviceBudget
from stackwars.service.choices import Measure, Selection, choose_cells, run_options


def max_batches(selection: Selection, measure: Measure) -> tuple[list[MaxBatch], RunOptions]:
    """For each selected cell with a batch parameter, the largest batch predicted to fit the
    memory budgets (host, and device on an accelerator), and the options holding them
    (nothing runs)."""
    chosen, suite = choose_cells(selection)
    options = run_options(measure, selection.device, suite, selection.workload_files)
    answers = predict.max_batches(chosen, options.memory_budget, DeviceBudget.of(options))
    return answers, options
