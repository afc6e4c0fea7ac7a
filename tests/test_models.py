"""The end-to-end models through stackwars's own machinery: registry and listing, memory
prediction and oom planning, --find-max-batch, and train-step parity across frameworks.

Per-family architecture tests live in tests/models/; forward parity of every model on every
stack against the float64 NumPy forward is part of tests/test_workload_contract.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from stackwars import workloads
from stackwars.cli import main
from stackwars.frameworks import missing_reason
from stackwars.frameworks.base import RunSettings
from stackwars.results.schema import Cell, CellSpec, Parity
from stackwars.runner import plan
from stackwars.runner.crosscheck import crosscheck
from stackwars.runner.isolate import run_in_worker
from stackwars.runner.protocol import Request
from stackwars.runner.worker import CellRun
from stackwars.timing.timer import TimingConfig
from stackwars.workloads.models import SPECS
from stackwars.workloads.models.adapter import ModelCell
from stackwars.workloads.models.gpt import GPT2_SMALL
from stackwars.workloads.models.spec import count, standard_init

GIB = 2**30
# This machine's memory (24 GiB) under the default budget share (75 %).
MACHINE_BUDGET = int(0.75 * 24 * GIB)
PUBLISHED = {
    "resnet50": 25_557_032,
    "bert-base": 109_482_240,
    "gpt2-small": 124_439_808,
    "vit-b16": 86_567_656,
    "gpt-neo-1.3b": 1_315_575_808,
    "llama-3.1-8b": 8_030_261_248,
}
TINY_TIMING = TimingConfig(
    steady_budget_s=0.02, min_steady_s=0.0, warmup_budget_s=0.02, min_blocks=3
)
TRAIN_STACKS = ("jax:jit", "torch:eager", "tensorflow:eager")


def model_spec(name: str, stack: str, **params: str | int) -> CellSpec:
    workload = workloads.get(name)
    return CellSpec(name, workload.resolve({**workload.tiny, **params}), stack)


def test_every_published_model_is_registered_with_its_published_count() -> None:
    assert {spec.name for spec in SPECS} == set(PUBLISHED)
    for spec in SPECS:
        assert count(spec.layout(spec.configs["full"])) == PUBLISHED[spec.name], spec.name


def test_weights_are_drawn_in_float32_with_each_kinds_spread() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    kernel = standard_init("h.0.mlp.kernel", (400, 300), rng)
    assert kernel.dtype == np.float32
    assert kernel.std() == pytest.approx(1 / 20, rel=0.02)  # 1/sqrt(fan-in 400)
    assert standard_init("wte.embedding", (500, 100), rng).std() == pytest.approx(0.02, rel=0.02)
    scale = standard_init("ln.scale", (50_000,), rng)
    assert (scale.mean(), scale.std()) == (pytest.approx(1, abs=0.01), pytest.approx(0.1, rel=0.02))
    var = standard_init("bn.var", (50_000,), rng)
    assert var.min() >= 1 and var.mean() == pytest.approx(1 + 0.1 * np.sqrt(2 / np.pi), abs=0.01)
    with pytest.raises(ValueError, match="name its last part after one of kernel"):
        standard_init("h.0.weird", (3,), rng)


def test_list_workloads_shows_each_model_parameter_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list", "workloads"]) == 0
    out = capsys.readouterr().out
    for published in PUBLISHED.values():
        assert f"{published:,}" in out


def full(name: str, stack: str, **params: str | int) -> CellSpec:
    workload = workloads.get(name)
    return CellSpec(name, workload.resolve(dict(params)), stack)


def test_llama_8b_float32_is_planned_oom_with_its_prediction_and_bfloat16_halves_weights() -> None:
    f32 = full("llama-3.1-8b", "torch:eager")
    (planned,) = plan.plan([f32], MACHINE_BUDGET)
    assert planned.skip_status == "oom"
    assert "predicted peak" in planned.skip_reason and "--force" in planned.skip_reason
    assert "model weights 29.9" in planned.skip_reason  # 8.03e9 float32 parameters in GiB
    bf16 = full("llama-3.1-8b", "torch:eager", dtype="bfloat16")
    assert "model weights 14.9" in plan.prediction(bf16)[1]
    assert plan.prediction(bf16)[0] < plan.prediction(f32)[0]
    (forced,) = plan.plan([f32], MACHINE_BUDGET, force=True)
    assert not forced.skip_reason


@pytest.mark.parametrize("stack", ["numpy:eager", "jax:jit", "torch:eager", "tensorflow:xla"])
def test_gpt_neo_inference_is_predicted_to_fit_this_machine(stack: str) -> None:
    need, detail = plan.prediction(full("gpt-neo-1.3b", stack))
    assert need < MACHINE_BUDGET, detail


def test_find_max_batch_is_the_largest_batch_whose_prediction_fits() -> None:
    from stackwars.instruments.maxbatch.predict import max_batch

    spec = full("gpt2-small", "jax:jit", task="train")
    budget = 8 * GIB
    best = max_batch(spec, budget)
    assert best > 0

    def need(batch: int) -> int:
        return plan.prediction(dataclasses.replace(spec, params={**spec.params, "batch": batch}))[0]

    assert need(best) <= budget < need(best + 1)
    assert max_batch(full("llama-3.1-8b", "torch:eager"), budget) == 0


def test_a_cell_predicted_not_to_fit_ends_oom_without_a_worker(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    code = main(
        ["run", "--workload", "gemm", "--param", "n=200000", "--stacks", "numpy",
         "--db", str(tmp_path / "db.sqlite"), "--json", str(out)]
    )  # fmt: skip
    assert code == 0
    text = out.read_text()
    assert '"status": "oom"' in text and "predicted peak" in text


def fingerprinted(stack: str, loss: float, weights: list[float], steps: list[float]) -> Cell:
    parity = Parity(
        reference="stacks",
        fingerprint=[loss, *weights],
        fingerprint_head=1,
        fingerprint_steps=steps,
        fingerprint_counts=[16] * (len(weights) // 16),
        computed_dtype="float32",
    )
    params = workloads.get("gpt2-small").resolve({"task": "train"})
    return Cell("gpt2-small", params, stack, "cpu", False, status="ok", parity=parity)


WEIGHTS = [0.01 * (i % 7 - 3) for i in range(400)]
STEPS = [1e-3 * (-1) ** i for i in range(400)]


def test_crosscheck_accepts_agreement_and_rejects_a_different_loss() -> None:
    anchor = fingerprinted("jax:jit", 2.5, WEIGHTS, STEPS)
    agreeing = fingerprinted("torch:eager", 2.5, WEIGHTS, STEPS)
    crosscheck(agreeing, [anchor])
    assert agreeing.status == "ok" and agreeing.parity.ok and not agreeing.warnings
    assert agreeing.parity.compared_with == "jax:jit"
    other_loss = fingerprinted("tensorflow:eager", 2.6, WEIGHTS, STEPS)
    crosscheck(other_loss, [anchor])
    assert other_loss.status == "mismatch" and "loss" in other_loss.reason
    # Like a miss against a reference: how far apart, what was allowed, what sets it.
    assert "of the weights' RMS where rtol=" in other_loss.reason
    assert "error_growth" in other_loss.reason


def test_crosscheck_allows_rare_sign_flips_but_not_a_wrong_tensor() -> None:
    anchor = fingerprinted("jax:jit", 2.5, WEIGHTS, STEPS)
    flips = {7, 100, 333}  # gradients at rounding level: the step went the other way
    flipped = [w + (2e-3 if i in flips else 0.0) for i, w in enumerate(WEIGHTS)]
    rare = fingerprinted("torch:eager", 2.5, flipped, STEPS)
    crosscheck(rare, [anchor])
    assert rare.status == "ok", rare.reason
    assert any("3 moved the other way" in w for w in rare.warnings)
    # One whole weight tensor (samples 32..47) not updated: 16 of 400 samples, 4 %.
    stale = [w + (1e-3 if 32 <= i < 48 else 0.0) for i, w in enumerate(WEIGHTS)]
    skipped = fingerprinted("tensorflow:xla", 2.5, stale, STEPS)
    crosscheck(skipped, [anchor])
    assert skipped.status == "mismatch" and "16 of 400 sampled updated weights" in skipped.reason
    # Five flips in one tensor of 16 are too many for rounding, even if rare overall.
    clustered = [w + (2e-3 if 64 <= i < 69 else 0.0) for i, w in enumerate(WEIGHTS)]
    one_tensor = fingerprinted("torch:compile", 2.5, clustered, STEPS)
    crosscheck(one_tensor, [anchor])
    assert one_tensor.status == "mismatch" and "worst weight tensor has 31%" in one_tensor.reason


def test_crosscheck_leaves_out_weights_whose_step_is_rounding_noise() -> None:
    # Every tenth weight has a gradient near zero: a partial step, in a noisy direction.
    steps = [1e-3 if i % 10 else 6e-4 for i in range(400)]
    other_steps = [1e-3 if i % 10 else -8e-4 for i in range(400)]
    noisy = [w + (1.4e-3 if i % 10 == 0 else 0.0) for i, w in enumerate(WEIGHTS)]
    anchor = fingerprinted("jax:jit", 2.5, WEIGHTS, steps)
    other = fingerprinted("torch:eager", 2.5, noisy, other_steps)
    crosscheck(other, [anchor])
    assert other.status == "ok", other.reason
    assert any("40 took a partial AdamW step" in w for w in other.warnings)


def run_cell(spec: CellSpec, tmp_path: Path) -> Cell:
    request = Request(spec, RunSettings(cache_dir=str(tmp_path)), TINY_TIMING)
    return CellRun(request).run()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_one_train_step_agrees_across_frameworks_at_tiny_scale(name: str, tmp_path: Path) -> None:
    for framework in ("jax", "torch", "tensorflow"):
        if missing_reason(framework):
            pytest.skip(missing_reason(framework) or "")
    cells: list[Cell] = []
    for stack in TRAIN_STACKS:
        cell = run_cell(model_spec(name, stack, task="train"), tmp_path)
        crosscheck(cell, cells)
        assert cell.status == "ok", f"{stack}: {cell.reason}"
        cells.append(cell)
    assert [c.parity.compared_with for c in cells] == [None, "jax:jit", "jax:jit"]
    numpy_cell = run_cell(model_spec(name, "numpy:eager", task="train"), tmp_path)
    assert numpy_cell.status == "unsupported" and "autodiff" in numpy_cell.reason


@pytest.mark.slow
@pytest.mark.parametrize("stack", ["jax:jit", "torch:eager"])
def test_memory_prediction_is_within_a_factor_of_two_of_the_measured_peak(
    stack: str, tmp_path: Path
) -> None:
    if missing_reason(stack.partition(":")[0]):
        pytest.skip(missing_reason(stack.partition(":")[0]) or "")
    spec = model_spec("gpt2-small", stack, task="train")
    request = Request(spec, RunSettings(cache_dir=str(tmp_path)), TINY_TIMING)
    cell = run_in_worker(request, timeout_s=300, budget_bytes=4 * GIB)
    assert cell.status == "ok", cell.reason
    measured = cell.memory.peak_tree_rss_bytes
    predicted = plan.prediction(spec)[0]
    assert measured is not None
    assert 0.5 < predicted / measured < 2.0, (predicted, measured)


def test_param_overrides_a_suite_for_the_workloads_that_have_it() -> None:
    from stackwars.errors import ParameterError
    from stackwars.suites import get_suite

    suite = get_suite("stack-wars")
    values = plan.suite_param_args(suite, ["scale=tiny"])
    cells = plan.suite_cells(suite, None, "cpu", values)
    models = [c for c in cells if c.workload in PUBLISHED]
    assert models and all(c.params["scale"] == "tiny" for c in models)
    assert any(c.workload == "ffn" and "scale" not in c.params for c in cells)
    with pytest.raises(ParameterError, match="no workload of suite 'models' has"):
        plan.suite_param_args(get_suite("models"), ["n=3"])


def test_find_max_batch_prints_one_row_per_cell_and_runs_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db.sqlite"
    args = [
        *("run", "--workload", "gpt2-small", "--param", "task=infer,train"),
        *("--stacks", "numpy,torch:eager", "--memory-budget", "8GiB", "--find-max-batch"),
        *("--db", str(db)),
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Largest batch predicted to fit 8.00 GiB" in out
    assert "unsupported" in out  # numpy cannot train
    assert not db.exists()


@pytest.mark.slow
def test_a_models_ir_is_captured_as_it_is_timed_on_jax_and_torch_xla(tmp_path: Path) -> None:
    from stackwars.config import RunOptions
    from stackwars.frameworks import stack_missing_reason
    from stackwars.service.api import capture_stack

    if stack_missing_reason("torch", "xla"):
        pytest.skip(stack_missing_reason("torch", "xla") or "")
    for stack in ("jax:jit", "torch:xla"):
        spec = model_spec("gpt2-small", stack)
        index = capture_stack(spec, RunOptions(), tmp_path / stack.replace(":", "_"))
        stages = index["stages"]
        assert isinstance(stages, dict) and "stablehlo" in stages, index["unavailable"]
        text = (tmp_path / stack.replace(":", "_") / stages["stablehlo"]).read_text()
        assert "dot_general" in text


def test_parity_allows_float32_stacks_a_multiple_of_the_float32_controls_own_error() -> None:
    import numpy as np

    from stackwars.runner import parity

    workload = workloads.get("gpt2-small")
    params = workload.resolve(workload.tiny)
    reference = (np.linspace(-1.0, 1.0, 64).reshape(8, 8),)
    control = (reference[0] + 1e-4,)  # what float32 rounding alone does to this result

    def verdict(offset: float, with_control: bool) -> bool:
        out = [(reference[0] + offset).astype(np.float32)]
        used = control if with_control else None
        result, _ = parity.check(workload, params, out, reference, control=used)
        return bool(result.ok)

    assert verdict(5e-4, with_control=True)
    assert not verdict(5e-4, with_control=False)
    assert not verdict(2e-3, with_control=True)


@pytest.mark.parametrize("task", ["infer", "train"])
def test_torch_places_only_the_inputs_and_moves_its_module_once(task: str) -> None:
    # On an H100 (2026-11-26) torch's inference cells held the weights twice on the device:
    # once placed by to_device, once in the module they were copied into. The weights now
    # reach the device only inside the module; to_device sees the inputs and labels alone.
    if missing_reason("torch"):
        pytest.skip(missing_reason("torch") or "")
    import torch

    workload = workloads.get("gpt2-small")
    params = workload.resolve({**workload.tiny, "task": task})
    inputs = workload.make_inputs(params, 0)
    placed: list[tuple[int, ...]] = []

    def to_device(arrays: Sequence[Any]) -> tuple[Any, ...]:
        placed.extend(tuple(a.shape) for a in arrays)
        return tuple(torch.as_tensor(a) for a in arrays)

    cell = ModelCell(GPT2_SMALL, params, "torch")
    bound = cell.bind(inputs, to_device, "eager")
    _, _, rest = cell.split(inputs)
    assert placed == [tuple(a.shape) for a in rest]  # token ids (and labels), no weight
    bound.reset()
    bound.fn(*bound.args)


@pytest.mark.parametrize("model", ["gpt2-small", "bert-base", "llama-3.1-8b", "vit-b16"])
def test_scale_tiny_brings_sizes_that_fit_the_tiny_model(model: str) -> None:
    workload = workloads.get(model)
    params = workload.resolve({"scale": "tiny"})
    assert params["scale"] == "tiny"
    for name, value in workload.tiny.items():
        assert params[name] == value
    workload.work(params)  # raises when a size does not fit the tiny config


def test_scale_tiny_on_a_suite_and_an_explicit_misfit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db.sqlite")
    assert main(["run", "--suite", "models", "--param", "scale=tiny", "--find-max-batch"]) == 0
    code = main(["run", "--workload", "gpt2-small", "--param", "scale=tiny", "--param", "seq=64"])
    err = capsys.readouterr().err
    assert code == 2
    assert "seq=64 exceeds gpt2-small's 32 positions at scale=tiny; use seq<=32" in err
    assert not Path(db).exists()
