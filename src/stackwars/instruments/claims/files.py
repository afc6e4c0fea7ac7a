"""Claim files: one TOML file is one claim set::

    format = 1                                  # CLAIMS_FORMAT, below
    description = "what the set checks"         # optional; name too (default: the file's stem)

    [[claims]]
    id = "jit-poly-6x"                          # letters, digits, '-' and '.'
    source = "https://example.org/post"         # where the sentence was published
    quote = "JAX performs the operation 6 times faster than NumPy!"
    workload = "poly"
    params = { n = 10000, dtype = "float32" }   # optional: the workload's defaults
    subject = "jax:jit"                         # the stack the sentence is about
    baseline = "numpy:eager"                    # what it is compared with
    statistic = "steady"                        # optional, steady
    relation = ">= 6x"
    device = "cpu"                              # optional, cpu
    note = "how the sentence was read, which sizes and why"    # optional

A side (``subject``, ``baseline``) is a stack, or a table of the stack and what differs on
that side: ``{ stack = "numpy:eager", params = { dtype = "float64" }, device = "gpu",
to_host = true, statistic = "first-run" }``. A crossover claim sweeps one parameter:
``statistic = "crossover"``, ``sweep = { n = [64, 128, 256, 512] }``, ``relation = "<= 256"``.
Every mistake is one line naming the file, the claim and the field, with an example.

History of CLAIMS_FORMAT:

* 1 (2026-11-24): first version.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from stackwars.errors import ClaimError
from stackwars.instruments.claims.spec import (
    BadField,
    Claim,
    Side,
    build_claim,
    check_device,
    check_stack,
    check_statistic,
    find_workload,
    parse_params,
)
from stackwars.workloads.base import Workload

CLAIMS_FORMAT = 1
FORMAT_HELP = """\
A claim names the cells a sentence is about, the statistic and the relation it asserts:
  statistics  steady (median per call; the default), first-run, memory (peak),
              held-memory (the peak less what the worker held once its framework was
              imported; a device's peak where measured): compared as a factor,
              baseline / subject (above 1x the subject is faster or smaller);
              runs-to-steady, second-run-compiles, graphs-per-call (torch_xla),
              ir-lines (StableHLO lines): the subject alone;
              crossover: the swept value above which the subject stays faster
  relations   faster, slower, less, more, >= 6x, <= 0.5x, ~ within 10% (1/1.1 to 1.1),
              ~ 8.2x within 10%, in 1.2x..4.5x; for counts and crossovers >= 2, <= 1,
              == 2, in 1500..2000
One line:
  jax:jit >= 6x numpy:eager on poly n=10000 dtype=float32
  jax:jit first-run slower than jax:jit steady on ffn
  jax:jit[style=vmap] ~ jax:jit[style=vectorised] within 10% on vmap-convolve
  jax:eager@gpu->host ~ 27x jax:eager on gemm n=3000
  torch:xla runs-to-steady == 2 on ffn
  jax:jit overtakes numpy:eager at n <= 256 on gemm n=64,128,256,512
In a TOML file (one claim set; the built-in ones are in stackwars/instruments/claims/builtin/):
  format = 1
  [[claims]]
  id = "jit-poly-6x"
  source = "https://example.org/post"
  quote = "JAX performs the operation 6 times faster than NumPy!"
  workload = "poly"
  params = { n = 10000, dtype = "float32" }
  subject = "jax:jit"
  baseline = { stack = "numpy:eager", params = { dtype = "float64" } }
  relation = ">= 6x"
A verdict is holds, fails, inconclusive (the 95% interval straddles the claimed bound, or
fewer than 3 fresh workers a side) or not checkable here (hardware, stack or memory this
machine lacks, with the reason).
"""
# field -> an example of it in a claim file
FILE_EXAMPLES = {
    "format": f"format = {CLAIMS_FORMAT}",
    "claims": "[[claims]] with id, quote, workload, subject, relation (see --help)",
    "id": 'id = "jit-poly-6x"',
    "source": 'source = "https://example.org/post"',
    "quote": 'quote = "JAX performs the operation 6 times faster than NumPy!"',
    "workload": 'workload = "poly"',
    "params": 'params = { n = 10000, dtype = "float32" }',
    "subject": 'subject = "jax:jit"',
    "baseline": 'baseline = { stack = "numpy:eager", params = { dtype = "float64" } }',
    "statistic": 'statistic = "steady"',
    "relation": 'relation = ">= 6x"',
    "device": 'device = "cpu"',
    "sweep": "sweep = { n = [64, 128, 256, 512] }",
    "note": 'note = "the seed ran 10000²; 4096² fits the time budget here"',
}
CLAIM_KEYS = tuple(key for key in FILE_EXAMPLES if key not in ("format", "claims"))
SIDE_KEYS = ("stack", "params", "device", "to_host", "statistic")


@dataclass(frozen=True)
class ClaimSet:
    name: str
    description: str
    origin: str  # the file it was read from
    claims: tuple[Claim, ...]


def load_file(path: Path) -> ClaimSet:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ClaimError(f"claim file {path} cannot be read ({exc.strerror})") from None
    return load_text(text, str(path), path.stem)


def builtin_sets() -> list[ClaimSet]:
    """The claim sets shipped in ``stackwars/instruments/claims/builtin`` (package data)."""
    folder = resources.files("stackwars.instruments.claims").joinpath("builtin")
    files = sorted((item for item in folder.iterdir() if item.name.endswith(".toml")), key=str)
    return [
        load_text(item.read_text(encoding="utf-8"), f"builtin/{item.name}", item.name[:-5])
        for item in files
    ]


def load_text(text: str, where: str, stem: str) -> ClaimSet:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ClaimError(f"claim file {where} is not valid TOML: {exc}") from None
    try:
        return _claim_set(data, where, stem)
    except BadField as bad:
        raise ClaimError(
            f"claim file {where}: {bad.problem}; example: {FILE_EXAMPLES[bad.name]}"
        ) from None


def _claim_set(data: dict[str, Any], where: str, stem: str) -> ClaimSet:
    _unknown(data, ("format", "name", "description", "claims"), "format")
    version = data.get("format")
    if not isinstance(version, int) or not 1 <= version <= CLAIMS_FORMAT:
        raise BadField("format", f"field 'format' is {version!r}; this stackwars reads 1")
    tables = data.get("claims")
    if not isinstance(tables, list) or not tables:
        raise BadField("claims", "no claims: add a [[claims]] table")
    claims = []
    for index, table in enumerate(tables, 1):
        try:
            claims.append(_claim(table))
        except BadField as bad:
            name = table.get("id", f"#{index}") if isinstance(table, dict) else f"#{index}"
            raise BadField(bad.name, f"claim {name}: field {bad.name!r}: {bad.problem}") from None
    ids = [claim.id for claim in claims]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise BadField("id", f"claim id {repeated[0]!r} is used twice; give each claim its own")
    name, description = str(data.get("name", stem)), str(data.get("description", ""))
    return ClaimSet(name, description, where, tuple(claims))


def _unknown(table: dict[str, Any], allowed: Sequence[str], name: str) -> None:
    extra = sorted(set(table) - set(allowed))
    if extra:
        raise BadField(name, f"unknown key {extra[0]!r}; allowed: {', '.join(allowed)}")


def _claim(table: Any) -> Claim:
    if not isinstance(table, dict):
        raise BadField("claims", "is not a table")
    _unknown(table, CLAIM_KEYS, "id")
    for key in ("id", "quote", "workload", "subject", "relation"):
        if key not in table:
            raise BadField(key, "is missing")
    workload = find_workload(str(table["workload"]))
    statistic = check_statistic(str(table.get("statistic", "steady")))
    subject = _side(table["subject"], workload, statistic, "subject")
    baseline = (
        _side(table["baseline"], workload, statistic, "baseline") if "baseline" in table else None
    )
    return build_claim(
        str(table["id"]),
        workload,
        subject,
        baseline,
        str(table["relation"]),
        params=parse_params(workload, table.get("params", {}), "params"),
        device=check_device(str(table.get("device", "cpu"))),
        sweep=_sweep(table["sweep"], workload) if "sweep" in table else None,
        source=str(table.get("source", "")),
        quote=str(table["quote"]),
        note=str(table.get("note", "")),
    )


def _side(value: Any, workload: Workload, statistic: str, name: str) -> Side:
    if isinstance(value, str):
        return Side(check_stack(value, name), statistic)
    if not isinstance(value, dict) or "stack" not in value:
        raise BadField(name, f"{value!r} is neither a stack nor a table with a stack")
    extra = sorted(set(value) - set(SIDE_KEYS))
    if extra:
        raise BadField(name, f"unknown key {extra[0]!r}; allowed: {', '.join(SIDE_KEYS)}")
    device = value.get("device")
    return Side(
        stack=check_stack(str(value["stack"]), name),
        statistic=check_statistic(str(value.get("statistic", statistic)), name),
        params=parse_params(workload, value.get("params", {}), name),
        device=None if device is None else check_device(str(device), name),
        to_host=bool(value.get("to_host", False)),
    )


def _sweep(value: Any, workload: Workload) -> tuple[str, tuple[Any, ...]]:
    if not isinstance(value, dict) or len(value) != 1:
        raise BadField("sweep", f"{value!r} is not one parameter with its values")
    ((key, values),) = value.items()
    listed = values if isinstance(values, list) else [values]
    parsed = tuple(parse_params(workload, {key: item}, "sweep")[key] for item in listed)
    if len(parsed) < 2:
        raise BadField("sweep", f"{key} takes one value; a crossover needs two or more")
    return key, tuple(sorted(parsed))
