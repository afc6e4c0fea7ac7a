"""Memory budgets per device: what an accelerator cell's device holds is predicted apart from
what stays on the host, checked against the device's budget (90 % of the GPU's memory as
nvidia-smi reports it, recorded in tests/data/device_answers.json), and --find-max-batch
finds the largest batch both budgets allow."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from stackwars import workloads
from stackwars.config import DEFAULT_DEVICE_BUDGET_SHARE, default_device_budget
from stackwars.instruments.maxbatch import predict as maxbatch
from stackwars.instruments.maxbatch.render import max_batch_table
from stackwars.results.metadata import parse_gpu_memory
from stackwars.results.schema import CellSpec
from stackwars.runner import plan
from stackwars.runner.worker import classify

GIB = 2**30
ANSWERS = json.loads(
    (Path(__file__).parent / "data" / "device_answers.json").read_text(encoding="utf-8")
)
GPU_MEMORY = parse_gpu_memory(ANSWERS["nvidia_smi"]["memory_total"])
H100_BUDGET = default_device_budget("gpu", GPU_MEMORY) or 0
# The budget alone, as a run given --device-memory-budget and no GPU size sees it.
H100 = plan.DeviceBudget(H100_BUDGET)
H100_MEMORY = plan.DeviceBudget(H100_BUDGET, GPU_MEMORY[0])  # as a run on that GPU sees it
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
    slack_for = workloads.get("gpt2-small").device_slack_for
    assert slack_for is not None
    slack, why = slack_for(on_gpu.params, "torch")
    assert slack > 0 and why in detail, "the caching allocator's free blocks, on the device only"
    assert host_on_gpu + device_need - slack == host_on_cpu, "the same terms, split between the two"


def test_a_model_too_big_for_the_device_is_planned_oom_with_the_device_prediction() -> None:
    train = model("llama-3.1-8b", "torch:eager", "gpu", task="train")
    (planned,) = plan.plan([train], HOST_BUDGET, device_budget=H100)
    assert planned.skip_status == "oom"
    assert planned.skip_reason.startswith("predicted gpu peak ")
    assert "--device-memory-budget" in planned.skip_reason
    assert planned.predicted_device_bytes and planned.predicted_device_bytes > H100_BUDGET
    (forced,) = plan.plan([train], HOST_BUDGET, force=True, device_budget=H100)
    assert not forced.skip_reason


def test_bfloat16_inference_of_the_8b_model_fits_an_h100() -> None:
    infer = model("llama-3.1-8b", "torch:eager", "gpu", dtype="bfloat16")
    (planned,) = plan.plan([infer], HOST_BUDGET, device_budget=H100)
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
    best = maxbatch.max_batch(spec, HOST_BUDGET, plan.DeviceBudget(budget))
    assert best > 0

    def on_device(batch: int) -> int:
        changed = dataclasses.replace(spec, params={**spec.params, "batch": batch})
        return (plan.device_prediction(changed) or (0, ""))[0]

    assert on_device(best) <= budget < on_device(best + 1)
    assert maxbatch.max_batch(spec, HOST_BUDGET, None) > best, "unbounded by an unknown size"


def test_the_max_batch_table_names_both_budgets_and_the_device_peak() -> None:
    (answer,) = maxbatch.max_batches(
        [model("gpt2-small", "jax:jit", "gpu", task="train")],
        HOST_BUDGET,
        plan.DeviceBudget(8 * GIB),
    )
    assert answer.predicted_device_bytes and answer.predicted_device_bytes <= 8 * GIB
    table = max_batch_table([answer], HOST_BUDGET, "gpu", 8 * GIB)
    assert "8.00 GiB on gpu" in str(table.title)
    assert [column.header for column in table.columns][-1] == "predicted device peak at it"
    unknown = max_batch_table([answer], HOST_BUDGET, "tpu", None)
    assert "an unknown size (not checked) on tpu" in str(unknown.title)


def test_jax_stacks_are_bound_by_their_allocators_share_of_the_gpu() -> None:
    # JAX's client lets a process take 75 % of the GPU, pre-allocating or not: on the H100 its
    # bytes_limit was 59.4 GiB while the budget was 90 % (71.7 GiB), and GPT-2's train step at
    # the batch predicted largest under the budget ran out of memory there.
    recorded = ANSWERS["h100_memory"]
    limit = recorded["jax_memory_stats"]["bytes_limit"]
    for stack in ("jax:jit", "torch:xla", "keras-jax:jit"):
        spec = model("gpt2-small", stack, "gpu", task="train")
        bytes_, what = H100_MEMORY.for_cell(spec)
        assert bytes_ is not None and abs(bytes_ - limit) / limit < 0.01, (stack, bytes_)
        assert "allocator limit, 75% of the GPU" in what
    torch_spec = model("gpt2-small", "torch:eager", "gpu", task="train")
    assert H100_MEMORY.for_cell(torch_spec)[0] == H100_BUDGET
    assert H100.for_cell(model("gpt2-small", "jax:jit", "gpu"))[0] == H100_BUDGET, "size unknown"


def test_the_batch_that_ran_out_of_memory_on_jax_is_no_longer_predicted_to_fit() -> None:
    spec = model("gpt2-small", "jax:jit", "gpu", task="train")
    ran_out = 1038  # the batch --find-max-batch gave before, and jax's OOM at it (recorded)
    assert "jax:jit batch 1038" in ANSWERS["h100_memory"]["oom_errors"]
    assert maxbatch.max_batch(spec, HOST_BUDGET, H100) == ran_out
    best = maxbatch.max_batch(spec, HOST_BUDGET, H100_MEMORY)
    assert 0 < best < ran_out
    (answer,) = maxbatch.max_batches([spec], HOST_BUDGET, H100_MEMORY)
    assert answer.batch == best and "allocator limit" in answer.device_limit
    table = max_batch_table([answer], HOST_BUDGET, "gpu", H100_BUDGET)
    assert any("allocator limit" in str(cell) for cell in table.columns[-1].cells)


def test_memory_fraction_binds_the_frameworks_that_apply_it() -> None:
    half = plan.DeviceBudget(H100_BUDGET, GPU_MEMORY[0], fraction=0.5)
    for stack in ("jax:jit", "torch:eager", "torch:xla"):
        bytes_, what = half.for_cell(model("gpt2-small", stack, "gpu"))
        assert bytes_ == int(0.5 * GPU_MEMORY[0]) and "--memory-fraction" in what, stack
    tensorflow = model("gpt2-small", "tensorflow:eager", "gpu")
    assert half.for_cell(tensorflow)[0] == H100_BUDGET, "TensorFlow 2 has no fraction setting"


def test_an_unbounded_batch_is_said_to_be_no_answer() -> None:
    spec = model("gpt2-small", "jax:jit", "gpu", task="train")
    (answer,) = maxbatch.max_batches([spec], HOST_BUDGET, None)
    table = max_batch_table([answer], HOST_BUDGET, "gpu", None)
    assert "or more (no limit found)" in str(list(table.columns[3].cells))


def test_the_gpus_out_of_memory_errors_end_a_cell_oom() -> None:
    for what, text in ANSWERS["h100_memory"]["oom_errors"].items():
        kind, _, message = text.partition(": ")
        failure = classify(type(kind, (Exception,), {})(message))
        assert failure.status == "oom", what


def _device_bytes(spec: CellSpec) -> int:
    predicted = plan.device_prediction(spec)
    assert predicted is not None
    return predicted[0]


def _torch_oom_bytes(text: str) -> tuple[int, int]:
    """What a recorded CUDA out-of-memory error says the step needed at least: what torch had
    allocated plus what it asked for, and the bytes its allocator held reserved but free."""
    asked = re.search(r"Tried to allocate ([\d.]+) GiB", text)
    held = re.search(r"([\d.]+) GiB is allocated by PyTorch", text)
    free = re.search(r"([\d.]+) (GiB|MiB) is reserved by PyTorch but unallocated", text)
    assert asked and held and free, text
    unit = GIB if free.group(2) == "GiB" else 2**20
    return int((float(asked.group(1)) + float(held.group(1))) * GIB), int(
        float(free.group(1)) * unit
    )


def _torch_train(batch: int) -> tuple[int, int]:
    """GPT-2 small's train step on torch:eager on a GPU: the predicted device peak of its arrays
    and what the device must hold with the allocator's cached free blocks."""
    spec = model("gpt2-small", "torch:eager", "gpu", task="train", batch=batch)
    workload = workloads.get("gpt2-small")
    assert workload.device_memory_for is not None
    return workload.device_memory_for(spec.params, "torch")[0], _device_bytes(spec)


