"""An error's reason leads with the exception (the last line of its traceback, not the first
frame), keeps the traceback after a blank line for the details ('show --details' prints it),
and answers the causes it knows with their fix (runner/failure.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stackwars import workloads
from stackwars.cli import main
from stackwars.frameworks import FRAMEWORKS
from stackwars.frameworks.base import RunSettings
from stackwars.results import store
from stackwars.results.run import Run, now
from stackwars.results.schema import Cell, CellSpec, reason_headline
from stackwars.runner import failure
from stackwars.runner.protocol import Request
from stackwars.runner.worker import CellRun
from stackwars.timing.timer import TimingConfig

FAULTY = str(Path(__file__).parent / "data" / "faulty_workloads.py")
QUICK = TimingConfig(steady_budget_s=0.05, min_steady_s=0.0, warmup_budget_s=0.05)


class InternalTorchDynamoError(RuntimeError):
    """Stands for torch._dynamo.exc's error, by the module it names (no torch imported)."""


InternalTorchDynamoError.__module__ = "torch._dynamo.exc"


def raised(exc: BaseException, cause: BaseException | None = None) -> BaseException:
    """``exc`` as raised (with a traceback), from ``cause`` when given."""
    try:
        raise exc from cause
    except BaseException as caught:  # any exception is what is tested
        return caught


def test_an_error_reason_leads_with_the_exception_and_keeps_the_traceback(
    tmp_path: Path,
) -> None:
    workloads.load_workload_file(FAULTY)
    request = Request(
        CellSpec("fails", {"size": 1}, "numpy:eager"),
        RunSettings(cache_dir=str(tmp_path)),
        QUICK,
        workload_files=[FAULTY],
    )
    cell = CellRun(request).run()
    assert cell.status == "error"
    assert cell.reason.startswith("ValueError: this workload always fails\n\nTraceback")
    assert reason_headline(cell.reason) == "ValueError: this workload always fails"
    assert "faulty_workloads.py" in cell.reason  # the traceback, in the details


def test_a_module_torch_compile_cannot_import_again_is_answered_with_the_fix() -> None:
    """Dynamo imports a compiled function's module again by name; one loaded from its path
    without sys.modules cannot be found (issue 35's torch:compile cell)."""
    missing = ModuleNotFoundError("No module named 'kernel_pytorch'", name="kernel_pytorch")
    message = "ModuleNotFoundError: No module named 'kernel_pytorch'\n\nfrom user code: ..."
    exc = raised(InternalTorchDynamoError(message), raised(missing))
    reason = failure.error_reason(exc)
    head, fix = reason.splitlines()[:2]
    assert head == (
        "InternalTorchDynamoError: ModuleNotFoundError: No module named 'kernel_pytorch'"
    )
    assert fix.startswith("fix: torch.compile imports") and "load_module(path)" in fix
    assert reason_headline(reason).endswith("put its folder on sys.path and import it")


@pytest.mark.parametrize("framework", ["jax", "torch", "tensorflow"])
def test_a_missing_framework_is_answered_with_its_install_command(framework: str) -> None:
    package = FRAMEWORKS[framework].import_name
    exc = raised(ModuleNotFoundError(f"No module named '{package}.numpy'"))
    fix = failure.known_fix(exc)
    assert fix == f"{package} is not installed: {FRAMEWORKS[framework].install_hint()}"


def test_cuda_asked_for_where_there_is_none_is_answered_with_the_device_option() -> None:
    exc = raised(AssertionError("Torch not compiled with CUDA enabled"))
    assert failure.known_fix(exc).startswith("CUDA is not available here")
    assert "--device cpu" in failure.known_fix(exc)


def test_an_unknown_cause_gets_no_invented_fix() -> None:
    reason = failure.error_reason(raised(ValueError("shapes (3,) and (4,) do not align")))
    assert reason_headline(reason) == "ValueError: shapes (3,) and (4,) do not align"
    assert "fix:" not in reason


def test_show_details_prints_the_whole_reason_the_table_leaves_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reason = failure.error_reason(raised(ValueError("this workload always fails")))
    cell = Cell(workload="fails", params={"size": 1}, stack="numpy:eager", reason=reason)
    db = tmp_path / "db.sqlite"
    results = store.Store(db)
    run = Run(id="r", started=now(), machine={}, versions={}, argv=[], status="complete")
    results.begin_run(run)
    results.add_cell(run, cell)
    results.finish_run(run)
    assert main(["show", "r", "--db", str(db)]) == 0
    assert "Traceback" not in capsys.readouterr().out
    assert main(["show", "r", "--db", str(db), "--details"]) == 0
    out = capsys.readouterr().out
    assert "fails numpy:eager @ cpu ERROR:" in out and "Traceback (most recent call last)" in out
