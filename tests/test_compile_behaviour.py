"""What compiling buys: break-even calls, speed-up over eager, the warm-cache first run
(--cache cold-then-warm, --cache-dir), --preallocate, and the first-run phases shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stackwars.cli import main
from stackwars.errors import UsageError
from stackwars.report.compile import compile_markdown, compile_rows, format_phases
from stackwars.results.compile import CompileSummary, compile_summaries
from stackwars.results.schema import Cell, Steady, Times, WarmStart
from stackwars.service import api


def timed_cell(stack: str, first: float, median: float, repeat: int = 0, ci: float = 0.0) -> Cell:
    return Cell(
        workload="gemm",
        params={"n": 64},
        stack=stack,
        repeat=repeat,
        status="ok",
        times=Times(first_run_s=first),
        steady=Steady(
            median_s=median,
            ci95_low_s=median * (1 - ci),
            ci95_high_s=median * (1 + ci),
            samples_s=[median * (1 - ci), median, median * (1 + ci)],
        ),
        first_run_breakdown={"trace_s": first / 4, "compile_s": first / 2, "execute_s": first / 4},
    )


def by_stack(cells: list[Cell]) -> dict[str, CompileSummary]:
    return {summary.stack: summary for summary in compile_summaries(cells)}


def test_break_even_is_first_run_excess_over_per_call_saving() -> None:
    # 1 s more to start, 10 ms saved a call: from call 1 + 100 on, compiling has paid off.
    eager, jit = timed_cell("jax:eager", 0.1, 0.02), timed_cell("jax:jit", 1.1, 0.01)
    summary = compile_summaries([eager, jit])[0]
    assert summary.stack == "jax:jit" and summary.eager_stack == "jax:eager"
    assert summary.break_even_calls is not None and summary.speed_up is not None
    assert summary.break_even_calls.value == 101
    assert summary.speed_up.value == pytest.approx(2.0)
    assert "one worker" in summary.note


def test_a_compiled_stack_that_starts_faster_wins_from_the_first_call() -> None:
    summary = compile_summaries(
        [timed_cell("jax:eager", 0.5, 0.02), timed_cell("jax:jit", 0.1, 0.01)]
    )
    assert summary[0].break_even_calls is not None
    assert summary[0].break_even_calls.value == 1


def test_a_compiled_stack_slower_per_call_never_pays_off() -> None:
    summary = compile_summaries(
        [timed_cell("torch:eager", 0.1, 0.01), timed_cell("torch:compile", 9.0, 0.02)]
    )
    assert summary[0].break_even_calls is None
    assert summary[0].note.startswith("never: torch:compile is not faster per call")


def test_the_interval_widens_with_the_steady_intervals_and_first_run_spread() -> None:
    cells = [
        timed_cell("jax:eager", first, 0.02, repeat, ci=0.05)
        for repeat, first in enumerate((0.1, 0.2))
    ] + [
        timed_cell("jax:jit", first, 0.01, repeat, ci=0.05)
        for repeat, first in enumerate((1.0, 1.4))
    ]
    summary = compile_summaries(cells)[0]
    estimate = summary.break_even_calls
    assert estimate is not None and estimate.low is not None and estimate.high is not None
    # Median first runs 0.15 s and 1.2 s, 10 ms saved a call; the first runs alone range
    # over an excess of 0.8-1.3 s, and the steady intervals widen that further.
    assert estimate.value == 1 + 105
    assert estimate.low <= 1 + 80 and estimate.high >= 1 + 130
    assert summary.note == ""


def test_a_saving_that_may_be_zero_leaves_the_interval_open() -> None:
    eager, jit = (
        timed_cell("jax:eager", 0.1, 0.0105, ci=0.1),
        timed_cell("jax:jit", 1.1, 0.01, ci=0.1),
    )
    estimate = compile_summaries([eager, jit])[0].break_even_calls
    assert estimate is not None and estimate.high is None
    assert compile_rows(compile_summaries([eager, jit]))[0][-1].endswith("–∞]")


def test_eager_cells_appear_only_with_a_warm_start_and_name_their_cache() -> None:
    eager = timed_cell("tensorflow:eager", 0.1, 0.02)
    graph = timed_cell("tensorflow:graph", 0.3, 0.01)
    found = by_stack([eager, graph])
    assert list(found) == ["tensorflow:graph"]
    graph.warm_start = WarmStart(status="ok", first_run_s=0.29)
    eager.warm_start = WarmStart(status="ok", first_run_s=0.1)
    summaries = compile_summaries([eager, graph])
    assert [s.stack for s in summaries] == ["tensorflow:eager", "tensorflow:graph"]
    assert summaries[1].persistent_cache.startswith("none: tensorflow:graph keeps no")
    assert "(no persistent cache)" in compile_markdown(summaries)
    jit = by_stack([timed_cell("jax:jit", 1.0, 0.01)])["jax:jit"]
    assert "persistent compilation cache" in jit.persistent_cache


def test_phases_are_named_as_the_framework_gives_them() -> None:
    text = format_phases(
        {"trace_s": 0.012, "optimize_and_execute_s": 0.2, "of_compile.cache_read_s": 0.003}
    )
    assert text == "trace 12.0 ms · optimize+execute 200 ms · (of compile: cache read 3.00 ms)"


def test_the_run_json_carries_the_compile_section(tmp_path: Path) -> None:
    from stackwars.results.run import Run

    run = Run("r", "now", {}, {}, [])
    run.cells = [timed_cell("jax:eager", 0.1, 0.02), timed_cell("jax:jit", 1.1, 0.01)]
    path = tmp_path / "run.json"
    run.write_json(path)
    section = json.loads(path.read_text())["compile"]
    assert section[0]["break_even_calls"]["value"] == 101
    assert Run.from_dict(json.loads(path.read_text())).cells[1].stack == "jax:jit"


def test_cache_dir_means_warm_and_refuses_another_mode(tmp_path: Path) -> None:
    selection = api.Selection(workload="gemm", params=("n=8",), stacks="numpy")
    planned = api.plan_run(selection, api.Measure(cache_dir=str(tmp_path / "c")))
    assert planned.options.cache == "warm"
    assert planned.options.cache_root == tmp_path / "c"
    with pytest.raises(UsageError, match="--cache-dir keeps compile caches"):
        api.plan_run(selection, api.Measure(cache="cold", cache_dir=str(tmp_path)))
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="is a file"):
        api.plan_run(selection, api.Measure(cache_dir=str(tmp_path / "file")))


def test_the_compile_cache_suite_runs_cold_then_warm_unless_told_otherwise() -> None:
    suite = api.Selection(suite="compile-cache", stacks="numpy")
    assert api.plan_run(suite, api.Measure()).options.cache == "cold-then-warm"
    assert api.plan_run(suite, api.Measure(cache="cold")).options.cache == "cold"


def test_preallocate_is_recorded_and_said_to_do_nothing_on_cpu() -> None:
    selection = api.Selection(workload="gemm", params=("n=8",), stacks="numpy")
    planned = api.plan_run(selection, api.Measure(preallocate=True))
    assert planned.options.preallocate
    assert any("--preallocate changes nothing on cpu" in w for w in planned.warnings)
    assert not api.plan_run(selection, api.Measure()).options.preallocate


@pytest.mark.slow
def test_cold_then_warm_reruns_the_first_run_with_the_filled_cache(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    out = tmp_path / "run.json"
    argv = ["run", "--workload", "gemm", "--param", "n=32", "--stacks", "numpy,jax:jit"]
    argv += ["--cache", "cold-then-warm", "--preallocate", "--budget", "0.05", "--quiet"]
    argv += ["--second-look", "0"]
    assert main([*argv, "--db", str(tmp_path / "db"), "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    cells = {c["stack"]: c for c in data["cells"]}
    jit = cells["jax:jit"]
    assert jit["warm_start"]["status"] == "ok"
    assert jit["settings"]["run"]["preallocate"] is True
    # The warm worker read JAX's persistent cache; the cold one had nothing to read.
    assert "of_compile.cache_read_s" in jit["warm_start"]["first_run_breakdown"]
    assert "of_compile.cache_read_s" not in jit["first_run_breakdown"]
    assert cells["numpy:eager"]["warm_start"]["first_run_s"] > 0
    assert {s["stack"] for s in data["compile"]} == {"numpy:eager", "jax:jit"}


@pytest.mark.slow
def test_cache_dir_keeps_the_cache_for_the_next_run(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    argv = ["run", "--workload", "gemm", "--param", "n=16", "--stacks", "jax:jit", "--quiet"]
    argv += [
        "--budget",
        "0.05",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--db",
        str(tmp_path / "db"),
    ]
    phases = []
    for index in range(2):
        out = tmp_path / f"run{index}.json"
        assert main([*argv, "--json", str(out)]) == 0
        phases.append(json.loads(out.read_text())["cells"][0]["first_run_breakdown"])
    assert "of_compile.cache_read_s" not in phases[0]
    assert "of_compile.cache_read_s" in phases[1]
    assert (tmp_path / "cache").is_dir()
