"""``stackwars profile`` takes the framework settings ``run`` takes (threads, 64-bit JAX,
matmul precision, accelerator memory), checked the same way, so that a profile can be made of
the cell a run measured with them."""

from __future__ import annotations

import argparse

import pytest

from stackwars.cli import build_parser
from stackwars.errors import UsageError
from stackwars.instruments.profile.command import options_of


def parsed(*extra: str) -> argparse.Namespace:
    argv = ["profile", "--workload", "gemm", "--stacks", "numpy", *extra]
    return build_parser().parse_args(argv)


def test_the_framework_settings_reach_the_profiled_cells() -> None:
    args = parsed("--threads", "1", "--x64", "on", "--matmul-precision", "high", "--budget", "3")
    options = options_of(args, ())
    assert (options.threads, options.x64, options.matmul_precision) == (1, "on", "high")
    assert options.timing.steady_budget_s == 3.0 and options.timeout_s == 600.0


def test_without_them_each_framework_runs_as_run_runs_it_by_default() -> None:
    options = options_of(parsed(), ())
    assert (options.threads, options.x64, options.matmul_precision) == (None, "auto", "highest")
    assert not options.preallocate and options.memory_fraction is None


@pytest.mark.parametrize(
    ("extra", "named"),
    [(("--threads", "0"), "--threads 0"), (("--memory-fraction", "1.5"), "1.5")],
)
def test_a_bad_setting_is_refused_as_run_refuses_it(extra: tuple[str, ...], named: str) -> None:
    with pytest.raises(UsageError, match=named.replace(".", r"\.")):
        options_of(parsed(*extra), ())
