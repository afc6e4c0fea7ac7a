"""Each framework, in process, at tiny sizes: the worker's calls in the worker's order.

Slow parts are bounded on purpose: torch.compile runs once (about 10 s with a cold cache).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stackwars.frameworks import FRAMEWORKS, load_framework
from stackwars.frameworks.base import DeviceUnavailable, Framework, FrameworkInfo, RunSettings
from stackwars.frameworks.tensorflow import xla_compile_s

COMPILING = {("jax", "jit"), ("torch", "compile"), ("tensorflow", "graph"), ("tensorflow", "xla")}
PHASE_KEYS = {
    ("jax", "eager"): {"trace_s", "lower_s", "compile_s", "execute_s"},
    ("jax", "jit"): {"trace_s", "lower_s", "compile_s", "execute_s"},
    ("torch", "compile"): {"trace_s", "compile_s", "execute_s"},
    ("tensorflow", "graph"): {"trace_s", "optimize_and_execute_s"},
    ("tensorflow", "xla"): {"trace_s", "compile_and_execute_s"},
}
OWN_PROCESS = "needs a process of its own; run through workers in test_torch_xla.py"
# The Keras stacks pick their backend once per process: tests/test_keras.py runs them in
# processes of their own, through the same worker code.
NATIVE = {name: info for name, info in FRAMEWORKS.items() if info.runs_on is None}


def marks(info: FrameworkInfo, mode: str) -> Any:
    """Skipped where the mode needs a process of its own; slow where it compiles."""
    if info.needs_own_process(mode):
        return pytest.mark.skip(reason=OWN_PROCESS)
    return pytest.mark.slow if mode != "eager" else ()


STACKS = [
    pytest.param(
        name,
        mode,
        id=f"{name}:{mode}",
        marks=marks(info, mode),
    )
    for name, info in NATIVE.items()
    for mode in info.modes
]
GPU_FRAMEWORKS = [name for name, info in NATIVE.items() if "gpu" in info.devices]


def make_affine() -> Callable[..., Any]:
    """A fresh function object each time, so that no compile cache keyed on it is reused."""

    def affine(x: Any, y: Any) -> Any:
        return x @ y * 2 + 1, {"sum": x + y}

    return affine


def ready(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **settings: Any) -> Framework:
    """A framework after environment, load and init, as a worker leaves it."""
    pytest.importorskip(FRAMEWORKS[name].import_name)
    framework = load_framework(name)
    run_settings = RunSettings(cache_dir=str(tmp_path), **settings)
    for variable, value in framework.environment(run_settings).items():
        monkeypatch.setenv(variable, value)
    framework.load()
    framework.init(run_settings)
    return framework


@pytest.fixture
def restore_jax_x64() -> Iterator[None]:
    jax = pytest.importorskip("jax")
    before = jax.config.values["jax_enable_x64"]
    yield
    jax.config.update("jax_enable_x64", before)


def check_phases(phases: dict[str, float], total_s: float, expected: set[str]) -> None:
    assert all(seconds >= 0 for seconds in phases.values()), phases
    # Keys under "of_compile." are parts of compile_s, not phases of their own.
    top = {key: seconds for key, seconds in phases.items() if not key.startswith("of_compile.")}
    assert set(top) == expected
    assert sum(top.values()) <= total_s + 1e-3, phases


@pytest.mark.parametrize(("name", "mode"), STACKS)
def test_stack_matches_numpy_and_counts_compiles(
    name: str, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    framework = ready(name, tmp_path, monkeypatch)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2)]
    arrays = framework.to_device(inputs)
    fn = framework.prepare(make_affine(), mode)

    before = framework.compile_count()
    start = time.perf_counter()
    out = framework.first_call(fn, arrays)
    framework.sync(out)
    total_s = time.perf_counter() - start
    after_first = framework.compile_count()
    phases = framework.first_run_phases(total_s)

    framework.sync(fn(*arrays))
    assert framework.compile_count() == after_first, "a second call with same shapes compiled"
    if (name, mode) in COMPILING:
        assert after_first > before
    check_phases(phases, total_s, PHASE_KEYS.get((name, mode), set()))

    x, y = inputs
    expected = [x @ y * 2 + 1, x + y]
    for got, want in zip(framework.to_host(out), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


ACCOUNTED = ["numpy", "torch"]  # the frameworks whose call_peak_bytes counts on the CPU


@pytest.mark.parametrize("name", ACCOUNTED)
def test_a_call_s_peak_bytes_repeat_exactly_and_see_an_extra_array(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deterministic gate's count: the same call reads the same bytes; a call that holds a
    second 256 KiB result beside the first reads at least 256 KiB more."""
    framework = ready(name, tmp_path, monkeypatch)
    (a,) = framework.to_device([np.ones((256, 256), np.float32)])
    size = 256 * 256 * 4

    def once() -> Any:
        return framework.sync(a + a)

    def twice() -> Any:
        return framework.sync((a + a, a + a))  # two results alive at once (no elision)

    # The process's first traced call also counts what the tracing sets up once (32 bytes of
    # NumPy's, 2026-11-29): a worker makes one traced call, after the same warm calls.
    framework.call_peak_bytes(once)
    plain = [framework.call_peak_bytes(once) for _ in range(3)]
    assert plain[0] is not None and plain[0] >= size and len(set(plain)) == 1, plain
    held = framework.call_peak_bytes(twice)
    assert held is not None and held - plain[0] >= size


