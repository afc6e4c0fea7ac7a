"""A whole run, owned by the service: the one path the shell (``stackwars run``, ``rerun``,
``--resume``) and Python (``stackwars.run``) take.

:func:`execute_run` measures a planned run on an executor and does everything a run does
after that, in this order, so that no caller has to assemble it:

1. the cells: at ``--repeat auto`` a pilot first (not stored) plans each cell's workers, and
   rounds add them (``adaptive.pilot_then_grow``); for a question (the claims' undecided
   cells) rounds of the cells it still wants (``adaptive.grow``); otherwise each planned
   cell once;
2. at one worker a cell, the second look (``adaptive.second_look``): a second worker of the
   cheapest ok cells, its verdict kept in their settings;
3. the after-run steps asked for (:class:`AfterRun`: IR capture, profiling), each after every
   timed cell has ended, so that no timed number changes.

Every write of the run goes through one :class:`api.RunWriter`: each cell into the store and
the JSON file as it ends, the cells the pilot or the second look annotated stored again, and
what each after-run step found, kept by that step's own service.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from stackwars.config import RunOptions
from stackwars.errors import UsageError
from stackwars.results.run import Run
from stackwars.results.schema import Cell
from stackwars.results.store import Store
from stackwars.runner import session
from stackwars.service import adaptive, api
from stackwars.service.choices import Measure, Selection
from stackwars.timing.compare import MIN_WORKERS


@dataclass(frozen=True)
class Sampling:
    """What a run measures beyond its plan: ``auto`` (``--repeat auto``'s pilot and added
    rounds, within ``limits``), ``question`` (rounds of the cells it still wants after each
    round, within ``limits``: the claims' undecided cells) and ``second_look_s`` (at one
    worker a cell, the seconds a second worker of the cheapest ok cells may take; 0: none)."""

    auto: bool = False
    second_look_s: float = 0.0
    limits: adaptive.Adaptive = field(default_factory=adaptive.Adaptive)
    question: adaptive.Wanting | None = None

    def __post_init__(self) -> None:
        if self.second_look_s < 0:
            raise UsageError(
                f"--second-look {self.second_look_s:g} must be 0 (none) or a number of seconds"
            )

    @classmethod
    def of(cls, repeat: int | str, second_look_s: float, *, resumed: bool = False) -> Sampling:
        """A run's sampling from its ``--repeat`` (a number or 'auto') and ``--second-look``:
        the pilot only on a fresh ``auto`` run, the second look only on a fresh run of one
        worker a cell (a resumed run keeps the plan it stored)."""
        checked = cls(second_look_s=second_look_s)  # a bad value is refused in any case
        if resumed:
            return cls()
        auto = adaptive.parse_repeat(str(repeat)) is None
        single = not auto and int(repeat) == 1
        return cls(auto=auto, second_look_s=checked.second_look_s if single else 0.0)


def workers_per_cell(repeat: int | str) -> int:
    """The workers each cell gets in a run's plan for ``--repeat`` (a number, or 'auto': the
    pilot's count, ``MIN_WORKERS``)."""
    workers = adaptive.parse_repeat(str(repeat))
    return MIN_WORKERS if workers is None else workers


class AfterRun(Protocol):
    """A step after every timed cell of a run ended (IR capture, profiling): it measures in
    fresh workers of its own and yields what it finds, one finding at a time (``findings``,
    nothing stored); the run's writer hands each to the step's ``keep`` the moment it comes,
    so an interrupted step keeps what it had found. ``keep`` is the step's instrument's
    service: it stores the finding with the run (in ``results`` and in ``record``). ``files``
    is the folder beside the store where a step may keep files."""

    @property
    def name(self) -> str:
        """What the step is called in ``Executed.found``."""
        ...

    def findings(
        self, record: Run, options: RunOptions, files: Path, on_progress: Callable[[str], None]
    ) -> Iterator[Any]:
        """What the step finds for ``record``'s cells, each as it is found."""
        ...

    def keep(self, results: Store, record: Run, finding: Any) -> None:
        """One finding stored with the run."""
        ...


@dataclass
class Executed:
    """A run measured: its record and what each after-run step found, by step name."""

    record: Run
    found: dict[str, list[Any]] = field(default_factory=dict)
    second_look: bool = False


