"""Result tables and progress lines, from cells built by hand."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from stackwars.report.progress import Progress
from stackwars.report.table import (
    COLUMNS,
    TERMINAL_REASON_CHARS,
    UNSTABLE_NOTE,
    Table,
    build_tables,
    format_bytes,
    format_seconds,
    render_markdown,
    render_rich,
)
from stackwars.results.schema import Cell, Memory, Parity, Steady, Times

X = "\N{MULTIPLICATION SIGN}"  # by name: ruff flags the glyph as ambiguous
LONG_REASON = "worker exceeded the memory budget of 4 GiB | " + "x" * 100 + " END"


def make_cell(
    stack: str,
    *,
    median: float = 1e-3,
    status: str = "ok",
    reason: str = "",
    params: dict[str, Any] | None = None,
    workload: str = "gemm",
    to_host: bool = False,
    stable: bool = True,
    parity: Parity | None = None,
    warnings: list[str] | None = None,
) -> Cell:
    """A cell as a worker ends it: timed when ok or a mismatch (parity comes after timing),
    untimed when it failed before."""
    steady = Steady(
        median_s=median, ci95_low_s=median * 0.99, ci95_high_s=median * 1.01, stable=stable
    )
    return Cell(
        workload=workload,
        params={"n": 100} if params is None else params,
        stack=stack,
        to_host=to_host,
        status=status,
        reason=reason,
        times=Times(first_run_s=0.041243, second_run_s=0.000451),
        runs_to_steady=2,
        steady=steady if status in ("ok", "mismatch") else Steady(),
        memory=Memory(peak_rss_bytes=300 * 2**20),
        parity=Parity(ok=True) if parity is None else parity,
        gflops=12.345,
        warnings=warnings or [],
    )


def column(table: Table, name: str, reason_chars: int | None = None) -> list[str]:
    index = COLUMNS.index(name)
    return [row.texts(reason_chars)[index] for row in table.rows]


def test_tables_group_by_workload_params_device_in_first_seen_order() -> None:
    cells = [
        make_cell("numpy:eager", params={"n": 200}),
        make_cell("numpy:eager", workload="selu"),
        make_cell("jax:jit", params={"n": 200}),
        make_cell("numpy:eager"),
    ]
    cells[3].device = "gpu"
    tables = build_tables(cells)
    titles = [table.title for table in tables]
    assert titles == ["gemm(n=200) @ cpu", "selu(n=100) @ cpu", "gemm(n=100) @ gpu"]
    assert column(tables[0], "Stack") == ["numpy:eager", "jax:jit"]


def test_rows_keep_cell_order_and_to_host_is_its_own_row() -> None:
    cells = [
        make_cell("torch:eager"),
        make_cell("jax:jit"),
        make_cell("jax:jit", to_host=True),
        make_cell("numpy:eager"),
    ]
    (table,) = build_tables(cells)
    assert column(table, "Stack") == ["torch:eager", "jax:jit", "jax:jit →host", "numpy:eager"]


def test_a_rerun_cell_replaces_the_earlier_one_in_place() -> None:
    cells = [make_cell("numpy:eager", median=2e-3), make_cell("jax:jit"), make_cell("numpy:eager")]
    (table,) = build_tables(cells)
    assert column(table, "Stack") == ["numpy:eager", "jax:jit"]
    assert column(table, "Steady median")[0].startswith("1.00 ms")


def test_speed_up_is_baseline_median_over_row_median() -> None:
    cells = [
        make_cell("numpy:eager", median=2e-3),
        make_cell("jax:jit", median=1e-3),
        make_cell("torch:eager", median=8e-3),
        make_cell("torch:compile", median=1.6e-4),
    ]
    (table,) = build_tables(cells)
    assert column(table, "Speed-up") == [f"1.00{X}", f"2.00{X}", f"0.25{X}", f"12.5{X}"]
    assert any("numpy:eager" in note for note in table.notes)


def test_speed_up_baseline_is_the_first_ok_row_and_failures_have_none() -> None:
    mismatch = Parity(ok=False, max_rel_err=0.031)
    cells = [
        make_cell("torch:compile", status="oom", reason="killed at 4 GiB"),
        make_cell("jax:jit", median=4e-3),
        make_cell("tensorflow:xla", median=1e-3, status="mismatch", parity=mismatch),
        make_cell("numpy:eager", median=1e-3),
    ]
    (table,) = build_tables(cells)
    assert column(table, "Speed-up") == ["", f"1.00{X}", "", f"4.00{X}"]


def test_a_lone_ok_row_gets_no_speed_up_note() -> None:
    (table,) = build_tables([make_cell("numpy:eager"), make_cell("jax:jit", status="timeout")])
    assert not any(note.startswith("speed-up") for note in table.notes)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.000123, "123 µs"),
        (0.041243, "41.2 ms"),
        (1.5, "1.50 s"),
        (7328.458, "7328 s"),
        (5e-8, "50.0 ns"),
        (0.0009996, "1.00 ms"),
        (0.000999, "999 µs"),
        (0.0, "0.00 ns"),
        (None, ""),
    ],
)
def test_format_seconds_picks_units_with_three_significant_digits(
    seconds: float | None, text: str
) -> None:
    assert format_seconds(seconds) == text


@pytest.mark.parametrize(
    ("count", "text"),
    [
        (512, "512 B"),
        (300 * 2**20, "300 MiB"),
        (3 * 2**29, "1.50 GiB"),
        (1023 * 2**10, "1.00 MiB"),
        (None, ""),
    ],
)
def test_format_bytes_uses_binary_units(count: int | None, text: str) -> None:
    assert format_bytes(count) == text


def test_ok_row_shows_every_number() -> None:
    (table,) = build_tables([make_cell("jax:jit", median=0.00123)])
    assert table.rows[0].texts() == (
        "jax:jit",
        "41.2 ms",
        "451 µs",
        "2",
        "1.23 ms ± 1.0%",
        "",  # Call+sync: only asynchronous stacks measure it
        "12.3",
        "",  # Roofline: no peak measured
        "300 MiB",
        "ok",
        f"1.00{X}",
    )


def test_latency_is_shown_with_its_note() -> None:
    cell = make_cell("jax:jit", median=0.00123)
    cell.times.latency_s = 0.0025
    (table,) = build_tables([cell])
    assert table.rows[0].texts()[5] == "2.50 ms"
    assert any(note.startswith("Call+sync") for note in table.notes)


def test_failed_rows_show_status_and_reason_instead_of_numbers() -> None:
    cells = [
        make_cell("numpy:eager"),
        make_cell("torch:compile", status="oom", reason=LONG_REASON, parity=Parity()),
        make_cell("tensorflow:xla", status="unsupported", reason="no TPU", parity=Parity()),
    ]
    (table,) = build_tables(cells)
    oom, unsupported = table.rows[1], table.rows[2]
    terminal = oom.texts(TERMINAL_REASON_CHARS)
    assert terminal[1].startswith("OOM: worker exceeded")
    assert len(terminal[1]) <= len("OOM: ") + TERMINAL_REASON_CHARS
    assert terminal[1].endswith("…")
    assert oom.texts()[1].endswith("END")
    assert set(terminal[2:]) == {""}
    assert unsupported.texts()[1:3] == ("UNSUPPORTED: no TPU", "")


def test_parity_column_shows_mismatch_and_computed_dtype() -> None:
    cells = [
        make_cell("numpy:eager"),
        make_cell(
            "jax:jit", parity=Parity(ok=True, computed_dtype="float32", requested_dtype="float64")
        ),
        make_cell(
            "tensorflow:xla",
            status="mismatch",
            reason="max relative error above rtol",
            parity=Parity(ok=False, max_rel_err=0.031),
        ),
    ]
    (table,) = build_tables(cells)
    assert column(table, "Parity") == ["ok", "ok (f32≠f64)", "MISMATCH max rel 3e-2"]


def test_a_timed_cell_that_is_not_ok_shows_its_time_status_and_reason_in_every_table() -> None:
    """A mismatch was timed before its parity check: its numbers are shown with its status
    beside the stack and its reason as a note, with no speed-up; an untimed failure says why
    in one line, without the details after its reason's blank line."""
    reason = "output 0: 3 of 8 elements beyond the tolerance; --rtol 4.4e-09 would accept it"
    error = "ValueError: bad shape\nfix: reshape it\n\nTraceback (most recent call last):\n  x"
    cells = [
        make_cell("numpy:eager"),
        make_cell("torch:eager", median=7.6e-3, status="mismatch", reason=reason,
                  parity=Parity(ok=False, max_rel_err=4e-9)),
        make_cell("torch:compile", status="error", reason=error, parity=Parity()),
    ]  # fmt: skip
    (table,) = build_tables(cells)
    assert column(table, "Stack")[1] == "torch:eager MISMATCH"
    assert column(table, "Steady median")[1].startswith("7.60 ms")
    assert column(table, "First run")[1] == "41.2 ms"
    assert column(table, "Speed-up")[1] == ""
    assert f"torch:eager MISMATCH: {reason}" in table.notes
    assert column(table, "First run")[2] == "ERROR: ValueError: bad shape fix: reshape it"
    markdown = render_markdown([table])
    assert "| torch:eager MISMATCH | 41.2 ms |" in markdown and "Traceback" not in markdown
    terminal = io.StringIO()
    Console(file=terminal, width=400).print(render_rich([table]))
    assert "7.60 ms" in terminal.getvalue() and "4.4e-09" in terminal.getvalue()


