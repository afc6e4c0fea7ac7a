"""Memory budgets per device: what an accelerator cell's device holds is predicted apart from
what stays on the host, checked against the device's budget (90 % of the GPU's memory as
nvidia-smi reports it, recorded in tests/data/device_answers.json), and --find-max-batch
finds the largest batch both budgets allow."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from stackwars import workloads
from stackwars.config import DEFAULT_DEVICE_BUDGET_SHARE, default_device_budget
from stackwars.instruments.maxbatch import predict as maxbatch
from stackwars.instruments.maxbatch.render import max_batch_table
from stackwars.results.metadata import parse_gpu_memory
from stackwars.runner import plan
from stackwars.runner.protocol import CellSpec

GIB = 2**30
ANSWERS = json.loads(
    (Path(__file__).parent / "data" / "device_answers.json").read_text(encoding="utf-8")
)
GPU_MEMORY = parse_gpu_memory(ANSWERS["nvidia_smi"]["memory_total"])
H100_BUDGET = default_device_budget("gpu", GPU_MEMORY) or 0
HOST_BUDGET = 2**40  # the host never binds in these tests


def model(name: str, stack: str, device: str, **params: str | int) -> CellSpec:
    workload = workloads.get(name)
    return CellSpec(name, workload.resolve(dict(params)), stack, device)


def test_nvidia_smis_memory_column_reads_as_bytes_per_gpu_in_order() -> None:
    assert GPU_MEMORY == [81559 * 2**20, 40960 * 2**20]
    assert parse_gpu_memory("81559\n[N/A]\n40960\n") == [81559 * 2**20]
    assert parse_gpu_memory("") == []


def test_the_default_device_budget_is_a_share_of_that_gpus_memory() -> None:
    assert int(81559 * 2**20 * DEFAULT_DEVICE_BUDGET_SHARE) == H100_BUDGET
    assert default_device_budget("gpu:1", GPU_MEMORY) == int(40960 * 2**20 * 0.9)
    for unknown in ("gpu:2", "cpu", "tpu"):
        assert default_device_budget(unknown, GPU_MEMORY) is None


def test_on_a_gpu_the_model_lives_on_the_device_and_the_host_keeps_its_weights() -> None:
    on_cpu = model("gpt2-small", "torch:eager", "cpu", task="train")
    on_gpu = dataclasses.replace(on_cpu, device="gpu")
    device_need, detail = plan.device_prediction(on_gpu) or (0, "")
    assert "host weights" not in detail and "AdamW moments" in detail
    assert plan.device_prediction(on_cpu) is None
    host_on_gpu, host_on_cpu = plan.prediction(on_gpu)[0], plan.prediction(on_cpu)[0]
    assert host_on_gpu + device_need == host_on_cpu, "the same terms, split between the two"


def test_a_model_too_big_for_the_device_is_planned_oom_with_the_device_prediction() -> None:
    train = model("llama-3.1-8b", "torch:eager", "gpu", task="train")
    (planned,) = plan.plan([train], HOST_BUDGET, device_budget=H100_BUDGET)
    assert planned.skip_status == "oom"
    assert planned.skip_reason.startswith("predicted gpu peak ")
    assert "--device-memory-budget" in planned.skip_reason
    assert planned.predicted_device_bytes and planned.predicted_device_bytes > H100_BUDGET
    (forced,) = plan.plan([train], HOST_BUDGET, force=True, device_budget=H100_BUDGET)
    assert not forced.skip_reason


def test_bfloat16_inference_of_the_8b_model_fits_an_h100() -> None:
    infer = model("llama-3.1-8b", "torch:eager", "gpu", dtype="bfloat16")
    (planned,) = plan.plan([infer], HOST_BUDGET, device_budget=H100_BUDGET)
    assert not planned.skip_reason, planned.skip_reason
    assert planned.predicted_device_bytes and planned.predicted_device_bytes < H100_BUDGET


def test_an_unknown_device_size_is_not_checked() -> None:
    train = model("llama-3.1-8b", "torch:eager", "gpu", task="train")
    (planned,) = plan.plan([train], HOST_BUDGET, device_budget=None)
    assert not planned.skip_reason
    assert planned.predicted_device_bytes


def test_the_largest_batch_on_a_gpu_is_bound_by_the_devices_budget() -> None:
    spec = model("gpt2-small", "jax:jit", "gpu", task="train")
    budget = 8 * GIB
    best = maxbatch.max_batch(spec, HOST_BUDGET, budget)
    assert best > 0

    def on_device(batch: int) -> int:
        changed = dataclasses.replace(spec, params={**spec.params, "batch": batch})
        return (plan.device_prediction(changed) or (0, ""))[0]

    assert on_device(best) <= budget < on_device(best + 1)
    assert maxbatch.max_batch(spec, HOST_BUDGET, None) > best, "unbounded by an unknown size"


def test_the_max_batch_table_names_both_budgets_and_the_device_peak() -> None:
    (answer,) = maxbatch.max_batches(
        [model("gpt2-small", "jax:jit", "gpu", task="train")], HOST_BUDGET, 8 * GIB
    )
    assert answer.predicted_device_bytes and answer.predicted_device_bytes <= 8 * GIB
    table = max_batch_table([answer], HOST_BUDGET, "gpu", 8 * GIB)
    assert "8.00 GiB on gpu" in str(table.title)
    assert [column.header for column in table.columns][-1] == "predicted device peak at it"
    unknown = max_batch_table([answer], HOST_BUDGET, "tpu", None)
    assert "an unknown size (not checked) on tpu" in str(unknown.title)