def execute_run(
    planned: api.PlannedRun,
    results: Store,
    reporter: session.Reporter,
    *,
    executor: session.Executor | None = None,
    json_path: Path | None = None,
    sampling: Sampling | None = None,
    after: Sequence[AfterRun] = (),
    on_round: Callable[[Sequence[str]], None] = lambda stacks: None,
    on_step: Callable[[str, str], None] = lambda step, text: None,
    clock: Callable[[], float] = time.monotonic,
) -> Executed:
    """Measure ``planned`` on ``executor`` (None: one cell at a time here) and do what the
    run's ``sampling`` and ``after`` steps ask (module docstring); ``on_round`` hears the
    stacks of each round added after the plan (a progress bar's total), ``on_step`` each
    after-run step's progress. The executor is closed at the end."""
    sampling = sampling or Sampling()
    writer = api.RunWriter(results, json_path)
    runner = executor or api.open_executor("local", None, planned.options)
    try:

        def execute(part: api.PlannedRun) -> Run:
            return api.execute_into(part, writer, reporter, runner)

        def again(part: api.PlannedRun) -> list[Cell]:
            return api.measure_again(part, reporter, runner)

        if sampling.auto:
            record, piloted = adaptive.pilot_then_grow(
                planned, execute, again, settings=sampling.limits, clock=clock,
                on_round=on_round,
            )  # fmt: skip
            writer.annotated(record, piloted)
        elif sampling.question is not None:
            record = adaptive.grow(
                planned, execute, sampling.question, settings=sampling.limits, clock=clock,
                on_round=on_round,
            )  # fmt: skip
        else:
            record = execute(planned)
        if sampling.second_look_s > 0:
            looked = adaptive.second_look(record, planned, again, sampling.second_look_s, on_round)
            writer.annotated(record, looked)
    finally:
        runner.close()
    executed = Executed(record, second_look=sampling.second_look_s > 0)
    files = results.path.resolve().parent
    for step in after:
        kept = executed.found.setdefault(step.name, [])
        for finding in step.findings(record, planned.options, files, _told(on_step, step.name)):
            writer.after_run(step.keep, record, finding)
            kept.append(finding)
    return executed


def _told(on_step: Callable[[str, str], None], name: str) -> Callable[[str], None]:
    return lambda text: on_step(name, text)


def run(
    workload: str | None = None,
    *,
    suite: str | None = None,
    params: Mapping[str, Any] | None = None,
    stacks: str | Sequence[str] | None = None,
    device: str = "cpu",
    db: str | None = None,
    workload_files: Sequence[str] = (),
    reporter: session.Reporter | None = None,
    repeat: int | str = 1,
    second_look_s: float = adaptive.SECOND_LOOK_S,
    json_path: str | None = None,
    after: Sequence[AfterRun] = (),
    executor: session.Executor | None = None,
    **measure: Any,
) -> Run:
    """Measure cells from Python and return the run, stored like any other: the same path as
    ``stackwars run`` (:func:`execute_run`), with its defaults.

    ``params`` maps a parameter to a value or a list of values (one cell each); ``stacks`` is
    a comma list or a list of stack names; ``device`` is cpu, gpu, gpu:1 or tpu;
    ``workload_files`` register more workloads; ``repeat`` is a number of fresh workers a
    cell or ``"auto"`` (a pilot plans each cell's workers); ``second_look_s`` is the seconds
    a second worker of the cheapest cells may take at ``repeat=1`` (0: none); ``json_path``
    keeps the run's JSON file current; ``after`` are after-run steps (an instrument's, e.g.
    ``stackwars.instruments.profile.service.ProfileAfterRun()``); ``measure`` takes
    :class:`Measure`'s other fields (``budget_s=0.5``, ``force=True``...); the store is
    ``db``, else ``$STACKWARS_DB``, else ``./stackwars.sqlite``. Example::

        run("gemm", params={"n": [256, 1024]}, stacks="numpy,jax:jit", repeat="auto")
    """
    texts = tuple(f"{name}={_value_text(value)}" for name, value in (params or {}).items())
    stack_text = stacks if isinstance(stacks, str) or stacks is None else ",".join(stacks)
    selection = Selection(
        suite=suite,
        workload=workload,
        params=texts,
        stacks=stack_text,
        device=device,
        workload_files=tuple(workload_files),
    )
    sampling = Sampling.of(repeat, second_look_s)
    chosen = Measure(repeat=workers_per_cell(repeat), **measure)
    planned = api.plan_run(selection, chosen, argv=["stackwars.run"])
    executed = execute_run(
        planned,
        api.open_store(db),
        reporter or api.SilentReporter(),
        executor=executor,
        json_path=Path(json_path) if json_path else None,
        sampling=sampling,
        after=after,
    )
    return executed.record


def _value_text(value: Any) -> str:
    if isinstance(value, str) or not isinstance(value, Sequence):
        return str(value)
    return ",".join(map(str, value))
