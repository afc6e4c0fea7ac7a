"""--executor ray on a Ray instance of this machine (loopback, 2 CPUs, started once for the
module): a tiny suite stores what the local executor stores, with the node each cell ran on;
killed workers and killed Ray worker processes become cells; Ctrl-C cancels what is left and
--resume finishes it; a cluster that does not answer is one line. The head is ended by the ids
of its processes, so these tests run beside others, and beside tests/test_ray_nodes.py's own
cluster, in the parallel pass. The functions that place
tasks and read Ray's failures are checked on made-up nodes here; tests/test_ray_nodes.py runs
them on several real Ray nodes (of different kinds, one leaving, the head restarted)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

ray = pytest.importorskip("ray")

from stackwars.cli import main  # noqa: E402 (after the skip: these import nothing of Ray)
from stackwars.config import RunOptions  # noqa: E402
from stackwars.instruments.reproduce import plan as reproduce_plan  # noqa: E402
from stackwars.results import metadata, store  # noqa: E402
from stackwars.results.schema import Cell, CellSpec  # noqa: E402
from stackwars.runner import ray_executor, session  # noqa: E402
from stackwars.runner.plan import PlannedCell  # noqa: E402

FAULTY = str(Path(__file__).parent / "data" / "faulty_workloads.py")
FAST = ["--budget", "0.05", "--quiet"]
GIB = 2**30


RAY = str(Path(sys.executable).with_name("ray"))
# What every process of the module's Ray head carries in its command line: its temporary folder,
# or (Ray's client server) its address. Set by the cluster fixture.
RAY_HEAD: list[str] = []


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A Ray head started by Ray's own command (Ray's temporary files in a folder of its own,
    removed afterwards), this process joined to it as a driver; its address for drivers in
    other processes. Starting it in this process would fork it, which JAX (imported by earlier
    tests) warns deadlocks its threads."""
    folder = tempfile.mkdtemp(prefix="swray-")  # short: Ray's socket paths must stay < 108
    port = free_port()
    address = f"127.0.0.1:{port}"
    RAY_HEAD[:] = [folder, f"--address={address}"]
    head = [RAY, "start", "--head", f"--port={port}", "--num-cpus=2", f"--temp-dir={folder}"]
    # A client server port of its own: Ray's default, 10001, is another head's on this machine.
    head += ["--include-dashboard=false", f"--ray-client-server-port={free_port()}"]
    subprocess.run(head, check=True, capture_output=True)
    try:
        ray.init(address=address, log_to_driver=False)
        yield address
    finally:
        ray.shutdown()
        ended_by_id(ray_processes())
        shutil.rmtree(folder, ignore_errors=True)


def ended_by_id(heads: list[psutil.Process]) -> None:
    """The head's processes and what they started, each killed by its id: not 'ray stop', which
    stops every Ray instance of the machine (another test's cluster, a user's head)."""
    started = []
    for head in heads:
        with contextlib.suppress(psutil.NoSuchProcess):
            started += [head, *head.children(recursive=True)]
    for process in started:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    psutil.wait_procs(started, timeout=30)


def stackwars(*argv: str) -> subprocess.Popen[str]:
    # A handler for SIGINT: a test suite started in the background ignores it, and an ignored
    # signal stays ignored across exec (see test_interrupt.py).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "stackwars", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, previous)


def suite_file(folder: Path, *cells: str) -> str:
    path = folder / "suite.toml"
    path.write_text("\n".join(cells), encoding="utf-8")
    return str(path)


def cell(workload: str, size: int = 1) -> str:
    entry = f'workload = "{workload}"\nparams = {{ size = {size} }}\nstacks = ["numpy:eager"]'
    return f"[[cells]]\n{entry}\n"


