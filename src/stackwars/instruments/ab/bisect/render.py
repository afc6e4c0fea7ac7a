"""A bisection as text: its plan (``--dry-run``), each event as it happens, and the answer with
everything it used (environments, each step's folder of rounds)."""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from pathlib import Path

from stackwars.instruments.ab.bisect.data import Bisection, Event, Prepared, Step
from stackwars.instruments.ab.bisect.plan import Plan
from stackwars.instruments.ab.bisect.search import Search
from stackwars.instruments.ab.bisect.verdict import Judgement


def change(judgement: Judgement) -> str:
    """``+25.3 % [+12.1, +40.2]``: the change and its interval, in percent."""
    low, high = (100 * (value - 1) for value in (judgement.low, judgement.high))
    return f"{100 * (judgement.ratio - 1):+.1f} % [{low:+.1f}, {high:+.1f}]"


def event_line(event: Event) -> str:
    if isinstance(event, Prepared):
        return f"  {prepared_line(event)}"
    if isinstance(event, Step):
        return step_lines(event)
    return event


def prepared_line(prepared: Prepared) -> str:
    if prepared.skipped:
        return f"{prepared.name}: skipped, {prepared.skipped}"
    how = f"made in {prepared.seconds:.0f} s" if prepared.made else "ready, reused"
    return f"{prepared.name}: {how} ({prepared.folder})"


def step_lines(step: Step) -> str:
    head = (
        f"{step.newer} against {step.older}: {step.word} ({step.rounds} rounds, "
        f"{step.seconds:.0f} s, {step.stopped})"
    )
    watched = step.watch.watched(step.judgements)
    lines = [head, *(f"  {j.label}: {j.word}, {_evidence(j)}" for j in watched)]
    family = step.verdict.family if step.verdict is not None else None
    return "\n".join([*lines, f"  {family.describe()}"] if family is not None else lines)


def _evidence(judgement: Judgement) -> str:
    """The change and interval, or why there is none."""
    return change(judgement) if math.isfinite(judgement.low) else judgement.detail


def plan_lines(
    plan: Plan, run_options: Sequence[str], ready: dict[str, str], out: Path
) -> list[str]:
    """What ``--dry-run`` prints: the releases, each environment (``ready``: name -> ''
    when it can be reused, else what will happen), the comparisons and where they go."""
    between = len(plan.versions) - 2
    lines = [
        f"bisect {plan.framework} from {plan.good} (good) to {plan.bad} (bad): "
        f"{between} release(s) between, at most {math.ceil(math.log2(between + 1))} step(s) "
        "after good against bad",
        f"cells: stackwars run {shlex.join(run_options)} --stacks <stack>@<environment>",
    ]
    for version in plan.versions:
        name = plan.environment(version)
        state = ready[name] or "ready, reused"
        lines.append(f"  {version}: {name} ({', '.join(plan.pins(version))}): {state}")
    lines.append(f"rounds and run files in {out}")
    return lines


def answer(bisection: Bisection) -> str:
    search: Search = bisection.search
    if not bisection.reproducible:  # shown the same, undecided, or not compared
        return f"no answer: {bisection.stopped}"
    framework, what = bisection.plan.framework, f"the change ({search.change})"
    if search.named is not None:
        return (
            f"{what} appears in {framework} {search.named} "
            f"({search.last_good} is the last release without it)"
        )
    return (
        f"{what} appears in one of {framework} {', '.join(search.suspects())} "
        f"(after {search.last_good}); {bisection.stopped}"
    )


def accrued(bisection: Bisection) -> list[str]:
    """For each cell whose change the named release brings less than half of (in log terms, of
    good against bad's): a line saying the change builds up over several releases, and the
    bisection that would look at the rest. A bisection assumes one release did it; measured
    2026-11-26, jax:eager SELU 64² slowed by about 5 % in 0.8.0 and 25 % by 0.10.2."""
    search = bisection.search
    named = next(
        (s for s in bisection.steps if s.newer == search.named and s.word == search.change), None
    )
    if named is None or not bisection.steps:
        return []
    total = {j.label: j.ratio for j in bisection.steps[0].judgements}
    lines = []
    for judgement in named.judgements:
        whole = total.get(judgement.label, math.nan)
        if not (whole > 0 and judgement.ratio > 0) or abs(math.log(whole)) == 0:
            continue
        if math.log(judgement.ratio) / math.log(whole) < 0.5:
            lines.append(
                f"  {judgement.label}: {search.named} brings {judgement.ratio - 1:+.1%} of "
                f"{bisection.plan.good} to {bisection.plan.bad}'s {whole - 1:+.1%}: the change "
                f"builds up over several releases; bisect the rest with --good {search.named}"
            )
    return lines


def summary_lines(bisection: Bisection) -> list[str]:
    lines = [answer(bisection), *accrued(bisection)]
    lines.append(f"stopped: {bisection.stopped} ({bisection.elapsed_s:.0f} s)")
    passed = bisection.search.passed_over.items()
    lines += [f"  {version}: passed over, {why}" for version, why in passed]
    lines.append("environments (kept; stackwars env lists them):")
    lines += [f"  {prepared_line(prepared)}" for prepared in bisection.environments]
    lines.append(
        "steps (kept: each round's run file, and a store a side: stackwars runs --db "
        "FOLDER/baseline.sqlite):"
    )
    for step in bisection.steps:
        files = len(list(step.folder.glob("*.json")))
        lines.append(
            f"  {step.newer} against {step.older}: {step.word}, {files} run files in {step.folder}"
        )
    return lines
