"""Claims as data: a published sentence, the cells it speaks of, the statistic and the relation
it asserts (``Claim``), with the checks both written forms share: claim files in TOML
(``files.py``, where the format and its version are) and the one-line form (``line.py``).

Statistics: steady (median per call), first-run, memory (peak) and held-memory (what the
work holds beyond its framework once imported) compare two sides as a factor, baseline /
subject, so that above 1× the subject is faster or smaller; runs-to-steady,
second-run-compiles (compilations the framework counted in the second run), graphs-per-call
(graphs executed per steady call, where the framework counts them: torch_xla) and ir-lines
(lines of StableHLO) are the subject's alone; a crossover sweeps one parameter and is the value
above which the subject stays faster. A relation is the closed range the claim puts that value
in (``Relation``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from stackwars import workloads
from stackwars.config import parse_device
from stackwars.errors import ClaimError, UsageError
from stackwars.workloads.base import Workload

FACTOR, COUNT, CROSSOVER = "factor", "count", "crossover"
# Factor statistics compare two sides (baseline / subject: above 1× the subject is faster or
# smaller); count statistics are the subject's alone; a crossover sweeps one parameter.
STATISTICS = {
    "steady": FACTOR,
    "first-run": FACTOR,
    "memory": FACTOR,
    "held-memory": FACTOR,
    "runs-to-steady": COUNT,
    "second-run-compiles": COUNT,
    "graphs-per-call": COUNT,
    "ir-lines": COUNT,
    "crossover": CROSSOVER,
}
WORDS: dict[str, tuple[float | None, float | None]] = {
    "faster": (1.0, None),
    "less": (1.0, None),
    "slower": (None, 1.0),
    "more": (None, 1.0),
}
DEFAULT_WITHIN = 0.10
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*$")
_STACK = re.compile(r"^[a-z0-9_-]+:[a-z0-9_-]+$")
_NUMBER = r"(\d+(?:\.\d+)?(?:e[+-]?\d+)?)"


class BadField(Exception):
    """A field that does not parse (turned into a ClaimError by the caller, which knows the
    file or the line and gives the example)."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(problem)
        self.name = name
        self.problem = problem


@dataclass(frozen=True)
class Relation:
    """The range the claim puts the statistic in (closed; None: unbounded), as written."""

    low: float | None
    high: float | None
    head: str  # "faster", ">= 6x", "~ 8.2x", "in 1.2x..4.5x", "== 2"
    within: float | None = None  # the tolerance of "~"

    @property
    def text(self) -> str:
        return f"{self.head} within {self.within * 100:g}%" if self.within else self.head

    @property
    def unit(self) -> str:
        """ "×" for a factor, "" for a count or a size."""
        factor = self.head in WORDS or self.head.startswith("~") or self.head.endswith("x")
        return "×" if factor else ""


@dataclass(frozen=True)
class Side:
    """One side of a claim: a stack and what differs on that side from the claim's cells."""

    stack: str
    statistic: str = "steady"
    params: dict[str, Any] = field(default_factory=dict)
    device: str | None = None  # None: the claim's
    to_host: bool = False


@dataclass(frozen=True)
class Claim:
    id: str
    workload: str
    subject: Side
    relation: Relation
    baseline: Side | None = None
    params: dict[str, Any] = field(default_factory=dict)
    device: str = "cpu"
    sweep: tuple[str, tuple[Any, ...]] | None = None  # crossover: the parameter, its values
    source: str = ""
    quote: str = ""
    note: str = ""

    @property
    def statistic(self) -> str:
        return self.subject.statistic

    @property
    def kind(self) -> str:
        return STATISTICS[self.statistic]

    def sides(self) -> tuple[Side, ...]:
        return (self.subject,) if self.baseline is None else (self.subject, self.baseline)

    def params_of(self, side: Side, swept: Any = None) -> dict[str, Any]:
        """The parameters of ``side``'s cell (at one value of the sweep, for a crossover)."""
        values = {**self.params, **side.params}
        if self.sweep is not None:
            values[self.sweep[0]] = swept if swept is not None else self.sweep[1][0]
        return values

    def device_of(self, side: Side) -> str:
        return side.device or self.device


def parse_relation(text: str, kind: str) -> Relation:
    """A relation as written (ASCII, or with ≥ ≤ ≈ ×) for a statistic of ``kind``."""
    norm = normalise(text).strip()
    factor = kind == FACTOR
    if norm in WORDS:
        if not factor:
            raise BadField("relation", f"{norm!r} compares two stacks; a {kind} takes >= 2")
        low, high = WORDS[norm]
        return Relation(low, high, norm)
    if norm.startswith("~"):
        return _approximately(norm, factor)
    bound = re.fullmatch(rf"(>=|<=|==) ?{_NUMBER}(x?)", norm)
    if bound:
        op, number, x = bound.groups()
        _unit(x, factor, norm)
        value = float(number)
        if op == "==" and factor:
            raise BadField("relation", f"{norm!r}: a factor is never exact; write ~ {value:g}x")
        low, high = (value, None) if op == ">=" else (None, value) if op == "<=" else (value, value)
        return Relation(low, high, f"{op} {value:g}{x}")
    span = re.fullmatch(rf"in ?{_NUMBER}(x?)\.\.{_NUMBER}(x?)", norm)
    if span:
        low, x_low, high, x_high = span.groups()
        _unit("x" if x_low or x_high else "", factor, norm)
        if float(low) > float(high):
            raise BadField("relation", f"{norm!r}: the range's low end is above its high end")
        x = "x" if factor else ""
        return Relation(float(low), float(high), f"in {float(low):g}{x}..{float(high):g}{x}")
    raise BadField("relation", f"{text!r} is not a relation this format knows")


