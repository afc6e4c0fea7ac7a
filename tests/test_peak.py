"""The machine's peak (results/peak.py, instruments/peak/task.py and worker.py) and the
roofline placement of cells (results/roofline.py), on hand-made peaks and cells with known
answers."""

from __future__ import annotations

import dataclasses
import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from stackwars.instruments.peak.render import peak_rows
from stackwars.instruments.peak.task import best_of, measure_peak
from stackwars.instruments.peak.worker import DTYPES, recorded, require_dtype
from stackwars.instruments.peak.worker import libraries as peak_libraries
from stackwars.report.roofline import format_roofline
from stackwars.report.table import NO_PEAK_NOTE, build_tables
from stackwars.results.peak import (
    PEAK_VERSION,
    Peak,
    PeakError,
    default_peak_path,
    load_peak,
    peak_matches_machine,
    save_peak,
    stale_reason,
)
from stackwars.results.roofline import (
    arithmetic_intensity,
    bound_kind,
    cell_dtype,
    roofline_bound,
    roofline_fraction,
)
from stackwars.results.schema import Cell, Parity, Steady, WorkCounts

MACHINE = {
    "cpu_model": "AMD EPYC",
    "arch": "x86_64",
    "logical_cores": 2,
    "physical_cores": 2,
    "usable_cores": 2,
    "cpu_flags": ["avx2", "avx512f"],
}
# Ridge points: float32 at 10 FLOP/byte, float64 at 5.
PEAK = Peak(
    flops_per_s={"float32": 100e9, "float64": 50e9},
    bandwidth_bytes_per_s=10e9,
    details={"best": {"gemm_float32": "numpy", "gemm_float64": "torch", "bandwidth": "torch"}},
    measured="2026-11-22T01:00:00+00:00",
    machine=MACHINE,
)


def make_cell(
    flops: float | None,
    nbytes: float | None,
    median: float | None,
    *,
    dtype: str = "float32",
    computed: str | None = None,
    status: str = "ok",
) -> Cell:
    return Cell(
        workload="w",
        params={"n": 1, "dtype": dtype},
        stack="numpy:eager",
        status=status,
        steady=Steady(median_s=median),
        parity=Parity(computed_dtype=computed, requested_dtype=dtype),
        work=WorkCounts(flops=flops, bytes=nbytes),
    )


def test_arithmetic_intensity_is_flops_per_byte_or_none() -> None:
    assert arithmetic_intensity(6.0, 8.0) == 0.75
    assert arithmetic_intensity(0.0, 8.0) == 0.0
    assert arithmetic_intensity(None, 8.0) is None
    assert arithmetic_intensity(6.0, None) is None
    assert arithmetic_intensity(6.0, 0.0) is None


def test_bound_is_the_lower_roof_and_switches_at_the_ridge_point() -> None:
    assert roofline_bound(PEAK, "float32", 0.5) == pytest.approx(5e9)
    assert roofline_bound(PEAK, "float32", 1000.0) == 100e9
    assert roofline_bound(PEAK, "float64", 8.0) == 50e9
    assert bound_kind(PEAK, "float32", 9.9) == "memory"
    assert bound_kind(PEAK, "float32", 10.0) == "compute"
    assert bound_kind(PEAK, "float64", 8.0) == "compute"
    with pytest.raises(KeyError):
        roofline_bound(PEAK, "bfloat16", 1.0)


def test_compute_bound_cell_reaches_half_the_gemm_peak() -> None:
    # AI 2000 F/B: bound 100 GFLOP/s; 2 GFLOP in 40 ms is 50 GFLOP/s.
    cell = make_cell(2e9, 1e6, 0.04)
    assert roofline_fraction(cell, PEAK) == pytest.approx(0.5)
    assert format_roofline(cell, PEAK) == "AI 2000 F/B, 50% of compute bound"


def test_memory_bound_cell_reaches_forty_percent_of_bandwidth() -> None:
    # AI 0.125 F/B: bound 1.25 GFLOP/s; 1 MFLOP in 2 ms is 0.5 GFLOP/s.
    cell = make_cell(1e6, 8e6, 2e-3)
    intensity = arithmetic_intensity(1e6, 8e6)
    assert intensity is not None
    achieved = 1e6 / 2e-3
    expected = achieved / roofline_bound(PEAK, "float32", intensity)
    assert roofline_fraction(cell, PEAK) == pytest.approx(expected) == pytest.approx(0.4)
    assert format_roofline(cell, PEAK) == "AI 0.125 F/B, 40% of memory bound"


