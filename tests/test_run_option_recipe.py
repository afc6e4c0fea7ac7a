"""docs/developing.md's recipe "A run option", walked: every field of ``api.Measure`` (what a
run is asked for) is set by one ``stackwars run`` option, reaches the service unchanged
through ``commands/run.measure``, and is stored with the run (its options), so that a field
added without its option, or an option whose value stops on the way, fails here by name."""

from __future__ import annotations

import dataclasses
from typing import Any

from stackwars import cli
from stackwars.commands import run as run_command
from stackwars.service import api

# Each Measure field: the option that sets it, a value that is not its default, and what the
# field then holds.
OPTIONS: dict[str, tuple[list[str], Any]] = {
    "timeout_s": (["--timeout", "12.5"], 12.5),
    "memory_budget": (["--memory-budget", "3GiB"], "3GiB"),
    "device_memory_budget": (["--device-memory-budget", "5GiB"], "5GiB"),
    "target_ci_pct": (["--target-ci", "2.5"], 2.5),
    "budget_s": (["--budget", "0.25"], 0.25),
    "cache": (["--cache", "warm"], "warm"),
    "cache_dir": (["--cache-dir", "caches"], "caches"),
    "threads": (["--threads", "3"], 3),
    "x64": (["--x64", "on"], "on"),
    "rtol": (["--rtol", "1e-5"], 1e-5),
    "atol": (["--atol", "1e-7"], 1e-7),
    "force": (["--force"], True),
    "preallocate": (["--preallocate"], True),
    "memory_fraction": (["--memory-fraction", "0.4"], 0.4),
    "allocator_conf": (
        ["--allocator-conf", "expandable_segments:True"],
        "expandable_segments:True",
    ),
    "matmul_precision": (["--matmul-precision", "high"], "high"),
    "inputs": (["--inputs", "per-call"], "per-call"),
    "jobs": (["--jobs", "2"], 2),
    "workers": (["--workers", "per-stack"], "per-stack"),
    "seed": (["--seed", "7"], 7),
    "repeat": (["--repeat", "4"], 4),
    "order_seed": (["--order-seed", "9"], 9),
}
# Fields the run keeps in its plan or spends before it, rather than in RunOptions.
PLANNED = {"repeat": "the plan's workers a cell", "order_seed": "the plan's order"}
# A Measure field RunOptions holds under another name or form.
STORED_AS = {
    "timeout_s": ("timeout_s", 12.5),
    "target_ci_pct": ("timing", None),
    "budget_s": ("timing", None),
    "memory_budget": ("memory_budget", 3 * 2**30),
    "device_memory_budget": ("device_memory_budget", 5 * 2**30),
    "cache_dir": ("cache_root", None),
}


def parsed(argv: list[str]) -> Any:
    return cli.build_parser().parse_args(["run", "--workload", "gemm", *argv])


def test_every_measure_field_has_its_run_option() -> None:
    fields = {field.name for field in dataclasses.fields(api.Measure)}
    assert fields - set(OPTIONS) == set(), (
        "a Measure field no `stackwars run` option sets: add the option to commands/run.py "
        "(or commands/options.py) and its line to OPTIONS here (docs/developing.md, 'A run "
        "option')"
    )
    assert set(OPTIONS) - fields == set(), "OPTIONS names a field Measure no longer has"


def test_each_option_reaches_the_service_unchanged() -> None:
    defaults = run_command.measure(parsed([]))
    for name, (argv, expected) in OPTIONS.items():
        measure = run_command.measure(parsed(argv))
        assert getattr(measure, name) == expected, f"{argv} did not reach Measure.{name}"
        changed = {
            field.name
            for field in dataclasses.fields(api.Measure)
            if getattr(measure, field.name) != getattr(defaults, field.name)
        }
        assert changed == {name}, f"{argv} changed {changed}, not only {name}"


def test_each_option_is_stored_with_the_run_or_its_plan(tmp_path: Any) -> None:
    for name, (argv, expected) in OPTIONS.items():
        if name in PLANNED:
            continue
        values = [str(tmp_path / value) if value == "caches" else value for value in argv]
        measure = run_command.measure(parsed(values))
        options = api.run_options(measure, "cpu", None, ()).to_dict()
        stored, value = STORED_AS.get(name, (name, expected))
        assert stored in options, f"Measure.{name} is not in the run's options"
        default = api.run_options(api.Measure(), "cpu", None, ()).to_dict()[stored]
        assert options[stored] != default, f"Measure.{name} left the run's {stored} as it was"
        if value is not None:
            assert options[stored] == value, f"Measure.{name}: stored {options[stored]!r}"


def test_the_planned_fields_shape_the_plan() -> None:
    """--repeat sets the workers a cell in the plan, --order-seed their interleaved order."""
    selection = run_command.selection(parsed(["--param", "n=8", "--stacks", "numpy,jax:jit"]))
    orders = []
    for argv in (["--repeat", "4"], ["--repeat", "4", "--order-seed", "9"]):
        planned = api.plan_run(selection, run_command.measure(parsed(argv)))
        orders.append([(cell["stack"], cell["repeat"]) for cell in planned.record.planned])
    assert sorted(orders[0]) == sorted(orders[1])
    assert len(orders[0]) == 2 * 4
    assert orders[0] != orders[1]
