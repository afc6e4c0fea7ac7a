"""IR normalisation, analysis and diff on captures with known structure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stackwars.ir.analyse import analyse
from stackwars.ir.diff import explain, histogram_rows, text_diff
from stackwars.ir.normalise import normalise

# Hand-written modules (tests/data/*.mlir) in the two styles seed 001 compared: one keeps
# batch×sequence and writes layer norm as reductions with an embedding "take" call; the other
# flattens before dot_general, uses batch_norm_training and a gather.
DATA = Path(__file__).parent / "data"
KEEPS_3D = (DATA / "ir_keeps_3d.mlir").read_text()
FLATTENS = (DATA / "ir_flattens.mlir").read_text()
NAMES = ("jax:jit", "torch:xla")


def test_normalising_removes_locations_names_and_big_constants() -> None:
    text = normalise(
        "%foo = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]> "
        ': tensor<9xf32> loc("a.py":3:4)\n'
        '%bar = stablehlo.add %foo, %foo : tensor<9xf32> loc(#loc7)\n#loc7 = loc("x")\n'
    )
    assert text == (
        "%v0 = stablehlo.constant dense<…9 values…> : tensor<9xf32>\n"
        "%v1 = stablehlo.add %v0, %v0 : tensor<9xf32>\n"
    )


def test_two_captures_of_the_same_function_normalise_to_the_same_text() -> None:
    jax = pytest.importorskip("jax")

    def first(x: object) -> object:
        return jax.numpy.tanh(x) * 2

    def second(y: object) -> object:  # another name, other source lines
        return jax.numpy.tanh(y) * 2

    x = np.ones((8, 8), dtype=np.float32)
    texts = [jax.jit(f).lower(x).as_text(debug_info=True) for f in (first, second)]
    assert texts[0] != texts[1]
    assert normalise(texts[0]) == normalise(texts[1])


def test_analysis_counts_ops_categories_and_parameters() -> None:
    a = analyse(normalise(FLATTENS))
    assert a.dialect == "stablehlo"
    assert a.ops["dot_general"] == 1 and a.ops["reshape"] == 2 and a.ops["gather"] == 1
    assert a.categories["matmul"] == 1 and a.categories["batch_norm"] == 1
    assert a.parameters == 4
    assert a.parameter_bytes == (2 * 64 * 768 + 768 * 2304 + 50 * 768) * 4 + 128 * 4
    b = analyse(normalise(KEEPS_3D))
    assert b.ops["call @take"] == 1 and b.ops["reduce"] == 1 and b.ops["add"] == 0


def test_a_module_diffed_with_itself_has_no_differences() -> None:
    text = normalise(KEEPS_3D)
    assert explain(text, text, NAMES) == []
    assert text_diff(text, text, NAMES) == ""
    assert all(delta == 0 for *_, delta in histogram_rows(analyse(text), analyse(text)))


def test_the_known_differences_are_named_with_their_lines() -> None:
    a, b = normalise(KEEPS_3D), normalise(FLATTENS)
    found = [finding.describe(*NAMES) for finding in explain(a, b, NAMES)]
    text = "\n".join(found)
    assert "torch:xla flattens batch×sequence before dot_general" in text
    assert "jax:jit contracts 3-D operands directly" in text
    assert "torch:xla uses batch_norm_training (1×), jax:jit never does" in text
    assert "explicit reduce ops" in text
    assert "jax:jit uses call @take (1×), torch:xla never does" in text
    flattening = next(f for f in explain(a, b, NAMES) if "flattens" in f.title)
    assert flattening.lines_a and flattening.lines_b
    lines_b = b.splitlines()
    assert all(
        "reshape" in lines_b[n - 1] or "dot_general" in lines_b[n - 1] for n in flattening.lines_b
    )
    assert "-" in text_diff(a, b, NAMES)
