"""Cells as Ray tasks (``stackwars run --executor ray``): the only module that imports Ray,
and only when that executor is asked for (runner/executors.py).

Each cell is one task that runs :func:`executors.measure_cell` on the node Ray places it on:
the same isolated worker, started through runner/child.py, under the same timeout and memory
budget as on one machine. Ray adds placement, not a second way to measure. A task asks for
what keeps its numbers honest: every CPU of a node for a CPU cell (two timed cells never share
cores; with nodes of different sizes that is the largest node's count, so CPU cells go to the
largest nodes), one GPU (or TPU) for a device cell, and the plan's predicted peak as memory.
A cell no node could ever take ends at once as data (``unsupported``, ``oom``) instead of
waiting forever, and so do waiting cells when the nodes that could take them leave.

Results come back as each task ends (``ray.wait``) and go to the run loop (session.py), which
stores them. A task whose worker process or node dies becomes that cell's ``error`` with
Ray's reason; tasks are never retried, since a retry would be a second, unannounced
measurement. Closing the stream (Ctrl-C) cancels every outstanding task, killing its worker.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
from collections.abc import Generator, Mapping, Sequence
from pathlib import Path
from typing import Any

import ray
import ray.exceptions

from stackwars.config import RunOptions
from stackwars.errors import UsageError
from stackwars.frameworks.base import split_device
from stackwars.results.metadata import node_info
from stackwars.results.schema import Cell
from stackwars.runner.executors import measure_cell, ran_on
from stackwars.runner.isolate import failed_cell
from stackwars.runner.plan import PlannedCell
from stackwars.runner.session import CacheFolders, Reporter, request_for

CONNECT_TIMEOUT_S = 5.0  # an address that does not answer in this time is unreachable
RECHECK_S = 2.0  # how often waiting tasks are checked against the nodes still alive
REASON_CHARS = 600


class RayConnectError(UsageError):
    """The Ray cluster named by --ray-address cannot be reached or joined."""


class RayExecutor:
    """Cells as Ray tasks on a cluster this process is connected to."""

    def __init__(self, owned: bool) -> None:
        self.owned = owned  # whether closing should disconnect (or stop the local instance)

    @classmethod
    def connect(cls, address: str | None, options: RunOptions) -> RayExecutor:
        """Connected to ``address`` (None: a Ray instance of its own on this machine, or the
        cluster this process is connected to already); one line saying why not otherwise."""
        _check_options(options)
        if address is not None:
            _probe(address)
        if ray.is_initialized():
            current = ray.get_runtime_context().gcs_address
            if address not in (None, current):
                raise RayConnectError(
                    f"this process is connected to the Ray cluster at {current} already; give "
                    "that address, or none"
                )
            return cls(owned=False)
        quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
        if address is None:
            ray.init(address="local", include_dashboard=False, **quiet)
            return cls(owned=True)
        try:
            ray.init(address=address, **quiet)
        except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:
            why = " ".join(str(exc).split())[:REASON_CHARS]
            raise RayConnectError(f"cannot join the Ray cluster at {address}: {why}") from None
        return cls(owned=True)

    def close(self) -> None:
        if self.owned and ray.is_initialized():
            ray.shutdown()

    def cells(
        self, planned: Sequence[PlannedCell], options: RunOptions, reporter: Reporter
    ) -> Generator[Cell, None, None]:
        waiting: dict[Any, tuple[PlannedCell, dict[str, Any]]] = {}
        lost: dict[Any, str] = {}  # tasks cancelled because no node left can run them
        try:
            nodes = alive_nodes()
            refused = []
            for index, item in enumerate(planned):
                request, status, reason = task_resources(item, nodes, options.force)
                if item.skip_reason or reason:
                    refused.append(_not_run(item, options, status, reason))
                    continue
                task = _run_cell.options(**request, name=item.spec.label())
                waiting[task.remote(item, options, index)] = (item, request)
            yield from refused
            _report(waiting, reporter)
            while waiting:
                ready, _ = ray.wait(list(waiting), num_returns=1, timeout=RECHECK_S)
                if not ready:
                    lost.update(cancel_unplaceable(waiting, lost))
                    continue
                item, _request = waiting.pop(ready[0])
                yield _result(ready[0], item, options, lost.get(ready[0]))
                _report(waiting, reporter)
        finally:
            for ref in waiting:
                ray.cancel(ref, force=True)


def _check_options(options: RunOptions) -> None:
    kind, index = split_device(options.device)
    if index:
        raise UsageError(
            f"--device {options.device}: a Ray task that asks for one {kind} sees only the one "
            f"it was given, as {kind}:0; use --device {kind}"
        )
    if options.cache == "warm" and options.cache_root is None:
        raise UsageError(
            "--cache warm on a Ray cluster needs a folder that every node keeps for the whole "
            "run: give --cache-dir PATH (created on each node), or use another --cache mode"
        )


def _probe(address: str) -> None:
    """Fail fast when nothing answers at ``address``: Ray itself retries for minutes."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        if address == "auto":
            return
        raise RayConnectError(
            f"--ray-address {address!r} is not HOST:PORT; give the address 'ray start --head' "
            "printed, e.g. 10.0.0.1:6379"
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        why = exc.strerror or f"no answer within {CONNECT_TIMEOUT_S:g} s"
        raise RayConnectError(
            f"no Ray cluster answers at {address} ({why}); start one with 'ray start --head', "
            "or check the address"
        ) from None


def alive_nodes() -> list[Mapping[str, float]]:
    """The resources of every node of the cluster that is alive now."""
    return [node["Resources"] for node in ray.nodes() if node.get("Alive")]


def task_resources(
    item: PlannedCell, nodes: Sequence[Mapping[str, float]], force: bool
) -> tuple[dict[str, Any], str, str]:
    """What ``item``'s task asks Ray for, or the status and reason why no node can run it."""
    kind = split_device(item.spec.device)[0]
    if kind == "cpu":
        request: dict[str, Any] = {"num_cpus": max((n.get("CPU", 0.0) for n in nodes), default=0)}
    elif kind == "gpu":
        request = {"num_cpus": 1, "num_gpus": 1}
    else:
        request = {"num_cpus": 1, "resources": {kind.upper(): 1}}
    if not any(fits(request, node) for node in nodes):
        what = "CPUs" if kind == "cpu" else f"a {kind.upper()} Ray knows of"
        return request, "unsupported", f"no node of the Ray cluster has {what}"
    predicted = item.predicted_bytes
    if predicted and not any(fits({**request, "memory": predicted}, n) for n in nodes):
        if not force:
            largest = max(node.get("memory", 0.0) for node in nodes) / 2**30
            reason = (
                f"predicted peak {predicted / 2**30:.2f} GiB is more memory than any node offers "
                f"Ray (largest {largest:.2f} GiB); --force runs it without that reservation"
            )
            return request, "oom", reason
    elif predicted:
        request["memory"] = predicted
    return request, "", ""


def fits(request: Mapping[str, Any], node: Mapping[str, float]) -> bool:
    """Whether a node with ``node``'s resources could ever run a task asking ``request``."""
    wanted = {
        "CPU": request.get("num_cpus", 0),
        "GPU": request.get("num_gpus", 0),
        "memory": request.get("memory", 0),
        **request.get("resources", {}),
    }
    return all(node.get(name, 0.0) >= amount for name, amount in wanted.items() if amount)


def cancel_unplaceable(
    waiting: Mapping[Any, tuple[PlannedCell, dict[str, Any]]], lost: Mapping[Any, str]
) -> dict[Any, str]:
    """Cancel the waiting tasks no node still alive could run (theirs left the cluster)."""
    nodes = alive_nodes()
    gone = {}
    for ref, (item, request) in waiting.items():
        if ref not in lost and not any(fits(request, node) for node in nodes):
            ray.cancel(ref, force=True)
            gone[ref] = (
                f"the nodes of the Ray cluster that could run {item.spec.label()} left it "
                "before it finished"
            )
    return gone


def _report(waiting: Mapping[Any, tuple[PlannedCell, dict[str, Any]]], reporter: Reporter) -> None:
    if not waiting:
        return
    first, _request = next(iter(waiting.values()))
    more = f" (+{len(waiting) - 1} more on the Ray cluster)" if len(waiting) > 1 else ""
    reporter.start_cell(f"{first.spec.label()}{more}")


def _result(ref: Any, item: PlannedCell, options: RunOptions, lost: str | None) -> Cell:
    try:
        return Cell.from_dict(ray.get(ref))
    except ray.exceptions.RayError as exc:
        status, reason = ("error", lost) if lost else task_failure(exc)
        return _not_run(item, options, status, reason)


def task_failure(exc: BaseException) -> tuple[str, str]:
    """The status and reason of a cell whose task ended with Ray's ``exc``."""
    text = " ".join(str(exc).split())[:REASON_CHARS]
    if isinstance(exc, ray.exceptions.OutOfMemoryError):
        return "oom", f"Ray's memory monitor killed the task: {text}"
    if isinstance(exc, ray.exceptions.NodeDiedError | ray.exceptions.LocalRayletDiedError):
        return "error", f"the node running the cell left the Ray cluster: {text}"
    if isinstance(exc, ray.exceptions.WorkerCrashedError):
        return "error", f"the Ray worker process running the cell died (killed or crashed): {text}"
    return "error", f"the Ray task failed ({type(exc).__name__}): {text}"


def _not_run(item: PlannedCell, options: RunOptions, status: str, reason: str) -> Cell:
    """A cell that ran on no node: skipped by the plan, refused by the cluster, or lost."""
    if item.skip_reason:
        status, reason = item.skip_status, item.skip_reason
    cell = failed_cell(request_for(item.spec, options, Path()), status, reason)
    cell.memory.predicted_bytes = item.predicted_bytes
    cell.memory.predicted_device_bytes = item.predicted_device_bytes
    cell.node = {"executor": "ray"}
    return cell


@ray.remote(max_retries=0)
def _run_cell(item: PlannedCell, options: RunOptions, index: int) -> dict[str, Any]:
    """On the node: the cell measured in a fresh worker, with the node it ran on."""
    cell = measure_on_node(item, options, index)
    cell.node["ray_node_id"] = ray.get_runtime_context().get_node_id()
    return cell.to_dict()


def measure_on_node(item: PlannedCell, options: RunOptions, index: int) -> Cell:
    """What a task does on its node: the cell in a fresh worker, with compile caches in a
    folder of this node (or --cache-dir, on this node), and this node as where it ran."""
    _drop_ray_thread_setting()
    caches = CacheFolders(options.cache, options.cache_root)
    try:
        cell = measure_cell(item, options, caches, index)
    finally:
        caches.close()
    cell.node = ran_on("ray", item, _this_node())
    return cell


@functools.cache
def _this_node() -> dict[str, Any]:
    return node_info()


def _drop_ray_thread_setting() -> None:
    """Ray sets OMP_NUM_THREADS to a task's CPUs when the worker was started without it; a
    worker on one machine runs without it, and torch then picks its threads from the physical
    cores. What the node itself was started with (the process's initial environment) stays."""
    try:
        initial = Path("/proc/self/environ").read_bytes().split(b"\0")
    except OSError:
        return
    if not any(entry.startswith(b"OMP_NUM_THREADS=") for entry in initial):
        os.environ.pop("OMP_NUM_THREADS", None)
