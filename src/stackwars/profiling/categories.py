"""Where an operation's time goes: matmul/conv, elementwise/fused, reduction or data movement,
from its name (torch's ATen operators, TensorFlow's op types, Inductor's and XLA's fusions) or,
for an XLA operation found in the optimized HLO, from the operations it contains.

The rule is the same for both: anything holding a matrix product or a convolution is
matmul/conv; something that only reduces is a reduction; something that only moves, copies,
reshapes or allocates data is data movement; everything else (arithmetic, and fusions mixing
arithmetic with a reduction, such as a softmax) is elementwise/fused. The time between
operations is the fifth category, overhead/idle (``analyse.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MATMUL = "matmul/conv"
ELEMENTWISE = "elementwise/fused"
REDUCTION = "reduction"
MOVEMENT = "data movement"
OVERHEAD = "overhead/idle"
CATEGORIES = (MATMUL, ELEMENTWISE, REDUCTION, MOVEMENT, OVERHEAD)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Names (lower case, without "aten::" and leading underscores), a TensorFlow node's type, or
# words of a fused kernel's name, that mark a category.
_MATMUL_WORDS = _words(
    "mm addmm bmm baddbmm addbmm matmul batchmatmul batchmatmulv2 batchmatmulv3 mklmatmul "
    "mklbatchmatmul mklbatchmatmulv2 mklfusedmatmul mklfusedbatchmatmulv2 fusedmatmul linear "
    "dot gemm gemv einsum conv convolution conv1d conv2d conv3d mkldnn_convolution "
    "convolution_overrideable fusedconv2d mklconv2d conv2dbackpropinput "
    "conv2dbackpropfilter depthwiseconv2dnative scaled_dot_product_attention "
    "scaled_dot_product_flash_attention_for_cpu scaled_dot_product_efficient_attention"
)
_REDUCTION_WORDS = _words(
    "sum mean max min amax amin argmax argmin prod reduce all any norm linalg_vector_norm "
    "var std var_mean std_mean logsumexp cumsum cumprod max_pool2d avg_pool2d maxpool "
    "avgpool adaptive_avg_pool2d argmaxv2 reduce_window reduce-window"
)
_MOVEMENT_WORDS = _words(
    "copy copy_ clone contiguous to to_copy cat concat concatv2 stack transpose permute "
    "reshape view t expand slice select index index_select gather gatherv2 scatter pad split "
    "unbind chunk narrow squeeze unsqueeze flatten as_strided roll repeat tile broadcast "
    "broadcastto broadcast_in_dim identity bitcast empty empty_strided empty_like "
    "resolve_conj resolve_neg alias detach lift_fresh unsafe_view stridedslice "
    "resourcegather conjugatetranspose dynamic-slice dynamic-update-slice "
    "dynamic_slice dynamic_update_slice reverse copy-start copy-done split_with_sizes "
    "embedding iota zeros new_empty new_zeros fill fill_ zero_ set_"
)
# Words in a fused kernel's name that name no operation.
_FUSION_WORDS = _words("fusion fused cpp graph wrapped loop input output kernel ynn onednn triton")

# HLO opcodes, for operations joined with the optimized HLO.
_HLO_MATMUL = frozenset(("dot", "convolution"))
_HLO_REDUCTION = frozenset(("reduce", "reduce-window", "all-reduce", "reduce-scatter"))
_HLO_MOVEMENT = frozenset(
    (
        "copy",
        "copy-start",
        "copy-done",
        "transpose",
        "reshape",
        "broadcast",
        "slice",
        "dynamic-slice",
        "dynamic-update-slice",
        "concatenate",
        "gather",
        "scatter",
        "pad",
        "reverse",
        "iota",
        "all-gather",
        "all-to-all",
        "collective-permute",
    )
)
_SPLIT = re.compile(r"[^a-z0-9\-]+")


def words(name: str) -> list[str]:
    """``aten::_to_copy`` -> [to, copy]; ``graph_0_cpp_fused_exp_sum_0`` -> [graph, 0, cpp,
    fused, exp, sum, 0]; ``wrapped_reduce-window`` -> [wrapped, reduce-window]."""
    return [word for word in _SPLIT.split(name.lower().removeprefix("aten::")) if word]


def of_name(name: str) -> str:
    """The category of an operation known by its name only."""
    whole = name.lower().removeprefix("aten::").strip("_")
    # A TensorFlow node is "node:Type"; oneDNN's kernels are its types prefixed with _Mkl.
    base = re.sub(r"\.\d+$", "", whole.rsplit(":", 1)[-1]).strip("_").removeprefix("mkl")
    if {whole, base} & _MATMUL_WORDS:
        return MATMUL
    if {whole, base} & _REDUCTION_WORDS:
        return REDUCTION
    if {whole, base} & _MOVEMENT_WORDS:
        return MOVEMENT
    found = [w for w in words(name) if not w.isdigit() and w not in _FUSION_WORDS]
    # In a fused or wrapped XLA kernel's name, "select" is HLO's elementwise select, not
    # ATen's indexing select.
    return _of_parts(found, _MATMUL_WORDS, _REDUCTION_WORDS, _MOVEMENT_WORDS - {"select"})


def of_hlo(contents: Iterable[str]) -> str:
    """The category of an XLA operation holding these HLO opcodes (itself, or the
    operations of the fusion it calls); a custom call counts by its target's name."""
    opcodes = list(contents)
    targets = [op.partition(":")[2] for op in opcodes if op.startswith("custom-call:")]
    if any(of_name(target) == MATMUL for target in targets):
        return MATMUL
    return _of_parts(opcodes, _HLO_MATMUL, _HLO_REDUCTION, _HLO_MOVEMENT)


def _of_parts(
    parts: list[str], matmul: frozenset[str], reduction: frozenset[str], movement: frozenset[str]
) -> str:
    if not parts:
        return ELEMENTWISE
    found = set(parts)
    if found & matmul:
        return MATMUL
    # A broadcast of the reduction's initial value does not make it elementwise.
    if found - {"broadcast"} and found - {"broadcast"} <= reduction:
        return REDUCTION
    if found <= movement:
        return MOVEMENT
    return ELEMENTWISE