def test_unstable_rows_are_marked_and_explained() -> None:
    (table,) = build_tables([make_cell("numpy:eager"), make_cell("jax:jit", stable=False)])
    assert column(table, "Steady median") == ["1.00 ms ± 1.0%", "~1.00 ms ± 1.0%"]
    assert UNSTABLE_NOTE in table.notes


def test_warnings_become_notes_under_the_table() -> None:
    cell = make_cell("jax:jit", to_host=True, warnings=["2 compilations during steady state"])
    (table,) = build_tables([cell])
    assert "jax:jit →host: 2 compilations during steady state" in table.notes


def test_markdown_has_a_heading_per_table_and_every_stack() -> None:
    cells = [
        make_cell("numpy:eager"),
        make_cell("jax:jit", stable=False),
        make_cell("torch:compile", status="oom", reason=LONG_REASON),
        make_cell("numpy:eager", workload="selu"),
    ]
    markdown = render_markdown(build_tables(cells))
    assert "### gemm(n=100) @ cpu" in markdown
    assert "### selu(n=100) @ cpu" in markdown
    for stack in ("numpy:eager", "jax:jit", "torch:compile"):
        assert f"| {stack} |" in markdown
    assert "4 GiB \\| " in markdown  # a pipe in a reason must not split the cell
    assert "END" in markdown  # the reason is not shortened
    assert "| \\~1.00 ms ± 1.0% |" in markdown  # a bare "~" pair would strike text through
    assert "- \\~ not stable: CI target not reached" in markdown


