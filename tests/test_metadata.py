"""Machine, version and BLAS metadata, gathered without importing a framework."""

from __future__ import annotations

import importlib.metadata
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

import stackwars
import stackwars.frameworks as frameworks_module
from stackwars.frameworks import FRAMEWORKS
from stackwars.report.env import render_env
from stackwars.results import metadata
from stackwars.results.metadata import (
    BLAS_VARIABLES,
    EXTRA_DISTRIBUTIONS,
    blas_environment,
    collect_env,
    detect_accelerators,
    framework_versions,
    machine_info,
    parse_cpuinfo,
)

SRC = Path(__file__).resolve().parents[1] / "src"

X86_CPUINFO = """\
processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_tile amx_bf16
"""
ARM_CPUINFO = """\
processor\t: 0
BogoMIPS\t: 243.75
Features\t: fp asimd evtstrm sve
CPU implementer\t: 0x41
"""


def test_machine_info_reports_cores_memory_and_accelerators() -> None:
    info = machine_info()
    expected = {
        "cpu_model",
        "arch",
        "logical_cores",
        "physical_cores",
        "usable_cores",
        "memory_total_bytes",
        "memory_available_bytes",
        "cpu_flags",
        "governor",
        "load_average",
        "os",
        "python",
        "accelerators",
    }
    assert set(info) == expected
    assert info["logical_cores"] > 0
    assert info["memory_total_bytes"] > 0
    assert 0 < info["memory_available_bytes"] <= info["memory_total_bytes"]
    assert isinstance(info["accelerators"], list)
    assert info["cpu_model"]


def test_parse_cpuinfo_reads_x86_and_arm() -> None:
    assert parse_cpuinfo(X86_CPUINFO) == {
        "cpu_model": "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz",
        "cpu_flags": ["avx2", "avx512f", "avx512_bf16", "amx_tile"],
    }
    assert parse_cpuinfo(ARM_CPUINFO) == {"cpu_model": None, "cpu_flags": ["asimd", "sve"]}
    assert parse_cpuinfo(None) == {"cpu_model": None, "cpu_flags": None}


@pytest.mark.skipif(
    Path("/proc/driver/nvidia/gpus").exists() or Path("/dev/accel0").exists(),
    reason="real accelerators present",
)
def test_nvidia_smi_listing_is_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        'echo "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-1234)"\n'
        'echo "GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-5678)"\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    gpus = [acc for acc in detect_accelerators() if acc["kind"] == "gpu"]
    assert [gpu["name"] for gpu in gpus] == ["NVIDIA A100-SXM4-40GB"] * 2
    assert gpus[0]["source"] == "nvidia-smi -L"


@pytest.mark.skipif(Path("/proc/driver/nvidia/gpus").exists(), reason="real NVIDIA driver")
def test_a_hanging_nvidia_smi_is_given_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\nexec sleep 5\n")  # exec: the kill must reach the sleeper
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(metadata, "NVIDIA_SMI_TIMEOUT_S", 0.2)
    assert [acc for acc in detect_accelerators() if acc["kind"] == "gpu"] == []


def test_framework_versions_come_from_package_metadata() -> None:
    versions = framework_versions()
    assert set(FRAMEWORKS) <= set(versions)
    assert set(EXTRA_DISTRIBUTIONS) <= set(versions)
    assert versions["rich"] == importlib.metadata.version("rich")
    assert versions["psutil"] == importlib.metadata.version("psutil")


def test_blas_environment_records_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    env = blas_environment()
    assert set(env) == set(BLAS_VARIABLES)
    assert env["OPENBLAS_CORETYPE"] == "Haswell"
    assert env["MKL_NUM_THREADS"] is None


@pytest.mark.slow
def test_gathering_metadata_imports_no_framework() -> None:
    code = (
        "import sys\n"
        "from stackwars.results.metadata import framework_versions, machine_info\n"
        "machine_info()\n"
        "framework_versions()\n"
        "print(sorted({'numpy', 'jax', 'torch', 'tensorflow'} & set(sys.modules)))\n"
    )
    pythonpath = os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "PYTHONPATH": pythonpath},
    )
    assert result.stdout.strip() == "[]"


def test_render_env_shows_every_section() -> None:
    info = collect_env()
    info["blas_libraries"] = {
        "numpy": [{"internal_api": "openblas", "num_threads": 2, "architecture": "Haswell"}],
        "tensorflow": "the probe timed out",
    }
    console = Console(file=io.StringIO(), width=200, record=True)
    console.print(render_env(info))
    text = console.export_text()
    expected_texts = ("Machine", "Versions", "BLAS environment", "OPENBLAS_CORETYPE", "numpy")
    for expected in (*expected_texts, "Haswell", "probe failed: the probe timed out"):
        assert expected in text
    assert info["machine"]["os"] in text


def test_keras_alone_is_not_reported_as_tensorflow(monkeypatch: pytest.MonkeyPatch) -> None:
    # Seen on a GPU machine with Keras 3 and no TensorFlow: "tensorflow 3.15.0" in env.
    installed = {"keras": "3.15.0"}
    monkeypatch.setattr(frameworks_module, "distribution_version", installed.get)
    assert frameworks_module.installed_version("tensorflow") is None
    assert frameworks_module.installed_version("keras-tensorflow") == "3.15.0"


def test_stackwars_version_is_the_code_running_also_without_a_distribution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(metadata, "_distribution_version", lambda name: None)
    assert framework_versions()["stackwars"] == stackwars.__version__


def test_a_stored_git_state_is_named_by_its_short_commit_and_whether_it_was_dirty() -> None:
    commit = "0123456789abcdef"
    assert metadata.commit_label({"commit": commit, "dirty": False}) == "0123456"
    dirty = metadata.commit_label({"commit": commit, "dirty": True})
    assert dirty == "0123456 with uncommitted changes"
    assert metadata.commit_label(None) == metadata.commit_label({}) == "unknown"
