"""The parent half of the behave worker (instruments/behave/worker.py): a probe on a stack as a task
any executor runs (runner/tasks.py), from its request to the outcome its worker answered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stackwars.frameworks import stack_environment
from stackwars.instruments.behave import probes
from stackwars.instruments.behave.data import Outcome
from stackwars.runner.child import ChildEnd, Limits, run_child
from stackwars.runner.environments import interpreter_for, stack_problem
from stackwars.runner.tasks import Placement, Where
from stackwars.runner.toolchain import MachineChecksFailed

WORKER = "stackwars.instruments.behave.worker"


@dataclass(frozen=True)
class ProbeTask:
    probe: str
    stack: str
    limits: Limits
    workload_files: tuple[str, ...] = ()
    index: int = 0  # its place in the batch, naming its compile-cache folder

    def label(self) -> str:
        return f"{self.probe} on {self.stack}"

    def _missing(self) -> str | None:
        return stack_problem(self.stack)

    def placement(self) -> Placement | None:
        # A probe observes behaviour, not time: one CPU is enough, and no worker at all when
        # the stack is not installed.
        return None if self._missing() else Placement(whole_node=False)

    def run(self, where: Where) -> Outcome:
        missing = self._missing()
        if missing:
            return Outcome(self.probe, self.stack, "unsupported", missing)
        folder = where.caches.for_cell(self.index)
        try:
            files = self.workload_files
            where.caches.start_checked(self.stack, folder, self.limits, None, files)
            end = self._ask(
                {
                    "probe": self.probe,
                    "stack": self.stack,
                    "cache_dir": str(folder),
                    "workload_files": list(self.workload_files),
                }
            )
        except MachineChecksFailed as exc:
            return Outcome(self.probe, self.stack, "error", str(exc))
        finally:
            where.caches.release(folder)
        if end.ok and end.result is not None:
            result = end.result
            return Outcome(
                self.probe,
                self.stack,
                result["outcome"],
                result["detail"],
                result.get("compiles"),
                result.get("calls"),
            )
        return Outcome(self.probe, self.stack, end.status, end.detail)

    def not_run(self, status: str, reason: str, node: dict[str, Any]) -> Outcome:
        del node  # an outcome does not record where it ran
        return Outcome(self.probe, self.stack, status, reason)

    def _ask(self, request: dict[str, Any]) -> ChildEnd:
        """The probe's worker; for a probe across processes, then a second fresh worker that
        compares its draws with the first one's (and whose answer is the outcome)."""
        interpreter = interpreter_for(stack_environment(self.stack))
        end = run_child(WORKER, "behave", request, self.limits, interpreter=interpreter)
        result = end.result
        if probes.get(self.probe).across_processes and end.ok and result and "draws" in result:
            again = {**request, "earlier": result["draws"]}
            end = run_child(WORKER, "behave", again, self.limits, interpreter=interpreter)
        return end
