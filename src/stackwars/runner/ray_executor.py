"""Tasks as Ray tasks (``stackwars run --executor ray``, ``behave --executor ray``): the only
module that imports Ray, and only when that executor is asked for (runner/executors.py).

Each task (runner/tasks.py: a cell, a probe on a stack) is one Ray task that runs the task's
own ``run`` on the node Ray places it on: the same isolated workers, started through
runner/child.py, under the same timeout and memory budget as on one machine (a cell through
``session.measure_cell``). Ray adds placement, not a second way to measure. A task asks for
what its :class:`~stackwars.runner.tasks.Placement` says keeps its numbers honest: every CPU of
a node for a CPU cell (two timed cells never share cores; with nodes of different sizes that is
the largest node's count, so CPU cells go to the largest nodes; nodes started with a
``stackwars_cell`` resource of 1 take one CPU cell at a time whatever their size), one CPU for
a probe, one GPU (or TPU) for a device cell, and the plan's predicted peak as memory. A task no
node could ever take ends at once as data (``unsupported``, ``oom``) instead of waiting
forever, and so do waiting tasks when the nodes that could take them leave.

Each cell records the node it ran on: the machine (results/metadata.py's ``node_info``), the
Ray node's id, and the resources the node offers Ray (``ray_resources``: its kind, part of its
machine identity in results/machines.py, since several nodes may share one host).

Results come back as each task ends (``ray.wait``) and go to the run loop (session.py), which
stores them. A task whose worker process or node dies becomes that cell's ``error`` with
Ray's reason; tasks are never retried, since a retry would be a second, unannounced
measurement. A cell whose node left the cluster (``NodeDiedError``, or no node left that could
take it) is marked ``lost`` in its node: it was never measured, and ``--resume`` measures it
again. When the cluster's head stops answering, nothing more can be placed or heard of: the
run stops (:class:`RayHeadLostError`) and ends ``interrupted``, every finished cell kept.
Closing the stream (Ctrl-C) cancels every outstanding task, killing its worker.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
from collections.abc import Generator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import ray
import ray.exceptions

from stackwars.config import RunOptions
from stackwars.errors import UsageError
from stackwars.frameworks.base import split_device
from stackwars.results.metadata import node_info
from stackwars.runner.tasks import (
    Caches,
    ExecutorLostError,
    Placement,
    Task,
    TaskReporter,
    Where,
)

R = TypeVar("R")

CONNECT_TIMEOUT_S = 5.0  # an address that does not answer in this time is unreachable
RECHECK_S = 2.0  # how often waiting tasks are checked against the nodes still alive
REASON_CHARS = 600
# A node started with this resource (``--resources '{"stackwars_cell": 1}'``) takes one timed
# CPU cell at a time, whatever its size: nodes of different sizes all take cells.
CELL_SLOT = "stackwars_cell"
REMEASURED = "--resume measures it once a node that can run it is back"
KIND_SHARE = 0.001  # what a task asks of a --ray-resource: it picks the nodes, not how many
# What a node offers Ray that is not its kind: the memory Ray sized from what was free when the
# node started, the node's own address (``node:IP``), placement groups' bundles.
NOT_KIND = ("memory", "object_store_memory")


class RayConnectError(UsageError):
    """The Ray cluster named by --ray-address cannot be reached or joined."""


class RayHeadLostError(ExecutorLostError):
    """The Ray cluster's head stopped answering during a run."""