def test_the_computed_dtype_chooses_the_roof() -> None:
    # AI 8: memory bound in float32 (80 < 100 GFLOP/s), compute bound in float64 (50).
    asked = make_cell(8e9, 1e9, 1.0)
    ran_f64 = make_cell(8e9, 1e9, 1.0, computed="float64")
    assert cell_dtype(asked) == "float32"
    assert cell_dtype(ran_f64) == "float64"
    assert roofline_fraction(asked, PEAK) == pytest.approx(8e9 / 80e9)
    assert roofline_fraction(ran_f64, PEAK) == pytest.approx(8e9 / 50e9)
    assert format_roofline(ran_f64, PEAK) == "AI 8 F/B, 16% of compute bound"


def test_a_copy_without_flops_is_placed_by_its_bandwidth() -> None:
    cell = make_cell(0.0, 1e9, 0.2)
    assert roofline_fraction(cell, PEAK) == pytest.approx(0.5)
    assert format_roofline(cell, PEAK) == "AI 0 F/B, 50% of memory bound"


def test_small_fractions_keep_two_significant_digits() -> None:
    cell = make_cell(1e6, 8e6, 0.15)
    assert format_roofline(cell, PEAK) == "AI 0.125 F/B, 0.53% of memory bound"


@pytest.mark.parametrize(
    "cell",
    [
        make_cell(2e9, 1e6, 0.04, status="mismatch"),
        make_cell(2e9, 1e6, None),
        make_cell(2e9, 1e6, 0.0),
        make_cell(None, 1e6, 0.04),
        make_cell(2e9, None, 0.04),
        make_cell(2e9, 0.0, 0.04),
        make_cell(2e9, 1e6, 0.04, dtype="bfloat16"),
        make_cell(2e9, 1e6, 0.04, computed="int32"),
        make_cell(2e9, 1e6, 0.04, dtype="float16", computed="float32,float64"),
    ],
    ids=["not-ok", "no-median", "zero-median", "no-flops", "no-bytes", "zero-bytes",
         "no-peak-for-dtype", "integer", "mixed-dtypes"],
)  # fmt: skip
def test_cells_that_cannot_be_placed_give_none(cell: Cell) -> None:
    assert roofline_fraction(cell, PEAK) is None
    assert format_roofline(cell, PEAK) == ""


def test_mixed_output_dtypes_use_the_requested_one_when_present() -> None:
    assert cell_dtype(make_cell(1, 1, 1, dtype="float64", computed="float32,float64")) == "float64"


def test_peak_json_round_trip(tmp_path: Path) -> None:
    path = save_peak(PEAK, tmp_path / "sub" / "peak.json")
    assert load_peak(path) == PEAK
    assert json.loads(path.read_text())["version"] == PEAK_VERSION


def test_missing_peak_is_none_and_unusable_one_is_an_error(tmp_path: Path) -> None:
    assert load_peak(tmp_path / "absent.json") is None
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(PeakError, match="not a stackwars peak file"):
        load_peak(broken)
    old = tmp_path / "old.json"
    old.write_text(json.dumps({**PEAK.to_dict(), "version": PEAK_VERSION + 1}))
    with pytest.raises(PeakError, match="env --peak"):
        load_peak(old)


def test_default_path_follows_stackwars_peak_then_xdg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STACKWARS_PEAK", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert default_peak_path() == tmp_path / "home" / ".cache" / "stackwars" / "peak.json"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_peak_path() == tmp_path / "xdg" / "stackwars" / "peak.json"
    monkeypatch.setenv("STACKWARS_PEAK", str(tmp_path / "mine.json"))
    assert default_peak_path() == tmp_path / "mine.json"


def test_a_peak_from_another_machine_is_stale() -> None:
    here = {**MACHINE, "load_average": [3.0, 2.0, 1.0], "memory_available_bytes": 1}
    assert peak_matches_machine(PEAK, here)
    assert stale_reason(PEAK, here) is None
    for key, value in (("cpu_model", "Intel Xeon"), ("logical_cores", 8), ("usable_cores", 1)):
        elsewhere = {**here, key: value}
        assert not peak_matches_machine(PEAK, elsewhere)
        assert key in (stale_reason(PEAK, elsewhere) or "")


