"""The accelerator extras (``stackwars[cuda]``, ``stackwars[tpu]``) pin what installs together:
the JAX plugin of the very version of the jax pin (jaxlib refuses another), the libtpu that
jax's own ``tpu`` extra names, and no CPU-only TensorFlow beside TensorFlow's CUDA build.

Checked against pyproject.toml, constraints.txt and the installed jax's own metadata, which
lists what its ``cuda12`` and ``tpu`` extras require; nothing is downloaded.
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def extras() -> dict[str, list[Requirement]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {
        name: [Requirement(text) for text in texts]
        for name, texts in project["optional-dependencies"].items()
    }


def expanded(name: str) -> list[Requirement]:
    """An extra's requirements with ``stackwars[...]`` references followed."""
    found: list[Requirement] = []
    for requirement in extras()[name]:
        if requirement.name == "stackwars":
            for inner in sorted(requirement.extras):
                found.extend(expanded(inner))
        else:
            found.append(requirement)
    return found


def constraint_pins() -> dict[str, str]:
    lines = (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    pins = (line.split("==") for line in lines if "==" in line and not line.startswith("#"))
    return {name.strip().lower().replace("_", "-"): version.strip() for name, version in pins}


def exact(requirements: list[Requirement], name: str) -> set[str]:
    """The versions ``==`` pins for ``name`` across ``requirements``."""
    return {
        spec.version
        for requirement in requirements
        if requirement.name == name
        for spec in requirement.specifier
        if spec.operator == "=="
    }


def jax_extra_requirements(extra: str) -> dict[str, Requirement]:
    """What the installed jax's own ``extra`` requires (from its metadata)."""
    marker = re.compile(rf"extra\s*==\s*['\"]{extra}['\"]")
    found = {}
    for text in importlib.metadata.requires("jax") or []:
        if marker.search(text):
            requirement = Requirement(text.split(";")[0])
            found[requirement.name] = requirement
    return found


@pytest.mark.parametrize("extra", ["cuda", "tpu"])
def test_the_extra_pins_jax_and_jaxlib_as_constraints_txt_does(extra: str) -> None:
    requirements = expanded(extra)
    pins = constraint_pins()
    assert exact(requirements, "jax") == {pins["jax"]}
    assert exact(requirements, "jaxlib") == {pins["jaxlib"]}


def test_the_cuda_plugin_is_the_one_jax_names_for_its_version() -> None:
    requirements = expanded("cuda")
    plugin = next(r for r in requirements if r.name == "jax-cuda12-plugin")
    assert plugin.extras == {"with-cuda"}, "the CUDA libraries come from PyPI with the plugin"
    assert exact(requirements, "jax-cuda12-plugin") == {constraint_pins()["jax"]}
    assert importlib.metadata.version("jax") == constraint_pins()["jax"]
    named = jax_extra_requirements("cuda12")["jax-cuda12-plugin"]
    assert named.specifier.contains(constraint_pins()["jax"])


def test_libtpu_is_pinned_as_jaxs_own_tpu_extra_pins_it() -> None:
    ours = next(r for r in expanded("tpu") if r.name == "libtpu")
    assert str(ours.specifier) == str(jax_extra_requirements("tpu")["libtpu"].specifier)


def test_cuda_brings_tensorflows_cuda_build_and_never_the_cpu_only_one() -> None:
    requirements = expanded("cuda")
    names = {r.name for r in requirements}
    assert "tensorflow-cpu" not in names, "both install the tensorflow package: they clash"
    tensorflow = next(r for r in requirements if r.name == "tensorflow")
    assert "and-cuda" in tensorflow.extras
    cpu_only = next(r for r in expanded("tensorflow") if r.name == "tensorflow-cpu")
    assert tensorflow.specifier == cpu_only.specifier, "the same TensorFlow releases"


@pytest.mark.parametrize("extra", ["cuda", "tpu"])
def test_torch_keeps_its_one_pin(extra: str) -> None:
    assert exact(expanded(extra), "torch") == {constraint_pins()["torch"]}