def test_rich_rendering_contains_titles_stacks_and_notes() -> None:
    cells = [
        make_cell("numpy:eager"),
        make_cell("jax:jit", to_host=True, warnings=["retraced"]),
        make_cell("torch:compile", status="timeout", reason="no result after 600 s"),
    ]
    console = Console(file=io.StringIO(), width=200, record=True)
    console.print(render_rich(build_tables(cells)))
    text = console.export_text()
    for expected in ("gemm(n=100) @ cpu", "jax:jit →host", "TIMEOUT: no result after 600 s"):
        assert expected in text
    assert "jax:jit →host: retraced" in text


def test_progress_prints_one_plain_line_per_cell_when_not_a_terminal() -> None:
    output = io.StringIO()
    console = Console(file=output, force_terminal=False, width=40)
    cells = [make_cell("jax:jit"), make_cell("torch:compile", status="oom", reason="killed")]
    with Progress(len(cells), console=console) as progress:
        for cell in cells:
            progress.start_cell(cell.label())
            progress.end_cell(cell)
    lines = output.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("[1/2] ok")
    assert "gemm(n=100) on jax:jit @ cpu" in lines[0]
    assert "1.00 ms ± 1.0%" in lines[0]
    assert lines[1].startswith("[2/2] oom") and lines[1].endswith("killed")
    assert "\x1b" not in output.getvalue()


def test_progress_draws_a_bar_on_a_terminal() -> None:
    output = io.StringIO()
    console = Console(file=output, force_terminal=True, width=120)
    with Progress(1, console=console) as progress:
        progress.start_cell("gemm(n=100) on jax:jit @ cpu")
        progress.end_cell(make_cell("jax:jit"))
    assert "cell 1/1" in output.getvalue()
    assert "[1/1]" in output.getvalue()


def test_quiet_progress_prints_nothing() -> None:
    output = io.StringIO()
    console = Console(file=output, force_terminal=True)
    with Progress(1, console=console, quiet=True) as progress:
        progress.start_cell("gemm(n=100) on jax:jit @ cpu")
        progress.end_cell(make_cell("jax:jit"))
    assert output.getvalue() == ""