@pytest.mark.parametrize("name", ["jax", "tensorflow"])
def test_a_framework_without_accounting_says_none_and_does_not_call(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    framework = ready(name, tmp_path, monkeypatch)
    assert framework.call_peak_bytes(lambda: pytest.fail("called")) is None


def test_jax_jit_gives_the_program_it_compiles_and_eager_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deterministic gate's operation count: jax:jit's StableHLO for the arguments, the
    same each time it is read, one operation more for a function with one more; jax:eager
    has no program."""
    framework = ready("jax", tmp_path, monkeypatch)
    (a,) = framework.to_device([np.ones((8, 8), np.float32)])
    plain, more = (
        framework.prepare(lambda x: x @ x, "jit"),
        framework.prepare(lambda x: x @ x + 1, "jit"),
    )
    framework.sync(plain(a))
    first, again = framework.compiled_program(plain, [a]), framework.compiled_program(plain, [a])
    assert first is not None and first == again and "stablehlo.dot_general" in first.text
    other = framework.compiled_program(more, [a])
    assert other is not None and "stablehlo.add" in other.text and other.text != first.text
    assert framework.compiled_program(framework.prepare(lambda x: x @ x, "eager"), [a]) is None


def test_tensorflow_gives_the_program_of_each_compiling_mode_and_eager_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tensorflow:xla's HLO and tensorflow:graph's op list, the same each time they are read;
    none in eager."""
    framework = ready("tensorflow", tmp_path, monkeypatch)
    (a,) = framework.to_device([np.ones((8, 8), np.float32)])
    xla, graph = (
        framework.prepare(lambda x: x @ x, "xla"),
        framework.prepare(lambda x: x @ x, "graph"),
    )
    framework.sync(xla(a))
    framework.sync(graph(a))
    hlo = framework.compiled_program(xla, [a])
    assert hlo is not None and " dot(" in hlo.text and hlo == framework.compiled_program(xla, [a])
    ops = framework.compiled_program(graph, [a])
    assert ops is not None and "MatMul" in ops.text.split()
    assert framework.compiled_program(framework.prepare(lambda x: x @ x, "eager"), [a]) is None


def test_xla_compile_time_is_summed_from_tensorflows_log_lines() -> None:
    # As TensorFlow 2.21 writes them (the second function's line made up from the first).
    log = (
        "I0000 00:00:1795973743.349305    7218 device_compiler.h:208] Compiled cluster using "
        "XLA!  This line is logged at most once for the lifetime of the process.\n"
        "I0000 00:00:1795973743.349371    7218 device_compilation_profiler.cc:113] Compiled "
        "__inference_<lambda>_13 1 times, compile time: 123960 us, cumulative: 123960 us "
        "(0 us / 124 ms)\n"
        "I0000 00:00:1795973743.351000    7218 device_compilation_profiler.cc:113] Compiled "
        "__inference_step_30 2 times, compile time: 1000 us, cumulative: 5000 us (1 ms / 5 ms)\n"
    )
    assert xla_compile_s(log) == pytest.approx(0.12496)
    assert xla_compile_s("I0000 device_compilation_profiler.cc] nothing compiled\n") is None


@pytest.mark.parametrize("name", list(NATIVE))
def test_unknown_mode_is_refused(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    framework = ready(name, tmp_path, monkeypatch)
    with pytest.raises(ValueError, match="no mode 'bogus'"):
        framework.prepare(make_affine(), "bogus")


@pytest.mark.slow
@pytest.mark.parametrize(("x64", "dtype"), [(True, np.float64), (False, np.float32)])
@pytest.mark.usefixtures("restore_jax_x64")
def test_jax_x64_decides_the_computed_dtype(
    x64: bool, dtype: type, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    framework = ready("jax", tmp_path, monkeypatch, x64=x64)
    (array,) = framework.to_device([np.ones((4, 4), dtype=np.float64)])
    out = framework.first_call(framework.prepare(lambda x: x * 2, "jit"), [array])
    framework.sync(out)
    (host,) = framework.to_host(out)
    assert host.dtype == dtype
    assert framework.runtime_settings()["x64"] is x64


@pytest.mark.parametrize("name", GPU_FRAMEWORKS)
def test_missing_gpu_is_a_clear_error(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The framework itself says it sees no gpu (this machine has none): DeviceUnavailable,
    whose reason names the CPU-only build and the extra that fixes it."""
    pytest.importorskip(FRAMEWORKS[name].import_name)
    framework = load_framework(name)
    framework.load()
    settings = RunSettings(device="gpu", cache_dir=str(tmp_path))
    try:
        framework.init(settings)
    except DeviceUnavailable as exc:
        assert str(exc).startswith("no gpu here: cpu only:")
        assert "stackwars[cuda]" in str(exc)
    else:
        pytest.skip(f"{name} found a gpu on this machine")


def test_warm_jax_cache_lives_in_the_cell_folder(tmp_path: Path) -> None:
    framework = load_framework("jax")
    warm = framework.environment(RunSettings(cache="warm", cache_dir=str(tmp_path)))
    cold = framework.environment(RunSettings(cache="cold", cache_dir=str(tmp_path)))
    assert warm["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / "jax")
    assert warm["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "0"
    assert cold["JAX_ENABLE_COMPILATION_CACHE"] == "false"
    assert "JAX_COMPILATION_CACHE_DIR" not in cold


@pytest.mark.slow
def test_jax_runs_a_devices_calls_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The timer synchronises only a block's last output; that is right only if, once the
    last call's result is ready, every earlier call's is too."""
    framework = ready("jax", tmp_path, monkeypatch)
    fn = framework.prepare(lambda x: x * 2.0 + 1.0, "jit")
    (x,) = framework.to_device([np.ones((256, 256), dtype=np.float32)])
    for _ in range(20):
        outputs = [fn(x) for _ in range(16)]
        framework.sync(outputs[-1])
        assert all(output.is_ready() for output in outputs)