def library_result(gemm32: float | None, gemm64: float | None, triad: float | None) -> dict:
    def entry(rate: float | None, unit: str) -> dict[str, Any]:
        return {unit: rate} if rate is not None else {"error": "RuntimeError: broken"}

    return {
        "gemm": {
            "float32": entry(gemm32, "flops_per_s"),
            "float64": entry(gemm64, "flops_per_s"),
        },
        "stream": {"triad": entry(triad, "bytes_per_s")},
    }


def test_best_of_takes_each_maximum_and_names_its_library() -> None:
    libraries = {
        "numpy": library_result(200e9, 100e9, 8e9),
        "torch": library_result(150e9, None, 12e9),
        "jax": {"error": "jax is not installed"},
    }
    flops, bandwidth, best = best_of(libraries)
    assert flops == {"float32": 200e9, "float64": 100e9}
    assert bandwidth == 12e9
    assert best == {"gemm_float32": "numpy", "gemm_float64": "numpy", "bandwidth": "torch"}


def test_best_of_without_any_measurement_lists_every_error() -> None:
    libraries = {
        "numpy": library_result(200e9, None, 8e9),
        "jax": {"error": "jax is not installed"},
    }
    with pytest.raises(PeakError, match="no library measured float64 GEMM") as raised:
        best_of(libraries)
    assert "numpy gemm float64: RuntimeError: broken" in str(raised.value)
    assert "jax: jax is not installed" in str(raised.value)


def test_peak_rows_name_the_winning_library() -> None:
    rows = peak_rows(PEAK)
    assert rows["GEMM float32"] == "100.0 GFLOP/s (numpy)"
    assert rows["bandwidth"] == "10.0 GB/s STREAM triad (torch)"


def test_worker_records_failures_and_refuses_a_silent_dtype_change() -> None:
    with pytest.raises(TypeError, match="asked for float64, the library computed float32"):
        require_dtype("float32", "float64")

    def broken() -> dict:
        raise RuntimeError("no BLAS")

    assert "RuntimeError: no BLAS" in recorded(broken)["error"]