class RayExecutor:
    """Cells as Ray tasks on a cluster this process is connected to."""

    def __init__(self, owned: bool, kinds: tuple[str, ...] = ()) -> None:
        self.owned = owned  # whether closing should disconnect (or stop the local instance)
        self.kinds = kinds  # resources a node must offer to take a task (--ray-resource)

    @classmethod
    def connect(
        cls, address: str | None, options: RunOptions, kinds: tuple[str, ...] = ()
    ) -> RayExecutor:
        """Connected to ``address`` (None: a Ray instance of its own on this machine, or the
        cluster this process is connected to already), placing tasks only on nodes offering
        ``kinds``; one line saying why not otherwise."""
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
            return cls(owned=False, kinds=kinds)
        quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
        if address is None:
            ray.init(address="local", include_dashboard=False, **quiet)
            return cls(owned=True, kinds=kinds)
        try:
            ray.init(address=address, **quiet)
        except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:
            why = " ".join(str(exc).split())[:REASON_CHARS]
            raise RayConnectError(f"cannot join the Ray cluster at {address}: {why}") from None
        return cls(owned=True, kinds=kinds)

    def close(self) -> None:
        if self.owned and ray.is_initialized():
            ray.shutdown()

    def results(
        self, tasks: Sequence[Task[R]], caches: Caches, reporter: TaskReporter
    ) -> Generator[R, None, None]:
        waiting: dict[Any, tuple[Task[R], dict[str, Any]]] = {}
        lost: dict[Any, str] = {}  # tasks cancelled because no node left can run them
        head = ray.get_runtime_context().gcs_address
        try:
            nodes = alive_nodes()
            refused = []
            for task in tasks:
                placement = task.placement()
                if placement is None:  # it starts no worker: it ends here, at once
                    refused.append(_here(task, caches))
                    continue
                request, status, reason = task_resources(placement, nodes, self.kinds)
                if reason:
                    refused.append(task.not_run(status, reason, {"executor": "ray"}))
                    continue
                remote = _run_task.options(**request, name=task.label())
                waiting[remote.remote(task, caches)] = (task, request)
            yield from refused
            _report(waiting, reporter)
            while waiting:
                ready, _ = ray.wait(list(waiting), num_returns=1, timeout=RECHECK_S)
                if not ready:
                    check_head(head)  # Ray's own calls to a head that is gone wait for a minute
                    lost.update(cancel_unplaceable(waiting, lost))
                    continue
                task, _request = waiting.pop(ready[0])
                yield _result(ready[0], task, lost.get(ready[0]), head)
                _report(waiting, reporter)
        except RayHeadLostError:
            waiting.clear()  # its tasks died with it, or will: nothing is left to cancel them
            raise
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


def check_head(address: str) -> None:
    """Raise :class:`RayHeadLostError` when nothing answers at the head's ``address`` now."""
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        why = exc.strerror or f"no answer within {CONNECT_TIMEOUT_S:g} s"
        raise RayHeadLostError(
            f"the Ray cluster's head at {address} stopped answering ({why}); the run stops "
            "here, interrupted, with every finished cell stored: start the cluster again and "
            f"finish it with 'stackwars run --resume RUN --executor ray --ray-address {address}' "
            "(RUN: its id, as 'stackwars runs' lists it)"
        ) from None


def alive_nodes() -> list[Mapping[str, float]]:
    """The resources of every node of the cluster that is alive now."""
    return [node["Resources"] for node in ray.nodes() if node.get("Alive")]


def task_resources(
    placement: Placement, nodes: Sequence[Mapping[str, float]], kinds: Sequence[str] = ()
) -> tuple[dict[str, Any], str, str]:
    """What a task placed so asks Ray for (on nodes offering every resource of ``kinds``), or
    the status and reason why no node can run it."""
    offering = [node for node in nodes if all(node.get(name, 0.0) > 0 for name in kinds)]
    if kinds and not offering:
        offered = sorted({name for node in nodes for name in node_kind(node)})
        reason = (
            f"no node of the Ray cluster offers {' and '.join(kinds)} (--ray-resource); its "
            f"nodes offer {', '.join(offered)}"
        )
        return {}, "unsupported", reason
    device = split_device(placement.device)[0]
    request = _request(device, placement, offering)
    if not any(fits(request, node) for node in offering):
        what = "CPUs" if device == "cpu" else f"a {device.upper()} Ray knows of"
        among = f" offering {' and '.join(kinds)}" if kinds else ""
        return request, "unsupported", f"no node of the Ray cluster{among} has {what}"
    if kinds:  # a share, as Ray's own accelerator_type: it picks nodes, it does not count
        request["resources"] = {**request.get("resources", {}), **dict.fromkeys(kinds, KIND_SHARE)}
    return _with_memory(request, placement, offering)


def _request(
    device: str, placement: Placement, nodes: Sequence[Mapping[str, float]]
) -> dict[str, Any]:
    if device == "cpu" and placement.whole_node:
        return whole_node(nodes)
    if device == "cpu":
        return {"num_cpus": 1}
    if device == "gpu":
        return {"num_cpus": 1, "num_gpus": 1}
    return {"num_cpus": 1, "resources": {device.upper(): 1}}


def _with_memory(
    request: dict[str, Any], placement: Placement, nodes: Sequence[Mapping[str, float]]
) -> tuple[dict[str, Any], str, str]:
    """``request`` with the predicted peak as memory, or ``oom`` when no node offers it."""
    predicted = placement.memory_bytes
    if predicted and not any(fits({**request, "memory": predicted}, n) for n in nodes):
        if not placement.force:
            largest = max(node.get("memory", 0.0) for node in nodes) / 2**30
            reason = (
                f"predicted peak {predicted / 2**30:.2f} GiB is more memory than any node offers "
                f"Ray (largest {largest:.2f} GiB); --force runs it without that reservation"
            )
            return request, "oom", reason
    elif predicted:
        request["memory"] = predicted
    return request, "", ""