def _approximately(norm: str, factor: bool) -> Relation:
    match = re.fullmatch(rf"~ ?(?:{_NUMBER}x)? ?(?:within ?{_NUMBER}%)?", norm)
    if not factor or match is None:
        raise BadField("relation", f"{norm!r}: '~' compares two stacks, e.g. ~ 8.2x within 10%")
    centre = float(match.group(1) or 1.0)
    within = float(match.group(2)) / 100 if match.group(2) else DEFAULT_WITHIN
    if within <= 0:
        raise BadField("relation", f"{norm!r}: the tolerance must be above 0%")
    head = f"~ {centre:g}x" if match.group(1) else "~"
    return Relation(centre / (1 + within), centre * (1 + within), head, within)


def _unit(x: str, factor: bool, norm: str) -> None:
    if factor and not x:
        raise BadField("relation", f"{norm!r} compares two stacks: write the factor, e.g. >= 6x")
    if x and not factor:
        raise BadField("relation", f"{norm!r} bounds a count or a size: drop the x, e.g. >= 2")


def normalise(text: str) -> str:
    """Lower case, ASCII operators, one space between words."""
    for fancy, plain in (("≥", ">="), ("≤", "<="), ("≈", "~"), ("×", "x"), ("→", "->")):
        text = text.replace(fancy, plain)
    text = re.sub(r"(\d)\s*x\b", r"\1x", text.lower())
    text = re.sub(r"\s*\.\.\s*", "..", re.sub(r"(\d)\s*%", r"\1%", text))
    text = re.sub(r"(>=|<=|==|~)", r" \1 ", text)
    return " ".join(text.split())


def check_stack(text: str, name: str) -> str:
    if not _STACK.match(text):
        raise BadField(name, f"{text!r} is not a stack; write framework:mode")
    return text


def check_statistic(text: str, name: str = "statistic") -> str:
    if text not in STATISTICS:
        raise BadField(name, f"{text!r} is not one of: {', '.join(STATISTICS)}")
    return text


def check_device(text: str, name: str = "device") -> str:
    try:
        return parse_device(text)
    except UsageError as exc:
        raise BadField(name, str(exc)) from None


def find_workload(name: str) -> Workload:
    try:
        return workloads.get(name)
    except UsageError as exc:
        raise BadField("workload", str(exc)) from None


def parse_params(workload: Workload, given: dict[str, Any], name: str) -> dict[str, Any]:
    """Values checked and converted by the workload's own parameters."""
    if not isinstance(given, dict):
        raise BadField(name, f"{given!r} is not a table of parameter values")
    try:
        return {key: workload.param(key).parse(_text(value)) for key, value in given.items()}
    except UsageError as exc:
        raise BadField(name, str(exc)) from None


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def build_claim(
    claim_id: str,
    workload: Workload,
    subject: Side,
    baseline: Side | None,
    relation_text: str,
    **rest: Any,
) -> Claim:
    """A claim whose sides, statistic and relation agree with each other."""
    if not _ID.match(claim_id):
        raise BadField("id", f"{claim_id!r}: use letters, digits, '-' and '.'")
    kind = STATISTICS[subject.statistic]
    relation = parse_relation(relation_text, kind)
    if kind == COUNT and baseline is not None:
        raise BadField("baseline", f"{subject.statistic} is the subject's alone: drop baseline")
    if kind != COUNT and baseline is None:
        raise BadField("baseline", f"{subject.statistic} compares the subject with a baseline")
    if baseline is not None and STATISTICS[baseline.statistic] != FACTOR and kind == FACTOR:
        raise BadField("baseline", f"{baseline.statistic} is not compared as a factor")
    sweep = rest.get("sweep")
    if (kind == CROSSOVER) != (sweep is not None):
        raise BadField("sweep", "a crossover sweeps one parameter, and only a crossover does")
    return Claim(claim_id, workload.name, subject, relation, baseline, **rest)


def with_overrides(claims: Sequence[Claim], args: Sequence[str]) -> list[Claim]:
    """Claims with ``--param KEY=VALUE`` applied to every claim whose workload has KEY (for
    a crossover over KEY, ``KEY=V1,V2,...`` replaces the values swept)."""
    claims = list(claims)
    for arg in args:
        key, sep, text = arg.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ClaimError(f"--param {arg!r} is not KEY=VALUE; example: --param n=32")
        values = [part.strip() for part in text.split(",") if part.strip()]
        owners = [i for i, c in enumerate(claims) if key in workloads.get(c.workload).defaults()]
        if not owners or not values:
            raise ClaimError(
                f"--param {arg!r}: no claim selected has a parameter {key!r} with a value; "
                "example: --param n=32"
            )
        for index in owners:
            claims[index] = _override(claims[index], key, values, arg)
    return claims


def _override(claim: Claim, key: str, texts: list[str], arg: str) -> Claim:
    param = workloads.get(claim.workload).param(key)
    values = [param.parse(text) for text in texts]
    if claim.sweep is not None and claim.sweep[0] == key:
        return dataclasses.replace(claim, sweep=(key, tuple(sorted(values))))
    if len(values) > 1:
        raise ClaimError(
            f"--param {arg!r} gives {len(values)} values, but claim {claim.id} compares one cell "
            f"per side; give one value (several only for a crossover over {key})"
        )
    sides = {
        name: dataclasses.replace(side, params={**side.params, key: values[0]})
        if key in side.params
        else side
        for name, side in (("subject", claim.subject), ("baseline", claim.baseline))
        if side is not None
    }
    return dataclasses.replace(claim, params={**claim.params, key: values[0]}, **sides)
