"""What each framework says about devices, and device memory: the pure readings of the
frameworks' answers (tests/data/device_answers.json: recorded on this CPU machine, and as the
frameworks document them for a GPU), then the real frameworks on this machine, which has no
GPU or TPU: every accelerator cell must end ``unsupported`` with the reason and the fix.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from stackwars.frameworks import jax as jax_module
from stackwars.frameworks import stack_missing_reason
from stackwars.frameworks import tensorflow as tensorflow_module
from stackwars.frameworks import torch as torch_module
from stackwars.frameworks.base import DeviceMemory, DeviceSupport, unavailable
from stackwars.report.table import DEVICE_COLUMN, build_tables, render_markdown
from stackwars.results.schema import Cell, Memory, Steady
from stackwars.service import api, execution

ANSWERS = json.loads(
    (Path(__file__).parent / "data" / "device_answers.json").read_text(encoding="utf-8")
)
READERS = {
    "jax": jax_module.device_support,
    "torch": torch_module.device_support,
    "tensorflow": tensorflow_module.device_support,
}


def by_kind(support: list[DeviceSupport]) -> dict[str, DeviceSupport]:
    return {entry.kind: entry for entry in support}


def gpu_facts(name: str) -> dict[str, Any]:
    return ANSWERS["gpu_machine"][name]["facts"]


@pytest.mark.parametrize("name", list(READERS))
def test_on_this_cpu_machine_each_framework_says_why_it_has_no_gpu_and_the_fix(name: str) -> None:
    support = by_kind(READERS[name](ANSWERS["cpu_machine"][name]))
    assert support["cpu"].devices
    assert not support["gpu"].devices
    assert support["gpu"].reason.startswith("cpu only:")
    assert "stackwars[cuda]" in support["gpu"].reason
    assert not support["tpu"].devices and support["tpu"].reason


def test_jax_without_libtpu_names_the_tpu_extra() -> None:
    tpu = by_kind(jax_module.device_support(ANSWERS["cpu_machine"]["jax"]))["tpu"]
    assert (
        tpu.reason == "cpu only: no libtpu installed; fix: pip install 'stackwars[tpu]' on a TPU VM"
    )


def test_tensorflow_says_its_tpu_system_did_not_start_and_why() -> None:
    tpu = by_kind(tensorflow_module.device_support(ANSWERS["cpu_machine"]["tensorflow"]))["tpu"]
    assert tpu.reason.startswith("the TPU system did not start (NotFoundError: TPUs not found")
    assert "tensorflow-tpu" in tpu.reason


def test_torch_points_a_tpu_user_to_torch_xla() -> None:
    tpu = by_kind(torch_module.device_support(ANSWERS["cpu_machine"]["torch"]))["tpu"]
    assert "torch:xla" in tpu.reason


@pytest.mark.parametrize("name", list(READERS))
def test_on_a_gpu_machine_each_framework_lists_its_gpu(name: str) -> None:
    gpu = by_kind(READERS[name](gpu_facts(name)))["gpu"]
    assert gpu.devices and gpu.reason == ""
    assert gpu.describe().startswith("1: ")


def test_a_jax_plugin_of_another_version_is_named_as_the_cause() -> None:
    gpu = by_kind(jax_module.device_support(gpu_facts("jax_mismatched_plugin")))["gpu"]
    assert "jax-cuda12-plugin 0.9.2 does not match jaxlib 0.10.2" in gpu.reason


def test_jax_platforms_hiding_a_kind_is_the_reason_given() -> None:
    facts = {**ANSWERS["cpu_machine"]["jax"], "platforms": "cpu"}
    facts["packages"] = {**facts["packages"], "jax-cuda12-plugin": "0.10.2"}
    gpu = by_kind(jax_module.device_support(facts))["gpu"]
    assert gpu.reason.startswith("JAX_PLATFORMS=cpu leaves it out")


def test_a_cuda_build_of_torch_without_a_visible_gpu_says_so() -> None:
    gpu = by_kind(torch_module.device_support(gpu_facts("torch_without_driver")))["gpu"]
    assert "built for CUDA 13.0" in gpu.reason and "is_available() is False" in gpu.reason


RECORDED = ANSWERS["h100_recorded"]["stacks"]
# torch:xla's devices are JAX's: it runs on JAX's runtime through torchax.
SUPPORT_READERS = {
    "jax:jit": jax_module.device_support,
    "torch:eager": torch_module.device_support,
    "torch:xla": jax_module.device_support,
}


@pytest.mark.parametrize("stack", [name for name in RECORDED if "facts" in RECORDED[name]])
def test_the_readers_give_what_the_h100_machine_answered(stack: str) -> None:
    # On the real GPU the worker read its facts into this support; the readers must still.
    recorded = RECORDED[stack]
    support = SUPPORT_READERS[stack]
    read = [dataclasses.asdict(entry) for entry in support(recorded["facts"])]
    assert json.loads(json.dumps(read)) == recorded["support"]
    assert by_kind(support(recorded["facts"]))["gpu"].devices == ("NVIDIA H100 80GB HBM3",)


def test_an_index_past_the_devices_seen_is_refused_with_how_many_there_are() -> None:
    support = jax_module.device_support(gpu_facts("jax"))
    assert "choose an index below 1" in str(unavailable(support, "gpu:1"))
    assert str(unavailable(support, "tpu")).startswith("no tpu here: ")


def memory(name: str) -> dict[str, Any]:
    return ANSWERS["memory_stats"][name]["stats"]


def test_jax_device_memory_from_its_memory_stats_recorded_on_an_h100() -> None:
    # The pool is what the allocator took from the device: 75 % of it, preallocated.
    read = jax_module.device_memory(memory("jax"))
    assert read == DeviceMemory(436208128, 63763906560, 63763906560)


def test_jax_without_pool_statistics_leaves_reserved_unknown() -> None:
    read = jax_module.device_memory(memory("jax_without_pool"))
    assert read == DeviceMemory(76800, None, 33014415360)
    assert jax_module.device_memory(None) == DeviceMemory()


def test_jaxs_minus_one_sentinel_is_not_a_count() -> None:
    stats = {**memory("jax"), "peak_bytes_in_use": -1}
    assert jax_module.device_memory(stats).peak_bytes is None


def test_torch_device_memory_limit_is_the_total_times_the_fraction_set() -> None:
    whole = torch_module.device_memory(memory("torch"))
    assert whole == DeviceMemory(167775744, 169869312, 85017493504)
    half = torch_module.device_memory({**memory("torch"), "memory_fraction": 0.5})
    assert half.limit_bytes == 85017493504 // 2


def test_tensorflow_device_memory_is_its_peak_alone() -> None:
    assert tensorflow_module.device_memory(memory("tensorflow")) == DeviceMemory(1048576)


def timed_cell(stack: str, device: str, memory_: Memory) -> Cell:
    return Cell(
        "gemm",
        {"n": 64},
        stack,
        device,
        status="ok",
        steady=Steady(median_s=1e-3, stable=True),
        memory=memory_,
    )


def test_the_table_shows_device_memory_for_accelerator_cells_that_have_it() -> None:
    read = torch_module.device_memory(memory("torch"))
    on_gpu = Memory(
        peak_rss_bytes=2**30,
        device_peak_bytes=read.peak_bytes,
        device_reserved_bytes=read.reserved_bytes,
        device_limit_bytes=read.limit_bytes,
    )
    (table,) = build_tables([timed_cell("torch:eager", "gpu", on_gpu)])
    assert DEVICE_COLUMN in table.columns
    text = dict(zip(table.columns, table.rows[0].texts(), strict=True))[DEVICE_COLUMN]
    assert text == "160 MiB (162 MiB / 79.2 GiB)"
    assert any(note.startswith("Device peak:") for note in table.notes)
    assert "| Device peak |" in render_markdown([table])


def test_cpu_tables_keep_their_columns() -> None:
    # TensorFlow reports a (partial) peak from its cpu allocator: the host's peak is the one.
    cell = timed_cell("tensorflow:eager", "cpu", Memory(peak_rss_bytes=2**30, device_peak_bytes=5))
    (table,) = build_tables([cell])
    assert DEVICE_COLUMN not in table.columns


def run_on(device: str, stacks: str) -> list[Cell]:
    return execution.run(
        "gemm", params={"n": 16}, stacks=stacks, device=device, budget_s=0.05, second_look_s=0
    ).cells


@pytest.mark.slow
def test_gpu_cells_end_unsupported_with_each_frameworks_reason_and_fix() -> None:
    stacks = ("jax:jit", "torch:eager", "torch:xla", "tensorflow:eager")
    runnable = [s for s in stacks if stack_missing_reason(*s.split(":")) is None]
    cells = run_on("gpu", ",".join(runnable))
    assert [cell.stack for cell in cells] == runnable
    for cell in cells:
        assert cell.status == "unsupported", (cell.stack, cell.reason)
        assert "DeviceUnavailable: no gpu here: cpu only:" in cell.reason
        assert "stackwars[cuda]" in cell.reason


@pytest.mark.slow
def test_tpu_cells_end_unsupported_where_the_framework_runs_on_tpus() -> None:
    stacks = ("jax:jit", "torch:xla", "tensorflow:eager")
    runnable = [s for s in stacks if stack_missing_reason(*s.split(":")) is None]
    cells = {cell.stack: cell for cell in run_on("tpu", ",".join(runnable))}
    for stack in runnable:
        assert cells[stack].status == "unsupported", (stack, cells[stack].reason)
    if "torch:xla" in cells:  # JAX's TPU backend answers for torchax
        assert "no libtpu installed" in cells["torch:xla"].reason
    if "tensorflow:eager" in cells:  # the TPU system was really asked to start
        assert "the TPU system did not start" in cells["tensorflow:eager"].reason


@pytest.mark.slow
def test_env_asks_each_framework_in_a_worker_of_its_own() -> None:
    probes = api.probe_frameworks()
    probed = probes.devices
    # The same worker lists the BLAS libraries the framework's import loaded.
    assert set(probes.libraries) == {label for label in probed if ":" not in label}
    numpy = probes.libraries["numpy"]
    assert all(isinstance(found, list) for found in probes.libraries.values()), probes.libraries
    assert isinstance(numpy, list) and any(lib["internal_api"] == "openblas" for lib in numpy)
    for label, support in probed.items():
        assert not isinstance(support, str), (label, support)
        kinds = by_kind(support)
        assert kinds["cpu"].devices, label
        assert not kinds["gpu"].devices and kinds["gpu"].reason, label
    through_torchax, jax = probed.get("torch:xla"), probed["jax"]
    if isinstance(through_torchax, list) and isinstance(jax, list):
        assert by_kind(through_torchax)["tpu"].reason == by_kind(jax)["tpu"].reason


def test_envs_devices_table_keeps_the_extras_brackets() -> None:
    from rich.console import Console

    from stackwars.report.env import device_table

    support = torch_module.device_support(ANSWERS["cpu_machine"]["torch"])
    console = Console(width=400, record=True)
    console.print(device_table({"torch": support, "jax": "no answer [oom]"}))
    text = console.export_text()
    assert "pip install 'stackwars[cuda]'" in text
    assert "not asked: no answer [oom]" in text