def whole_node(nodes: Sequence[Mapping[str, float]]) -> dict[str, Any]:
    """What a timed CPU cell asks for so that no other cell shares its cores: a node's one
    ``stackwars_cell`` where the nodes offer one (nodes without it then take no CPU cell), or
    else every CPU of the largest node."""
    if any(node.get(CELL_SLOT) for node in nodes):
        return {"num_cpus": 1, "resources": {CELL_SLOT: 1}}
    return {"num_cpus": max((node.get("CPU", 0.0) for node in nodes), default=0)}


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
    waiting: Mapping[Any, tuple[Task[Any], dict[str, Any]]], lost: Mapping[Any, str]
) -> dict[Any, str]:
    """Cancel the waiting tasks no node still alive could run (theirs left the cluster)."""
    nodes = alive_nodes()
    gone = {}
    for ref, (task, request) in waiting.items():
        if ref not in lost and not any(fits(request, node) for node in nodes):
            ray.cancel(ref, force=True)
            gone[ref] = (
                f"the nodes of the Ray cluster that could run {task.label()} left it "
                f"before it finished; {REMEASURED}"
            )
    return gone


def _here(task: Task[R], caches: Caches) -> R:
    """A task that starts no worker (a skipped cell), ended in this process."""
    folders = caches.open()
    try:
        return task.run(Where(folders, {"executor": "ray"}))
    finally:
        folders.close()


def _report(
    waiting: Mapping[Any, tuple[Task[Any], dict[str, Any]]], reporter: TaskReporter
) -> None:
    if not waiting:
        return
    first, _request = next(iter(waiting.values()))
    more = f" (+{len(waiting) - 1} more on the Ray cluster)" if len(waiting) > 1 else ""
    reporter.start_cell(f"{first.label()}{more}")


NODE_LEFT = (ray.exceptions.NodeDiedError, ray.exceptions.LocalRayletDiedError)


def _result(ref: Any, task: Task[R], lost: str | None, head: str) -> R:
    try:
        return ray.get(ref)
    except ray.exceptions.RayError as exc:
        check_head(head)  # a task that died with the head is the run's end, not a cell's
        status, reason = ("error", lost) if lost else task_failure(exc)
        node: dict[str, Any] = {"executor": "ray"}
        if lost or isinstance(exc, NODE_LEFT):
            node["lost"] = True  # never measured: --resume measures it again
        return task.not_run(status, reason, node)


def task_failure(exc: BaseException) -> tuple[str, str]:
    """The status and reason of a cell whose task ended with Ray's ``exc``."""
    text = " ".join(str(exc).split())[:REASON_CHARS]
    if isinstance(exc, ray.exceptions.OutOfMemoryError):
        return "oom", f"Ray's memory monitor killed the task: {text}"
    if isinstance(exc, NODE_LEFT):
        return "error", f"the node running the cell left the Ray cluster: {text}; {REMEASURED}"
    if isinstance(exc, ray.exceptions.WorkerCrashedError):
        return "error", f"the Ray worker process running the cell died (killed or crashed): {text}"
    return "error", f"the Ray task failed ({type(exc).__name__}): {text}"


@ray.remote(max_retries=0)
def _run_task(task: Task[R], caches: Caches) -> R:
    """On the node: the task in fresh workers, with compile caches in a folder of this node
    (or --cache-dir, on this node), and this node as where it ran."""
    _drop_ray_thread_setting()
    node_id = ray.get_runtime_context().get_node_id()
    node = {"executor": "ray", **_this_node(), "ray_node_id": node_id}
    node["ray_resources"] = _node_kind(node_id)
    folders = caches.open()
    try:
        return task.run(Where(folders, node))
    finally:
        folders.close()


@functools.cache
def _this_node() -> dict[str, Any]:
    return node_info()


@functools.cache
def _node_kind(node_id: str) -> dict[str, float]:
    """What the node ``node_id`` offers Ray, as its operator declared it (its kind)."""
    for node in ray.nodes():
        if node["NodeID"] == node_id:
            return node_kind(node["Resources"])
    raise LookupError(f"Ray does not list the node {node_id} this task runs on")


def node_kind(resources: Mapping[str, float]) -> dict[str, float]:
    """A node's resources less what is not its kind (:data:`NOT_KIND`, ``node:`` addresses,
    placement groups' bundles), sorted by name."""
    return {
        name: amount
        for name, amount in sorted(resources.items())
        if name not in NOT_KIND and not name.startswith("node:") and "_group_" not in name
    }


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
