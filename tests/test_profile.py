"""Per-operation profiles (``stackwars profile``): how a trace becomes time per operation and
per category, the readers of each framework's trace, the registry's profilers, and the
profile worker on a framework declared only in tests/data/fake_framework.py. The profiles of
the real stacks, each in its worker, are in test_profile_workers.py."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
from rich.console import Console

from stackwars.frameworks import FRAMEWORKS, all_stacks
from stackwars.frameworks.base import RunSettings
from stackwars.instruments.profile import worker as profile_worker
from stackwars.ir.hlo import instructions
from stackwars.profiling import analyse, categories, profile_jax, profile_tensorflow, profile_torch
from stackwars.profiling.capture import no_profiler_reason, profiler
from stackwars.profiling.result import AddsUp, Profile
from stackwars.profiling.trace import CALL_ANNOTATION, OpEvent, Trace
from stackwars.report import profile as render
from stackwars.results.schema import CellSpec
from stackwars.runner import worker
from stackwars.runner.protocol import Request
from stackwars.timing.timer import TimingConfig

FAKE_FILE = Path(__file__).parent / "data" / "fake_framework.py"
HLO = """HloModule jit_f, is_scheduled=true

%region_0.2 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add.9 = f32[] add(%a, %b)
}

%fused_computation (param_0.1: f32[], param_1.1: f32[8,8]) -> f32[8] {
  %param_1.1 = f32[8,8]{1,0} parameter(1)
  %param_0.1 = f32[] parameter(0)
  ROOT %sum.0 = f32[8]{0} reduce(%param_1.1, %param_0.1), dimensions={0}, to_apply=%region_0.2
}

%fused_computation.1 (param_0.2: f32[8,8], param_1.2: f32[8,8]) -> f32[8,8] {
  %param_0.2 = f32[8,8]{1,0} parameter(0)
  %param_1.2 = f32[8,8]{1,0} parameter(1)
  ROOT %dot.0 = f32[8,8]{1,0} dot(%param_0.2, %param_1.2), lhs_contracting_dims={1}
}

