"""IR of TensorFlow: StableHLO/HLO/optimized HLO for tensorflow:xla, the op list for graph."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stackwars.ir.capture import Captured, attempt

XLA_STAGES = {"stablehlo": "stablehlo", "hlo": "hlo", "optimized_hlo": "optimized_hlo"}


def _positional(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` behind plain positional parameters: tf.function binds a library function's own
    keyword parameters (tf.linalg.matmul's transpose_a...), which get_compiler_ir rejects."""

    def call(*inputs: Any) -> Any:
        return fn(*inputs)

    return call


def capture_xla(fn: Callable[..., Any], args: tuple[Any, ...], framework: Any) -> Captured:
    import tensorflow as tf

    del framework
    function = tf.function(_positional(fn), jit_compile=True)
    compiler_ir = function.experimental_get_compiler_ir(*args)
    captured: dict[str, str] = {}
    failed: dict[str, str] = {}
    for stage, tf_stage in XLA_STAGES.items():
        attempt(captured, failed, stage, lambda tf_stage=tf_stage: compiler_ir(stage=tf_stage))
    return captured, failed


def capture_graph(fn: Callable[..., Any], args: tuple[Any, ...], framework: Any) -> Captured:
    import tensorflow as tf

    del framework
    graph = tf.function(_positional(fn)).get_concrete_function(*args).graph
    captured: dict[str, str] = {}
    failed: dict[str, str] = {}
    attempt(
        captured,
        failed,
        "graph_ops",
        lambda: "\n".join(op.type for op in graph.get_operations()) + "\n",
    )
    return captured, failed