def worker_of(
    run: subprocess.Popen[str], sizes: set[int], since: float, timeout_s: float = 60
) -> tuple[psutil.Process, int]:
    """The timing worker of a ``hangs`` cell with one of ``sizes``, once ``run`` started it
    (Ray need not start tasks in the plan's order), and its size."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if run.poll() is not None:
            raise AssertionError(f"the run ended first: {run.communicate()[1][-3000:]}")
        for process in timing_workers(since):
            try:
                request = json.loads((Path(process.cwd()) / "request.json").read_text())
            except (OSError, ValueError, psutil.Error):
                continue
            asked = request["request"]["cell"]
            if asked["workload"] == "hangs" and asked["params"]["size"] in sizes:
                return process, asked["params"]["size"]
        time.sleep(0.05)
    raise AssertionError(f"no worker of hangs with a size in {sizes} within {timeout_s} s")


def ray_processes() -> list[psutil.Process]:
    """This module's Ray head: the processes started with its temporary folder or address."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if any(mark in part for part in process.info["cmdline"] or () for mark in RAY_HEAD):
            found.append(process)
    return found


def timing_workers(since: float) -> list[psutil.Process]:
    """Timing workers started since ``since`` by this module's Ray instance: descendants of
    its processes (its raylet runs every task), whatever else runs on the machine."""
    found = []
    descendants = {p.pid: p for root in ray_processes() for p in root.children(recursive=True)}
    for process in descendants.values():
        try:
            if (
                "stackwars.runner.worker" in process.cmdline()
                and process.create_time() >= since - 0.5
            ):
                found.append(process)
        except psutil.Error:
            continue
    return found


def no_timing_workers_left(since: float) -> bool:
    deadline = time.time() + 30
    while timing_workers(since) and time.time() < deadline:
        time.sleep(0.1)
    return not timing_workers(since)


def stored(db: Path) -> tuple[str, list[Cell]]:
    record = store.Store(db).load_run("latest")
    return record.status, record.cells


def by_size(cells: list[Cell]) -> dict[tuple[str, Any], Cell]:
    return {(c.workload, c.params.get("size")): c for c in cells}