def test_show_details_lists_the_signals_the_tables_leave_out() -> None:
    from stackwars.report.signals import signal_rows

    cell = make_cell("jax:jit")
    cell.times.import_s, cell.times.dispatch_s = 0.8, 2e-6
    cell.first_run_breakdown = {"trace_s": 0.01, "compile_s": 0.2}
    cell.cpu.page_faults_per_call = 12.5
    cell.compiles.first_run, cell.compiles.second_run, cell.compiles.steady = 1, 1, 0
    cell.settings = {
        "run": {"threads": None, "preallocate": False},
        "framework": {"preallocate": None},  # as jax reports it on a CPU
        "blas": [{"internal_api": "openblas", "num_threads": 2, "architecture": "Haswell"}],
    }
    failed = make_cell("torch:eager", status="error", reason="boom")
    (row,) = signal_rows([cell, failed])
    assert row[1] == "jax:jit" and row[2] == "800 ms" and row[7] == "2.00 µs"
    assert row[6] == "trace 10.0 ms · compile 200 ms"
    assert row[10] == "12.5" and row[11] == "1/1/0"
    assert row[-1] == "threads default; prealloc n/a; openblas ×2 Haswell"
    # A framework that does not report it (numpy): what the run asked for.
    cell.settings = {"run": {"threads": 2, "preallocate": True}}
    assert signal_rows([cell])[0][-1] == "threads 2; prealloc on"


def test_a_text_parameter_that_varies_is_shown_as_variants_with_speed_ups() -> None:
    from stackwars.report.variants import variant_rows
    from stackwars.results.variants import find_variants

    def styled(stack: str, style: str, median: float) -> Cell:
        return make_cell(stack, median=median, params={"batch": 8, "style": style})

    cells = [
        styled("jax:jit", "loop", 4e-3),
        styled("jax:jit", "vmap", 1e-3),
        styled("jax:jit", "vectorised", 5e-4),
        styled("numpy:eager", "loop", 2e-3),
        styled("numpy:eager", "vectorised", 1e-3),
        make_cell("jax:jit", params={"batch": 16, "style": "loop"}),  # alone: no group
    ]
    (variants,) = find_variants(cells)
    assert variants.param == "style" and variants.values == ("loop", "vmap", "vectorised")
    assert variants.title() == "gemm(batch=8) by style"
    jit, numpy = variant_rows(variants)
    assert jit == ("jax:jit", "4.00 ms", "1.00 ms", "500 µs", f"4{X}", f"8{X}")
    assert numpy == ("numpy:eager", "2.00 ms", "", "1.00 ms", "", f"2{X}")


def test_what_compiling_buys_shows_a_second_run_compile_and_graphs_a_call() -> None:
    """Seed 001's "two runs to steady state" and "smaller graphs" as columns: a torch_xla train
    step that compiled again in its second run and ran two graphs a call, beside a stack that
    counts no graphs."""
    from stackwars.report.compile import COLUMNS, compile_rows, shown_columns
    from stackwars.results.compile import compile_summaries

    lazy = make_cell("torch-xla:lazy")
    lazy.compiles.first_run, lazy.compiles.second_run, lazy.compiles.steady = 1, 1, 0
    lazy.counters = {"steady": {"graphs_executed": 40.0, "calls": 20.0}}
    jitted = make_cell("jax:jit")
    jitted.compiles.first_run, jitted.compiles.second_run, jitted.compiles.steady = 1, 0, 0
    summaries = compile_summaries([lazy, jitted])
    rows = {row[1]: dict(zip(COLUMNS, row, strict=True)) for row in compile_rows(summaries)}
    assert rows["torch-xla:lazy"]["Compiles 1st/2nd/steady"] == "1/1/0"
    assert rows["torch-xla:lazy"]["Graphs a call"] == "2"
    assert rows["jax:jit"]["Compiles 1st/2nd/steady"] == "1/0/0"
    assert rows["jax:jit"]["Graphs a call"] == ""
    assert "Graphs a call" in [COLUMNS[i] for i in shown_columns(summaries)]
    assert "Graphs a call" not in [COLUMNS[i] for i in shown_columns(summaries[1:])]


def test_cells_on_a_device_their_stack_never_ran_on_here_are_marked_unproven() -> None:
    # TensorFlow was never run on a GPU by this project (docs/accelerators.md); jax was.
    cells = [make_cell("jax:jit"), make_cell("tensorflow:xla"), make_cell("tensorflow:xla")]
    cells[0].device = cells[1].device = "gpu"
    on_gpu, on_cpu = build_tables(cells)
    assert column(on_gpu, "Stack") == ["jax:jit", "tensorflow:xla †"]
    assert any(note.startswith("† a stack this project has not yet run") for note in on_gpu.notes)
    assert column(on_cpu, "Stack") == ["tensorflow:xla"]
    assert not any(note.startswith("†") for note in on_cpu.notes)