ENTRY %main.3 (a.1: f32[8,8], b.1: f32[8,8]) -> f32[8] {
  %a.1 = f32[8,8]{1,0} parameter(0)
  %b.1 = f32[8,8]{1,0} parameter(1)
  %constant.6 = f32[] constant(0)
  %ynn_fusion.1 = f32[8,8]{1,0} fusion(%a.1, %b.1), kind=kCustom, calls=%fused_computation.1
  %copy.2 = f32[8,8]{0,1} copy(%ynn_fusion.1)
  ROOT %ynn_fusion = f32[8]{0} fusion(%constant.6, %copy.2), kind=kCustom, calls=%fused_computation
}
"""


def op(name: str, start: float, end: float, thread: str = "main", module: str = "") -> OpEvent:
    return OpEvent(name, thread, start, end - start, module)


def trace(ops: list[OpEvent], windows: list[tuple[float, float]]) -> Trace:
    calls = [(end - start) * 1e-6 for start, end in windows]
    return Trace(ops=ops, windows=windows, threads=["main"], call_s=calls)


def test_each_moment_goes_to_the_innermost_operation_of_a_thread() -> None:
    ops = [op("aten::linear", 0, 100), op("aten::addmm", 10, 40), op("aten::t", 50, 55)]
    shares, outermost = analyse.attribute(ops, [(0.0, 120.0)])
    assert shares == [pytest.approx(65.0), pytest.approx(30.0), pytest.approx(5.0)]
    assert outermost == [True, False, False]


def test_operations_on_two_threads_split_the_moments_they_share() -> None:
    ops = [op("fusion", 0, 100, "xla"), op("Exp:Exp", 50, 150, "executor")]
    shares, outermost = analyse.attribute(ops, [(0.0, 200.0)])
    assert shares == [pytest.approx(75.0), pytest.approx(75.0)]
    assert outermost == [True, True]


def test_only_the_time_inside_the_calls_counts() -> None:
    # An operation spanning the gap between two calls counts only inside them.
    shares, _ = analyse.attribute([op("copy", 90, 130)], [(0.0, 100.0), (120.0, 200.0)])
    assert shares == [pytest.approx(20.0)]


def test_the_categories_add_up_to_the_traced_time_and_name_xla_operations_from_the_hlo() -> None:
    windows = [(0.0, 100.0), (200.0, 300.0)]
    ops = []
    for start, _ in windows:
        ops += [
            op("ynn_fusion.1", start + 10, start + 50, module="jit_f"),
            op("copy.2", start + 50, start + 60, module="jit_f"),
            op("ynn_fusion", start + 60, start + 70, module="jit_f"),
            op("unknown.7", start + 70, start + 75, module="jit_f"),
        ]
    found = analyse.fill(Profile("jax:jit", "gemm", {}), trace(ops, windows), instructions(HLO))
    assert found.calls == 2 and found.ops_per_call == 4 and found.fusions_per_call == 2
    assert sum(found.categories.values()) == pytest.approx(found.traced_s)
    assert found.traced_s == pytest.approx(100e-6)
    assert found.categories == pytest.approx(
        {
            categories.MATMUL: 40e-6,
            categories.REDUCTION: 10e-6,
            categories.MOVEMENT: 10e-6,
            categories.ELEMENTWISE: 5e-6,  # unknown.7: not in the HLO, named by its name
            categories.OVERHEAD: 35e-6,
        }
    )
    rows = {row.name: row for row in found.ops}
    assert rows["ynn_fusion.1"].hlo == "fusion: dot"
    assert rows["ynn_fusion"].hlo == "fusion: reduce"  # the reducer's add is not counted
    assert found.hlo_joined == pytest.approx(60 / 65)
    assert found.xla_modules == ["jit_f"]
    assert found.adds_up is not None and found.adds_up.within


def test_calls_that_recorded_no_operation_are_named_in_the_notes() -> None:
    windows = [(0.0, 100.0), (200.0, 300.0), (400.0, 500.0)]
    ops = [op("MatMul", 210, 260)]
    found = analyse.fill(Profile("tensorflow:graph", "gemm", {}), trace(ops, windows), {})
    assert found.ops_per_call == pytest.approx(1 / 3)
    assert any(
        note.startswith("2 of 3 profiled calls recorded no operation") for note in found.notes
    )
    every = analyse.fill(Profile("tensorflow:graph", "gemm", {}), trace(ops, windows[1:2]), {})
    assert not every.notes


def test_a_trace_that_cannot_be_split_into_calls_is_refused() -> None:
    broken = Trace(ops=[], windows=[(0.0, 1.0)], threads=[], call_s=[1e-6, 1e-6])
    with pytest.raises(ValueError, match="cannot be split into calls"):
        analyse.fill(Profile("jax:jit", "gemm", {}), broken, {})


def test_the_host_clock_check_fails_when_the_trace_misses_time() -> None:
    assert AddsUp(traced_s=1e-3, measured_s=1.05e-3).within
    assert not AddsUp(traced_s=0.5e-3, measured_s=1e-3).within
    assert AddsUp(traced_s=10e-6, measured_s=40e-6).within  # within the absolute floor


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("aten::mm", categories.MATMUL),
        ("aten::_scaled_dot_product_flash_attention_for_cpu", categories.MATMUL),
        ("matmul:_MklMatMul", categories.MATMUL),
        ("aten::sum", categories.REDUCTION),
        ("wrapped_reduce-window", categories.REDUCTION),
        ("aten::_to_copy", categories.MOVEMENT),
        ("_MklTranspose", categories.MOVEMENT),
        ("graph_0_cpp_fused_exp_gt_mul_sub_sum_where_0", categories.ELEMENTWISE),
        ("aten::native_layer_norm", categories.ELEMENTWISE),
        ("Greater:Greater", categories.ELEMENTWISE),
        ("aten::select", categories.MOVEMENT),
        ("wrapped_select", categories.ELEMENTWISE),  # XLA's select: elementwise
    ],
)
def test_operations_are_categorised_by_name(name: str, category: str) -> None:
    assert categories.of_name(name) == category


def test_an_xla_operation_is_categorised_by_what_it_runs() -> None:
    assert categories.of_hlo(["broadcast", "multiply", "reduce"]) == categories.ELEMENTWISE
    assert categories.of_hlo(["broadcast", "reduce"]) == categories.REDUCTION
    assert categories.of_hlo(["copy", "transpose"]) == categories.MOVEMENT
    assert categories.of_hlo(["custom-call:__onednn$matmul"]) == categories.MATMUL


def test_torch_traces_leave_torch_compiles_wrappers_out() -> None:
    data = {
        "traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": CALL_ANNOTATION, "ts": 0, "dur": 100},
            {"ph": "X", "cat": "cpu_op", "name": "Torch-Compiled Region: 0/0", "ts": 1, "dur": 98},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 5, "dur": 50, "tid": 7},
            {"ph": "X", "cat": "cpu_op", "name": "graph_0_cpp_fused_0", "ts": 60, "dur": 9},
            {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "ts": -5, "dur": 500},
        ]
    }
    found = profile_torch.read_chrome_trace(data)
    assert [o.name for o in found.ops] == ["aten::mm", "graph_0_cpp_fused_0"]
    assert found.windows == [(0.0, 100.0)]
    assert found.threads == ["None/7", "None/None"]


def test_jax_traces_give_xla_operations_with_their_module() -> None:
    data = {
        "traceEvents": [
            {"ph": "M", "pid": 1, "tid": 2, "name": "thread_name", "args": {"name": "xla"}},
            {"ph": "X", "pid": 1, "tid": 3, "name": CALL_ANNOTATION, "ts": 0, "dur": 10},
            {"ph": "X", "pid": 1, "tid": 3, "name": "PjitFunction(f)", "ts": 1, "dur": 3},
            {
                "ph": "X",
                "pid": 1,
                "tid": 2,
                "name": "fusion",
                "ts": 4,
                "dur": 5,
                "args": {"hlo_op": "fusion", "hlo_module": "jit_f"},
            },
        ]
    }
    found = profile_jax.read_chrome_trace(data)
    assert found.ops == [OpEvent("fusion", "xla (2)", 4.0, 5.0, "jit_f")]
    assert found.threads == ["thread (3)", "xla (2)"]


def tf_event(
    name: str, start: float, end: float, thread: str = "python", display: str = "", **stats: object
) -> profile_tensorflow._Event:
    """An event as tf.profiler records it: a graph node's is named "node:Type" and displayed
    as its type."""
    return profile_tensorflow._Event(name, thread, start, end - start, display, dict(stats))


def test_tensorflow_traces_give_eager_ops_graph_nodes_and_xla_operations() -> None:
    events = [
        tf_event(CALL_ANNOTATION, 0, 100),
        tf_event("EagerExecute", 1, 20, eager_op="Exp", is_func=None),
        tf_event("KernelAndDeviceFunc::Run", 5, 15),
        tf_event("EagerExecute", 21, 60, eager_op="__inference_f_24", is_func=1),
        tf_event("KernelAndDeviceFunc::Run", 22, 59),
        tf_event("matmul:_MklMatMul", 25, 40, "executor", "_MklMatMul"),
        tf_event("__inference_f_24:__inference_f_24", 41, 58, "executor", "__inference_f_24"),
        tf_event("select_fusion", 42, 50, "executor", hlo_op="select_fusion", hlo_module="m"),
        tf_event("EagerExecute", 61, 70, eager_op="SyncDevice", is_func=None),
        tf_event("KernelAndDeviceFunc::Run", 62, 69),
    ]
    found = profile_tensorflow.trace_of(events)
    assert sorted(o.name for o in found.ops) == ["Exp", "_MklMatMul", "select_fusion"]
    assert found.windows == [(0.0, 100.0)]
    chrome = profile_tensorflow.chrome_trace(events)
    assert len([e for e in chrome["traceEvents"] if e["ph"] == "X"]) == len(events)
    json.dumps(chrome)  # Perfetto reads it as JSON


def test_every_stack_has_a_profiler_or_says_why_not() -> None:
    for stack in map(str, all_stacks()):
        found = profiler(stack)
        if found is None:
            assert no_profiler_reason(stack), stack
            continue
        module, _, function = found.profiler.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), stack
        assert found.blind_spots, stack
    assert profiler("numpy:eager") is None
    assert "no profiler of its own" in no_profiler_reason("numpy:eager")


def test_a_profile_travels_as_json_and_renders() -> None:
    windows = [(0.0, 100.0)]
    made = analyse.fill(
        Profile("torch:eager", "gemm", {"n": 8}, steady_s=80e-6),
        trace([op("aten::mm", 10, 90)], windows),
        {},
    )
    again = Profile.from_dict(json.loads(json.dumps(made.to_dict())))
    assert again == made and again.overhead == pytest.approx(0.25)
    missing = Profile(
        "numpy:eager", "gemm", {"n": 8}, "unsupported", no_profiler_reason("numpy:eager")
    )
    console = Console(record=True, width=200)
    console.print(render.side_by_side([again, missing], "gemm"))
    console.print(render.operations(again, 5))
    for line in render.not_profiled([again, missing]):
        console.print(line)
    again.blind_spots, again.notes = "the OpenMP threads", ["1 of 1 profiled calls was odd"]
    for line in render.caveats([again, missing]):
        console.print(line)
    text = console.export_text()
    assert "torch:eager" in text and "aten::mm" in text and "+25%" in text
    assert "numpy:eager: unsupported: NumPy has no profiler" in text
    assert "torch:eager: cannot see: the OpenMP threads" in text
    assert "torch:eager: 1 of 1 profiled calls was odd" in text
    assert render.caveats([missing]) == []


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("fake_framework", FAKE_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "fake_framework", module)
    spec.loader.exec_module(module)
    monkeypatch.setitem(FRAMEWORKS, module.NAME, module.INFO)
    from stackwars import workloads

    monkeypatch.setitem(workloads.registry(), module.WORKLOAD.name, module.WORKLOAD)
    return module


def test_the_profile_worker_profiles_a_framework_declared_only_in_its_registry_entry(
    fake: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The profile worker's work, in process (without the home-folder redirections it would
    # make in this test process's environment).
    monkeypatch.setattr(worker, "home_environment", lambda settings: {})
    # A worker reports its progress in a file in its working directory: the test's, not the
    # repository (a progress.txt written there was once committed).
    monkeypatch.chdir(tmp_path)
    spec = CellSpec(fake.WORKLOAD.name, {"n": 64}, f"{fake.NAME}:traced", "cpu")
    timing = TimingConfig(steady_budget_s=0.05, warmup_budget_s=0.2, min_steady_s=0.01)
    request = Request(spec, RunSettings(cache_dir=str(tmp_path / "cache")), timing)
    found = profile_worker.profile_cell(request, tmp_path, calls=4)
    assert found.status == "ok", found.reason
    assert found.calls == 4 and found.steady_s and found.profiled_s
    assert [row.name for row in found.ops] == ["axpy"]
    assert sum(found.categories.values()) == pytest.approx(found.traced_s)
    assert found.adds_up is not None and found.adds_up.within
    assert json.loads(Path(found.files["chrome"]).read_text(encoding="utf-8"))["traceEvents"]
    other = CellSpec(fake.WORKLOAD.name, {"n": 64}, f"{fake.NAME}:eager", "cpu")
    refused = profile_worker.profile_cell(Request(other, request.settings, timing), tmp_path, 4)
    assert refused.status == "unsupported" and "fakenp:eager" in refused.reason
