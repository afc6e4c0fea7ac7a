"""Warnings fire, with numbers, on synthetic drift, spread and background load."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stackwars.frameworks.base import RunSettings
from stackwars.results.schema import CellSpec
from stackwars.runner.isolate import run_in_worker
from stackwars.runner.protocol import Request
from stackwars.service.api import machine_warnings
from stackwars.timing.quality import drift_warning, measurement_warnings, spread_warning
from stackwars.timing.timer import Measurement, TimingConfig

FAULTY = str(Path(__file__).parent / "data" / "faulty_workloads.py")


def measurement(blocks: list[float], **changes: object) -> Measurement:
    values: dict[str, object] = {
        "first_run_s": 1.0,
        "second_run_s": 1e-3,
        "runs_s": [1.0] + [1e-3] * 10,
        "runs_to_steady": 1,
        "warmup_settled": True,
        "inner_loops": 1,
        "block_s": blocks,
        "stable": True,
        **changes,
    }
    return Measurement(**values)  # type: ignore[arg-type]


def test_a_clean_measurement_has_no_warnings() -> None:
    assert (
        measurement_warnings(measurement([1e-3 * (1 + (i % 3) * 0.001) for i in range(60)])) == []
    )


def test_drift_between_the_halves_is_reported_with_its_size() -> None:
    blocks = [1e-3] * 30 + [1.2e-3] * 30
    text = drift_warning(blocks)
    assert "second half of the steady phase is 20.0% slower" in text
    assert drift_warning([1e-3 * (1 + (i % 2) * 0.01) for i in range(60)]) == ""


def test_spread_is_reported_above_ten_percent() -> None:
    # Quartiles 1.0 and 1.5 around a median of 1.25.
    assert "IQR is 40% of the median" in spread_warning([1.0, 1.0, 1.5, 1.5] * 10)
    assert spread_warning([1.0, 1.01, 1.02, 1.03] * 10) == ""


def test_steady_compiles_unsettled_warm_up_and_instability_are_reported() -> None:
    m = measurement([1e-3] * 30, compiles_steady=2, warmup_settled=False, stable=False)
    text = " | ".join(measurement_warnings(m))
    assert "2 compilation(s) during steady state" in text
    assert "warm-up did not settle in 11 runs" in text
    assert "not stable: 95% CI half-width" in text


@pytest.mark.slow
def test_background_load_during_a_cell_is_reported(tmp_path: Path) -> None:
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        request = Request(
            cell=CellSpec("doubles", {"size": 1}, "numpy:eager"),
            settings=RunSettings(cache_dir=str(tmp_path)),
            timing=TimingConfig(steady_budget_s=1.0, min_steady_s=1.0, target_rel_ci=1e-9),
            workload_files=[FAULTY],
        )
        cell = run_in_worker(request, timeout_s=60, budget_bytes=2**31)
    finally:
        burner.kill()
        burner.wait()
    assert cell.status == "ok", cell.reason
    assert cell.settings["background_cores"] > 0.5
    assert any("background load: other processes kept" in w for w in cell.warnings)


def test_machine_warnings_name_the_governor_and_load() -> None:
    text = " ".join(machine_warnings({"governor": "powersave", "load_average": [1.5, 1, 1]}))
    assert "governor is 'powersave'" in text and "load average is 1.50" in text
    assert machine_warnings({"governor": "performance", "load_average": [0.1, 0, 0]}) == []
    assert machine_warnings({"governor": None, "load_average": None}) == []