@pytest.mark.slow
def test_a_tiny_suite_on_ray_stores_what_the_local_executor_stores_and_each_node(
    cluster: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--suite", "quick", "--param", "n=32", "--stacks", "numpy,jax:jit", *FAST]
    assert main([*argv, "--db", str(tmp_path / "local.sqlite")]) == 0
    assert main([*argv, "--db", str(tmp_path / "ray.sqlite"), "--executor", "ray"]) == 0
    assert "Traceback" not in capsys.readouterr().err
    _, local = stored(tmp_path / "local.sqlite")
    status, remote = stored(tmp_path / "ray.sqlite")
    assert status == "complete" and len(remote) == len(local) >= 4
    # Stored as each ended: on Ray that need not be the plan's order.
    assert sorted((c.key(), c.status, c.parity.ok) for c in remote) == sorted(
        (c.key(), c.status, c.parity.ok) for c in local
    )
    here = metadata.node_info()
    for ran in remote:
        assert ran.status == "ok", ran.reason
        assert ran.node["executor"] == "ray" and ran.node["ray_node_id"]
        assert ran.node["fingerprint"] == here["fingerprint"]
        assert ran.node["hostname"] == here["hostname"]
        assert ran.node["versions"]["numpy"] == here["versions"]["numpy"]
        # Ray's OMP_NUM_THREADS for a task's CPUs does not reach the worker.
        assert "OMP_NUM_THREADS" not in ran.settings.get("inherited_environment", {})
    assert all(c.node["executor"] == "local" for c in local)


@pytest.mark.slow
def test_behave_on_ray_stores_what_it_stores_here(cluster: str, tmp_path: Path) -> None:
    db = str(tmp_path / "db.sqlite")
    argv = ["behave", "--probes", "boolean-mask,side-effect", "--stacks", "numpy:eager"]
    assert main([*argv, "--quiet", "--executor", "ray", "--ray-address", cluster, "--db", db]) == 0
    record = store.Store(Path(db)).load_run("latest")
    assert record.kind == "behave" and record.status == "complete"
    assert [(o["probe"], o["outcome"]) for o in record.outcomes] == [
        ("boolean-mask", "works"),
        ("side-effect", "works"),
    ]


@pytest.mark.slow
def test_an_edition_on_ray_measures_each_kind_of_part_there(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``stackwars reproduce --executor ray``: a cells part, a probes part and a claims part
    (the tiny edition's, on NumPy and jax.jit only) each measured on the cluster, the edition
    done and its findings written."""
    kinds = {part.kind: part for part in reproduce_plan.TINY}
    cells = dataclasses.replace(kinds[reproduce_plan.CELLS], stacks="numpy:eager")
    probes = dataclasses.replace(kinds[reproduce_plan.PROBES], stacks="numpy:eager")
    claims = dataclasses.replace(
        kinds[reproduce_plan.CLAIMS],
        claims=("seed002-jit-poly-6x",),
        claim_params=(("seed002-jit-poly-6x", ("n=64",)),),
    )
    monkeypatch.setitem(reproduce_plan.SCALES, "tiny", (cells, probes, claims))
    out, db = tmp_path / "edition", tmp_path / "db.sqlite"
    argv = ["reproduce", "--scale", "tiny", "--quiet", "--out", str(out), "--db", str(db)]
    assert main([*argv, "--executor", "ray", "--ray-address", cluster]) == 0
    edition = json.loads((out / "edition.json").read_text(encoding="utf-8"))
    assert [part["status"] for part in edition["parts"]] == ["done"] * 3
    results = store.Store(db)
    measured = [results.load_run(part["run_id"]) for part in edition["parts"]]
    assert measured[1].outcomes and measured[1].kind == "behave"
    for record in (measured[0], measured[2]):
        assert record.cells and all(c.node["executor"] == "ray" for c in record.cells)
    assert "seed002-jit-poly-6x" in (out / "findings.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_killed_workers_and_killed_ray_workers_become_cells_and_the_run_goes_on(
    cluster: str, tmp_path: Path
) -> None:
    db, started = tmp_path / "db.sqlite", time.time()
    suite = suite_file(tmp_path, cell("hangs", 1), cell("hangs", 2), cell("doubles"))
    run = stackwars(
        *("run", "--workload-file", FAULTY, "--suite-file", suite, "--timeout", "120", *FAST),
        *("--executor", "ray", "--ray-address", cluster, "--db", str(db)),
    )
    worker, first = worker_of(run, {1, 2}, started)
    worker.kill()  # the cell's own worker, killed from outside
    worker, second = worker_of(run, {1, 2} - {first}, started)
    ray_worker = worker.parent()  # the Ray worker process running the task
    assert ray_worker is not None and "ray::" in " ".join(ray_worker.cmdline())
    ray_worker.kill()
    _, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    status, cells = stored(db)
    found = by_size(cells)
    assert status == "complete" and len(cells) == 3
    assert found["hangs", first].status == "oom" and "SIGKILL" in found["hangs", first].reason
    assert found["hangs", second].status == "error"
    assert "Ray worker process running the cell died" in found["hangs", second].reason
    assert found["doubles", 1].status == "ok" and found["doubles", 1].node["executor"] == "ray"
    assert no_timing_workers_left(started)


@pytest.mark.slow
def test_ctrl_c_cancels_the_outstanding_tasks_and_resume_runs_only_what_is_missing(
    cluster: str, tmp_path: Path
) -> None:
    db, started = tmp_path / "db.sqlite", time.time()
    suite = suite_file(tmp_path, cell("doubles"), cell("hangs", 1), cell("hangs", 2))
    ray_here = ("--executor", "ray", "--ray-address", cluster, "--db", str(db))
    run = stackwars(
        "run", "--workload-file", FAULTY, "--suite-file", suite, "--timeout", "3", *FAST, *ray_here
    )
    worker_of(run, {1, 2}, started)
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 130, err
    status, before = stored(db)
    assert status == "interrupted" and len(before) < 3
    assert no_timing_workers_left(started)
    resumed = stackwars("run", "--resume", "latest", "--quiet", *ray_here)
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    status, cells = stored(db)
    assert status == "complete" and cells[: len(before)] == before
    assert sorted((c.workload, c.params["size"], c.status) for c in cells) == [
        ("doubles", 1, "ok"),
        ("hangs", 1, "timeout"),
        ("hangs", 2, "timeout"),
    ]
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT COUNT(*) FROM runs").fetchone() == (1,)


def test_a_cluster_that_does_not_answer_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket_bound() as port:  # a port nobody listens on: refused at once
        argv = ["run", "--workload", "gemm", "--stacks", "numpy", "--executor", "ray"]
        db = tmp_path / "db.sqlite"
        code = main([*argv, "--ray-address", f"127.0.0.1:{port}", "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"no Ray cluster answers at 127.0.0.1:{port}" in err and not db.exists()
    assert main([*argv, "--ray-address", "head-node", "--db", str(db)]) == 2
    assert "is not HOST:PORT" in capsys.readouterr().err


@contextlib.contextmanager
def socket_bound() -> Iterator[int]:
    """A loopback port bound but not listening, for as long as the block runs."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield bound.getsockname()[1]


def planned(
    device: str = "cpu", predicted: int | None = None, force: bool = False
) -> session.CellTask:
    cell = PlannedCell(CellSpec("gemm", {"n": 8}, "jax:jit", device), predicted_bytes=predicted)
    return session.CellTask(cell, RunOptions(force=force), 0)


def resources(
    task: session.CellTask, nodes: list[dict[str, float]], kinds: tuple[str, ...] = ()
) -> tuple[dict[str, Any], str, str]:
    placement = task.placement()
    assert placement is not None
    return ray_executor.task_resources(placement, nodes, kinds)


def test_a_cpu_cell_asks_for_every_cpu_of_the_largest_node_and_its_predicted_memory() -> None:
    nodes = [{"CPU": 8.0, "memory": 30 * GIB}, {"CPU": 16.0, "memory": 60 * GIB}]
    request, status, _ = resources(planned(predicted=2 * GIB), nodes)
    assert request == {"num_cpus": 16.0, "memory": 2 * GIB} and status == ""
    assert ray_executor.fits(request, nodes[1]) and not ray_executor.fits(request, nodes[0])


def test_a_device_cell_asks_for_one_device_and_ends_unsupported_where_none_is() -> None:
    gpu_nodes = [{"CPU": 8.0, "GPU": 2.0, "memory": 30 * GIB}]
    request, status, _ = resources(planned("gpu"), gpu_nodes)
    assert request == {"num_cpus": 1, "num_gpus": 1} and status == ""
    request, status, reason = resources(planned("tpu"), gpu_nodes)
    assert request["resources"] == {"TPU": 1}
    assert status == "unsupported" and reason == "no node of the Ray cluster has a TPU Ray knows of"


def test_a_cell_no_node_has_memory_for_is_oom_unless_forced() -> None:
    nodes = [{"CPU": 2.0, "memory": 4 * GIB}]
    request, status, reason = resources(planned(predicted=8 * GIB), nodes)
    assert status == "oom" and "predicted peak 8.00 GiB" in reason and "largest 4.00" in reason
    request, status, _ = resources(planned(predicted=8 * GIB, force=True), nodes)
    assert request == {"num_cpus": 2.0} and status == ""


def test_ray_failures_become_statuses_with_the_reason() -> None:
    exceptions = ray.exceptions
    crashed = ray_executor.task_failure(exceptions.WorkerCrashedError())
    assert crashed[0] == "error" and "Ray worker process running the cell died" in crashed[1]
    left = ray_executor.task_failure(exceptions.NodeDiedError("node 3 is gone"))
    assert left == (
        "error",
        "the node running the cell left the Ray cluster: node 3 is gone; --resume measures it "
        "once a node that can run it is back",
    )
    assert ray_executor.task_failure(exceptions.OutOfMemoryError("too big"))[0] == "oom"
    other = ray_executor.task_failure(exceptions.ObjectLostError("abc", "owner", "lost"))
    assert other[0] == "error" and other[1].startswith("the Ray task failed (ObjectLostError)")


def test_waiting_cells_that_no_node_left_can_run_are_cancelled_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cancelled: list[str] = []
    monkeypatch.setattr(ray_executor, "alive_nodes", lambda: [{"CPU": 2.0, "memory": 4.0 * GIB}])
    monkeypatch.setattr(ray, "cancel", lambda ref, force: cancelled.append(ref))
    small, big = planned(), planned("gpu")
    waiting = {"small": (small, {"num_cpus": 2.0}), "big": (big, {"num_cpus": 1, "num_gpus": 1})}
    gone = ray_executor.cancel_unplaceable(waiting, {})
    assert cancelled == ["big"] and list(gone) == ["big"]
    assert gone["big"].startswith("the nodes of the Ray cluster that could run gemm(n=8) on jax")
    assert ray_executor.cancel_unplaceable(waiting, gone) == {}  # cancelled once


def test_nodes_that_offer_a_cell_slot_take_one_cpu_cell_each_whatever_their_size() -> None:
    slots = [{"CPU": 1.0, "stackwars_cell": 1.0}, {"CPU": 16.0, "stackwars_cell": 1.0}]
    request, status, _ = resources(planned(), slots)
    assert request == {"num_cpus": 1, "resources": {"stackwars_cell": 1}} and status == ""
    assert all(ray_executor.fits(request, node) for node in slots)
    assert not ray_executor.fits(request, {"CPU": 16.0})  # a node without one takes no cell


def test_a_nodes_kind_leaves_out_its_memory_address_and_bundles() -> None:
    offered = {"CPU": 2.0, "memory": 5e9, "object_store_memory": 1e8, "node:127.0.0.1": 1.0}
    offered |= {"CPU_group_0_abc": 1.0, "sim_h100": 1.0, "accelerator_type:H100": 1.0}
    assert ray_executor.node_kind(offered) == {
        "CPU": 2.0,
        "accelerator_type:H100": 1.0,
        "sim_h100": 1.0,
    }


def test_a_head_that_stopped_answering_stops_the_run_naming_the_resume() -> None:
    with socket_bound() as port, pytest.raises(ray_executor.RayHeadLostError) as lost:
        ray_executor.check_head(f"127.0.0.1:{port}")
    assert f"head at 127.0.0.1:{port} stopped answering" in str(lost.value)
    assert "--resume RUN --executor ray --ray-address" in str(lost.value)


def test_a_ray_resource_keeps_cells_to_the_nodes_offering_it() -> None:
    nodes = [{"CPU": 16.0, "GPU": 8.0, "A100": 1.0}, {"CPU": 8.0, "GPU": 4.0, "H100": 1.0}]
    request, status, _ = resources(planned("gpu"), nodes, ("H100",))
    assert request == {"num_cpus": 1, "num_gpus": 1, "resources": {"H100": 0.001}}
    assert status == "" and [ray_executor.fits(request, node) for node in nodes] == [False, True]
    request, status, _ = resources(planned(), nodes, ("H100",))
    assert request == {"num_cpus": 8.0, "resources": {"H100": 0.001}}  # the largest offering it
    _, status, reason = resources(planned("gpu"), nodes, ("TPU_V5",))
    assert status == "unsupported"
    assert reason.startswith("no node of the Ray cluster offers TPU_V5 (--ray-resource); its ")
    assert reason.endswith("A100, CPU, GPU, H100")
