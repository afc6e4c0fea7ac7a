"""The one-line form of a claim (``stackwars claim "..."``), parsed into the same ``Claim`` a
claim file gives, and written back: every claim's statement as the tables show it.

    SIDE [STATISTIC] RELATION SIDE [STATISTIC] [within P%] on WORKLOAD [KEY=VALUE ...] [@ DEVICE]
    SIDE STATISTIC RELATION on ...                  (runs-to-steady, ir-lines: one stack)
    SIDE overtakes SIDE at KEY RELATION on WORKLOAD KEY=V1,V2,... (a crossover)

where SIDE is ``framework:mode``, optionally followed by ``[key=value,...]`` (that side's own
parameters), ``@device`` and ``->host`` (results copied to host).
"""

from __future__ import annotations

import re
from typing import Any

from stackwars.errors import ClaimError, UsageError
from stackwars.frameworks import parse_stack
from stackwars.instruments.claims.spec import (
    COUNT,
    CROSSOVER,
    STATISTICS,
    WORDS,
    BadField,
    Claim,
    Side,
    build_claim,
    check_device,
    check_stack,
    find_workload,
    normalise,
    parse_params,
)
from stackwars.workloads.base import Workload

EXAMPLE = "jax:jit >= 6x numpy:eager on poly n=10000"
# field -> an example of the one-line form that shows it
LINE_EXAMPLES = {
    "id": EXAMPLE,
    "subject": EXAMPLE,
    "baseline": EXAMPLE,
    "relation": EXAMPLE,
    "workload": EXAMPLE,
    "params": "jax:jit >= 6x numpy:eager on poly n=10000 dtype=float32",
    "device": "jax:eager@gpu ~ 27x jax:eager on gemm n=3000",
    "statistic": "torch:xla runs-to-steady == 2 on ffn",
    "sweep": "jax:jit overtakes numpy:eager at n <= 256 on gemm n=64,128,256,512",
}
_SIDE = re.compile(
    r"^(?P<stack>[a-z0-9_-]+:[a-z0-9_-]+)(?:\[(?P<params>[^\]]*)\])?"
    r"(?:@(?P<device>[a-z]+(?::\d+)?))?(?P<host>->host)?$"
)


def parse_line(text: str, claim_id: str = "claim") -> Claim:
    """A claim from its one-line form; a ClaimError naming the field, with an example."""
    try:
        claim = _parse(normalise(text), claim_id)
        for name, side in (("subject", claim.subject), ("baseline", claim.baseline)):
            if side is not None:
                _registered(side.stack, name)
        return claim
    except BadField as bad:
        raise ClaimError(
            f"claim {text!r}: {bad.name}: {bad.problem}; example: "
            f'stackwars claim "{LINE_EXAMPLES[bad.name]}"'
        ) from None


def _registered(stack: str, name: str) -> None:
    try:
        parse_stack(stack)
    except UsageError as exc:
        raise BadField(name, str(exc)) from None


def _parse(norm: str, claim_id: str) -> Claim:
    left, sep, right = norm.partition(" on ")
    if not sep or not right:
        raise BadField("workload", "no ' on WORKLOAD' after the stacks and the relation")
    workload, texts, device = _target(right)
    tokens = left.split()
    if not tokens:
        raise BadField("subject", "no stack before the relation")
    first = tokens.pop(0)
    statistic = "steady"
    if tokens and tokens[0] in STATISTICS and tokens[0] != CROSSOVER:
        statistic = tokens.pop(0)
    if tokens[:1] == ["overtakes"]:
        return _crossover(claim_id, workload, first, tokens[1:], texts=texts, device=device)
    single = {key: _one(key, values) for key, values in texts.items()}
    rest = {"params": parse_params(workload, single, "params"), "device": device}
    subject = _side(first, workload, statistic, "subject")
    if STATISTICS[statistic] == COUNT:
        return build_claim(claim_id, workload, subject, None, " ".join(tokens), **rest)
    stacks = [i for i, token in enumerate(tokens) if _SIDE.match(token)]
    if not stacks:
        raise BadField("baseline", "no stack to compare with after the relation")
    before, after = tokens[: stacks[0]], tokens[stacks[0] + 1 :]
    other = statistic
    if after and after[0] in STATISTICS:
        other = after.pop(0)
    baseline = _side(tokens[stacks[0]], workload, other, "baseline")
    relation = " ".join(word for word in before + after if word != "than")
    return build_claim(claim_id, workload, subject, baseline, relation, **rest)