def test_torchs_train_step_prediction_covers_what_each_recorded_out_of_memory_needed() -> None:
    # Five errors on three GPUs (GPT-2 small's train step, seq 64): at each, torch had allocated
    # its saved activations (no attention scores: scaled_dot_product_attention keeps none) and
    # one or two logits-sized tensors, and asked for the next; the loss's backward holds three,
    # and the caching allocator keeps about one more reserved but free. The prediction before
    # counted the scores and two logits-sized tensors in all: 8 % low, and no free blocks.
    errors = ANSWERS["h100_memory"]["oom_errors"] | ANSWERS["h200_memory"]["oom_errors"]
    torch_errors = {what: text for what, text in errors.items() if what.startswith("torch")}
    assert len(torch_errors) == 5
    for what, text in torch_errors.items():
        arrays, device = _torch_train(int(what.rsplit(" ", 1)[1]))
        needed, free = _torch_oom_bytes(text)
        assert arrays >= needed and device >= needed + free, what
    # Where the loss's backward was the step that failed, the prediction is that step's need.
    for what in ("torch:eager batch 1059", "torch:eager batch 1742", "torch:eager batch 1889"):
        arrays, device = _torch_train(int(what.split()[-1]))
        needed, free = _torch_oom_bytes(errors[what])
        assert arrays < 1.01 * needed and device < 1.02 * (needed + free), what
    # Measured where the step ran (max_memory_allocated and reserved), small and large.
    peaks = ANSWERS["h200_memory"]["torch_device_peak_bytes"]
    reserved = ANSWERS["h200_memory"]["torch_device_reserved_bytes"]
    for what, batch in (
        ("torch:eager batch 64", 64),
        ("torch:eager batch 1742 expandable_segments:True", 1742),
        ("torch:eager batch 1491", 1491),
    ):
        arrays, device = _torch_train(batch)
        assert peaks[what] <= arrays < 1.1 * peaks[what], what
        assert reserved[what] <= device, what


