"""stackwars behave: probes run in fresh workers, outcomes classified from what happened."""

from __future__ import annotations

from pathlib import Path

import pytest

from stackwars.cli import main
from stackwars.frameworks.numpy import NumpyFramework
from stackwars.instruments.behave import probes
from stackwars.instruments.behave import worker as behave_worker
from stackwars.instruments.behave.service import behave
from stackwars.instruments.behave.worker import _classify, _difference, answer

SEED_000 = ["boolean-mask", "value-if", "value-if-static", "array-shape", "static-shape"]


@pytest.mark.slow
def test_seed_000s_pitfalls_fail_on_jax_jit_and_their_fixes_work() -> None:
    pytest.importorskip("jax")
    names = [*SEED_000, "side-effect", "new-shape", "captured-global"]
    found = {o.probe: o for o in behave(names, "jax:jit")}
    assert found["boolean-mask"].outcome == "error"
    assert "NonConcreteBooleanIndexError" in found["boolean-mask"].detail
    assert found["value-if"].outcome == "error"
    assert "TracerBoolConversionError" in found["value-if"].detail
    assert found["array-shape"].outcome == "error"
    assert "Shapes must be 1D sequences of concrete values" in found["array-shape"].detail
    assert found["value-if-static"].outcome == "works"
    assert found["value-if-static"].compiles == 2
    assert found["static-shape"].outcome == "works"
    assert found["side-effect"].outcome == "silently different"
    assert "ran 1× in 3 calls" in found["side-effect"].detail
    assert found["new-shape"].outcome == "retraced 2"
    # The global was read when tracing: call 2 silently used the old value.
    assert found["captured-global"].outcome == "silently different"
    assert found["captured-global"].detail.startswith("call 2:")


@pytest.mark.slow
def test_numpy_runs_every_probe_as_python_does() -> None:
    outcomes = behave([], "numpy:eager")
    assert {o.probe for o in outcomes} == set(probes.registry())
    for outcome in outcomes:
        # A probe of random draws answers with the relation a NumPy user expects.
        expected = probes.get(outcome.probe).expected_draws.get("numpy", "works")
        assert outcome.outcome == expected, outcome


def test_classification_follows_what_happened() -> None:
    probe = probes.get("side-effect")
    once = [(0.1, 1), (0.1, 1), (0.1, 1)]  # per call: seconds, compilations so far
    assert _classify(probe, "jit", once, 3)["outcome"] == "works"
    assert _classify(probe, "jit", once, 1)["outcome"] == "silently different"
    retraced = _classify(probes.get("new-shape"), "jit", [(0.1, 1), (0.1, 1), (0.1, 2)], 0)
    assert retraced["outcome"] == "retraced 2"
    # Eager stacks run op by op: compilations of single ops are no retrace.
    assert _classify(probes.get("new-shape"), "eager", [(0.1, 4)], 0)["outcome"] == "works"
    assert _difference([[1.0, 2.0]], [1.0, 2.0]) == ""
    assert "max |error|" in _difference([[1.0, 2.5]], [1.0, 2.0])
    assert "shape (3,)" in _difference([[1.0, 2.0, 3.0]], [1.0, 2.0])


def test_wrong_numbers_are_silently_different(monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = probes.Probe(
        "wrong",
        "a program that computes something else",
        calls=lambda: [(probes.get("new-shape").calls()[0][0],)],
        reference=lambda args: args[0],
        implementations={"numpy": lambda mode, prepare, tally: prepare(lambda x: x + 1)},
    )
    monkeypatch.setitem(probes._REGISTRY, "wrong", wrong)
    framework = NumpyFramework()
    result = behave_worker.observe(wrong, framework, "eager", wrong.implementations["numpy"])
    assert result["outcome"] == "silently different"
    assert "call 1: max |error| 1" in result["detail"]


def test_a_probe_without_an_implementation_is_unsupported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    only_jax = probes.Probe("only-jax", "x", calls=list, reference=lambda args: None)
    monkeypatch.setitem(probes._REGISTRY, "only-jax", only_jax)
    request = {"probe": "only-jax", "stack": "numpy:eager", "cache_dir": str(tmp_path)}
    assert answer(request)["outcome"] == "unsupported"


def test_bad_input_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["behave", "--probes", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown probe 'nope'" in err and len(err.strip().splitlines()) == 1
    assert main(["behave", "--list"]) == 0
    assert "boolean-mask" in capsys.readouterr().out