@pytest.mark.slow
def test_peak_modules_import_no_framework() -> None:
    probe = (
        "import json, sys\n"
        "import stackwars.instruments.peak.task, stackwars.instruments.peak.worker\n"
        "import stackwars.report.roofline\n"
        "from stackwars.frameworks import FRAMEWORKS\n"
        "print(json.dumps(sorted(i.import_name for i in FRAMEWORKS.values()"
        " if i.import_name in sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert json.loads(result.stdout) == []


@pytest.mark.slow
def test_quick_peak_measures_or_explains_every_library(tmp_path: Path) -> None:
    peak = measure_peak(quick=True, timeout_s=60)
    assert set(peak.flops_per_s) == set(DTYPES)
    assert all(rate > 0 for rate in peak.flops_per_s.values())
    assert peak.bandwidth_bytes_per_s > 0
    libraries = peak.details["libraries"]
    assert set(libraries) == set(peak_libraries())
    for result in libraries.values():
        if "error" in result:
            continue  # not installed, or its worker died: the reason is the record
        for dtype in DTYPES:
            gemm = result["gemm"][dtype]
            assert gemm.get("flops_per_s", 0) > 0 or gemm["error"]
    assert peak_matches_machine(peak, {**peak.machine})
    assert load_peak(save_peak(peak, tmp_path / "peak.json")) == peak


@pytest.mark.slow
def test_a_peak_past_its_timeout_stops_its_worker() -> None:
    before = {child.pid for child in psutil.Process().children(recursive=True)}
    with pytest.raises(PeakError, match=r"longer than 0\.01 s"):
        measure_peak(quick=True, timeout_s=0.01)
    after = {child.pid for child in psutil.Process().children(recursive=True)}
    assert after <= before


@pytest.mark.slow
def test_tables_place_cells_on_the_roofline_of_a_stored_peak(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from stackwars.cli import main
    from stackwars.results import metadata
    from stackwars.service import api

    cell = make_cell(1e9, 1e8, 0.02)  # 50 GFLOP/s at 10 F/B: half the float32 roof
    (with_peak,) = build_tables([cell], PEAK)
    assert "AI 10 F/B, 50% of compute bound" in with_peak.rows[0].texts()
    (without,) = build_tables([cell])
    assert NO_PEAK_NOTE in without.notes
    monkeypatch.setenv("STACKWARS_PEAK", str(tmp_path / "peak.json"))
    # The later envs reuse the first one's libraries and devices: they do not change with the
    # stored peak, and each env asks every framework for them in a worker (~15 s).
    monkeypatch.setattr(api, "probe_frameworks", functools.cache(api.probe_frameworks))
    assert main(["env"]) == 0
    assert "none for cpu on this machine" in capsys.readouterr().out
    here = metadata.machine_info()
    save_peak(
        Peak(
            PEAK.flops_per_s,
            PEAK.bandwidth_bytes_per_s,
            PEAK.details,
            PEAK.measured,
            {
                **MACHINE,
                "cpu_model": here["cpu_model"],
                "logical_cores": here["logical_cores"],
                "usable_cores": here["usable_cores"],
            },
        ),
        tmp_path / "peak.json",
    )
    assert main(["env"]) == 0
    assert "100.0 GFLOP/s" in capsys.readouterr().out
    elsewhere = {**MACHINE, "cpu_model": f"not {here['cpu_model']}"}
    save_peak(
        Peak(PEAK.flops_per_s, PEAK.bandwidth_bytes_per_s, PEAK.details, PEAK.measured, elsewhere),
        tmp_path / "peak.json",
    )
    assert main(["env"]) == 0
    captured = capsys.readouterr()
    # The stale peak is a warning (stderr); the table says there is none for this machine.
    assert "measured on another machine" in " ".join(captured.err.split())
    assert "none for cpu on this machine" in captured.out


# The peak per device: each device's peak is measured on it and stored apart, and a table
# never places cells under another device's roofline. Only the code path is tested: no GPU
# peak was measured (docs/accelerators.md).


def test_each_device_has_its_own_peak_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STACKWARS_PEAK", str(tmp_path / "peak.json"))
    assert default_peak_path() == tmp_path / "peak.json"
    assert default_peak_path("gpu") == tmp_path / "peak-gpu.json"
    assert default_peak_path("gpu:1") == tmp_path / "peak-gpu-1.json"
    gpu_peak = dataclasses.replace(PEAK, device="gpu")
    assert save_peak(gpu_peak) == tmp_path / "peak-gpu.json"
    assert load_peak(device="gpu") == gpu_peak
    assert load_peak() is None, "the cpu's peak is not the gpu's"


def test_a_peak_file_without_a_device_is_the_cpus(tmp_path: Path) -> None:
    path = save_peak(PEAK, tmp_path / "peak.json")
    assert load_peak(path).device == "cpu"  # pyright: ignore[reportOptionalMemberAccess]


def test_gpu_cells_are_never_placed_under_the_cpus_roofline() -> None:
    cell = dataclasses.replace(make_cell(1e9, 1e8, 0.02), device="gpu")
    (table,) = build_tables([cell], PEAK)
    assert "AI" not in " ".join(table.rows[0].texts())
    (note,) = [n for n in table.notes if n.startswith("Roofline:")]
    assert "the stored peak is the cpu's, these cells ran on gpu" in note
    assert "stackwars env --peak --device gpu" in note
    (placed,) = build_tables([cell], dataclasses.replace(PEAK, device="gpu"))
    assert "AI 10 F/B, 50% of compute bound" in placed.rows[0].texts()
    assert NO_PEAK_NOTE not in placed.notes


def test_a_tpu_peak_needs_float32_alone() -> None:
    libraries = {"jax": library_result(200e12, None, 800e9)}
    flops, bandwidth, best = best_of(libraries, "tpu")
    assert flops == {"float32": 200e12} and bandwidth == 800e9
    assert best["gemm_float32"] == "jax"
    with pytest.raises(PeakError, match="float64"):
        best_of(libraries, "gpu")


@pytest.mark.slow
def test_a_gpu_peak_here_fails_with_each_librarys_reason() -> None:
    with pytest.raises(PeakError, match="no library measured float32 GEMM") as raised:
        measure_peak(quick=True, timeout_s=300, device="gpu")
    message = str(raised.value)
    assert "numpy runs on cpu, not gpu" in message
    assert "no gpu here: cpu only:" in message