def _crossover(
    claim_id: str,
    workload: Workload,
    first: str,
    tokens: list[str],
    *,
    texts: dict[str, list[str]],
    device: str,
) -> Claim:
    if len(tokens) < 4 or tokens[1] != "at":
        raise BadField("sweep", "write A overtakes B at KEY <= VALUE")
    key = tokens[2]
    if key not in texts:
        raise BadField("sweep", f"give the values of {key} it is swept over, e.g. {key}=64,128")
    values = tuple(sorted(parse_params(workload, {key: v}, "sweep")[key] for v in texts[key]))
    if len(values) < 2:
        raise BadField("sweep", f"{key} takes one value; a crossover needs two or more")
    single = {k: _one(k, values) for k, values in texts.items() if k != key}
    return build_claim(
        claim_id,
        workload,
        _side(first, workload, CROSSOVER, "subject"),
        _side(tokens[0], workload, CROSSOVER, "baseline"),
        " ".join(tokens[3:]),
        params=parse_params(workload, single, "params"),
        device=device,
        sweep=(key, values),
    )


def _one(key: str, values: list[str]) -> str:
    if len(values) != 1:
        raise BadField("params", f"{key} takes {len(values)} values; give one (lists: crossover)")
    return values[0]


def _target(right: str) -> tuple[Workload, dict[str, list[str]], str]:
    tokens = re.sub(r"@\s+", "@", right).split()
    workload = find_workload(tokens[0])
    texts: dict[str, list[str]] = {}
    device = "cpu"
    for token in tokens[1:]:
        if token.startswith("@"):
            device = check_device(token[1:])
            continue
        key, sep, value = token.partition("=")
        if not sep or not key or not value:
            raise BadField("params", f"{token!r} is not KEY=VALUE")
        texts[key] = [part for part in value.split(",") if part]
    return workload, texts, device


def _side(token: str, workload: Workload, statistic: str, name: str) -> Side:
    match = _SIDE.match(token)
    if match is None:
        raise BadField(name, f"{token!r} is not a stack; write framework:mode")
    pairs = [item.partition("=") for item in (match["params"] or "").split(",") if item]
    if any(not sep for _, sep, _ in pairs):
        raise BadField(name, f"{token!r}: write its own parameters as stack[key=value,...]")
    device = match["device"]
    return Side(
        stack=check_stack(match["stack"], name),
        statistic=statistic,
        params=parse_params(workload, {k: v for k, _, v in pairs}, name),
        device=None if device is None else check_device(device, name),
        to_host=bool(match["host"]),
    )


def to_line(claim: Claim) -> str:
    """The claim in its one-line form (``parse_line`` gives the same claim back)."""
    subject, target = _side_text(claim.subject, claim), _target_text(claim)
    relation = claim.relation
    if claim.kind == COUNT:
        return f"{subject} {claim.statistic} {relation.text} on {target}"
    assert claim.baseline is not None
    baseline = _side_text(claim.baseline, claim)
    if claim.kind == CROSSOVER:
        assert claim.sweep is not None
        return f"{subject} overtakes {baseline} at {claim.sweep[0]} {relation.text} on {target}"
    other = claim.baseline.statistic
    mine = "" if claim.statistic == other == "steady" else f" {claim.statistic}"
    theirs = f" {other}" if other != claim.statistic else ""
    middle = f"{relation.head} than" if relation.head in WORDS else relation.head
    tail = f" within {relation.within * 100:g}%" if relation.within else ""
    return f"{subject}{mine} {middle} {baseline}{theirs}{tail} on {target}"


def _side_text(side: Side, claim: Claim) -> str:
    own = ",".join(f"{k}={_value(v)}" for k, v in side.params.items())
    text = side.stack + (f"[{own}]" if own else "")
    if side.device and side.device != claim.device:
        text += f"@{side.device}"
    return text + ("->host" if side.to_host else "")


def _target_text(claim: Claim) -> str:
    values = {key: _value(value) for key, value in claim.params.items()}
    if claim.sweep is not None:
        values[claim.sweep[0]] = ",".join(_value(v) for v in claim.sweep[1])
    words = [claim.workload, *(f"{key}={value}" for key, value in values.items())]
    return " ".join(words + ([f"@ {claim.device}"] if claim.device != "cpu" else []))


def _value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