def test_the_largest_batch_torch_is_given_runs_with_the_default_allocator_as_predicted() -> None:
    # The third H200 (2026-11-28) ran the answer --find-max-batch gives once the cached free
    # blocks are counted (1491 on that GPU): the step ran, 1.00x its predicted arrays
    # allocated and 0.99x the whole prediction reserved. Without the cached blocks the answer
    # was 1742, which ran out of memory with the default allocator (recorded above).
    spec = model("gpt2-small", "torch:eager", "gpu", task="train")
    h200 = plan.DeviceBudget(
        default_device_budget(
            "gpu", parse_gpu_memory(ANSWERS["h200_memory"]["nvidia_smi_memory_total"])
        )
        or 0
    )
    assert maxbatch.max_batch(spec, HOST_BUDGET, h200) == 1491
    arrays, device = _torch_train(1491)
    peak = ANSWERS["h200_memory"]["torch_device_peak_bytes"]["torch:eager batch 1491"]
    reserved = ANSWERS["h200_memory"]["torch_device_reserved_bytes"]["torch:eager batch 1491"]
    assert abs(peak / arrays - 1) < 0.01
    assert reserved <= device < 1.02 * reserved


def test_jax_train_step_prediction_is_within_ten_percent_of_xlas_own_buffer_assignment() -> None:
    # XLA's memory analysis of jax:jit's GPT-2 small train step compiled for the H200 and not
    # run (stackwars ir --device gpu): its arguments, outputs and temporaries. The prediction
    # is 4 % under it at batch 64 and 6 % over it at 1548, jax's largest batch predicted: so
    # the out-of-memory error there (one 97.6 GiB buffer, XLA's temporaries, recorded above)
    # came from what the allocator held beside the program, not from the program's need.
    analyses = ANSWERS["h200_memory"]["jax_memory_analysis"]
    h200_bytes = parse_gpu_memory(ANSWERS["h200_memory"]["nvidia_smi_memory_total"])[0]
    limit = 0.75 * h200_bytes  # jax's allocator's share of that GPU
    workload = workloads.get("gpt2-small")
    assert workload.device_memory_for is not None
    for batch in (64, 1548):
        analysis = analyses[f"jax:jit batch {batch}"]
        spec = model("gpt2-small", "jax:jit", "gpu", task="train", batch=batch)
        predicted = workload.device_memory_for(spec.params, "jax")[0]
        assert abs(predicted / analysis["peak_memory_in_bytes"] - 1) < 0.1, batch
        assert analysis["temp_size_in_bytes"] < analysis["peak_memory_in_bytes"] < limit
    assert "97.60GiB" in ANSWERS["h200_memory"]["oom_errors"]["jax:jit batch 1548"]
    asked = analyses["jax:jit batch 1548"]["temp_size_in_bytes"] / GIB
    assert round(asked, 2) == 97.60
