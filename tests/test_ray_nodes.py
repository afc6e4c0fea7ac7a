"""--executor ray on a cluster of three Ray nodes on this host: a head and two worker nodes,
each its own raylet with its own CPUs and a custom resource standing for an accelerator kind,
joined over loopback (Ray's multi-node test cluster, tests/data/ray_nodes.py, in a process of
its own, started once for the module). Cells spread over the nodes, each records its node, the
tables come one per node kind and compare judges no cells of different kinds; a node removed
while its cell runs makes that cell an error and --resume measures it once the node is back;
the head removed mid-run ends the run interrupted, and --resume finishes it on a new head.

Every process of the cluster is a descendant of the helper: each is ended by its id at the
end, whatever Ray did. No 'ray stop': it would stop other users' Ray heads too."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

pytest.importorskip("ray")

from stackwars.results import store
from stackwars.results.schema import Cell

DATA = Path(__file__).parent / "data"
FAULTY = str(DATA / "faulty_workloads.py")
QUICK = ["--budget", "0.05", "--second-look", "0", "--quiet"]
SLOT = {"stackwars_cell": 1}  # one timed cell per node at a time, whatever its CPUs
NODES = {
    "head": {"num_cpus": 2, "resources": SLOT},
    "small": {"num_cpus": 1, "resources": {**SLOT, "sim_h100": 1}},
    "large": {"num_cpus": 2, "resources": {**SLOT, "sim_a100": 1}},
}
ANSWER_S = 60  # the helper's longest step: starting a node, killing one


class Nodes:
    """The helper process that holds the cluster, and what it answered."""

    def __init__(self, folder: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(DATA / "ray_nodes.py"), folder, json.dumps(NODES)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        head = self.read()
        self.address: str = head["address"]
        self.ids: dict[str, str] = {"head": head["node_id"]}
        self.raylets: dict[str, set[int]] = {"head": set(head["pids"])}

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # the helper answers every line, or dies
        assert line, f"the cluster's helper ended (exit {self.process.poll()})"
        return json.loads(line)

    def send(self, command: str, name: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{command} {name}\n")
        self.process.stdin.flush()
        answer = self.read()
        if command == "add":
            self.ids[name], self.raylets[name] = answer["node_id"], set(answer["pids"])
        return answer

    def processes(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def node_running(self, process: psutil.Process) -> str:
        """The name of the node whose raylet ``process`` descends from."""
        for parent in process.parents():
            for name, pids in self.raylets.items():
                if parent.pid in pids:
                    return name
        raise AssertionError(f"process {process.pid} runs on no node of this cluster")


@pytest.fixture(scope="module")
def nodes() -> Iterator[Nodes]:
    folder = tempfile.mkdtemp(prefix="swn-")  # short: Ray's socket paths must stay < 108
    cluster = Nodes(folder)
    try:
        for name in ("small", "large"):
            cluster.send("add", name)
        yield cluster
    finally:
        started = cluster.processes()
        try:  # its input closed, the helper removes every node, then ends
            cluster.process.communicate(timeout=ANSWER_S)
        except subprocess.TimeoutExpired:
            cluster.process.kill()
            cluster.process.communicate()
        for process in started:  # what Ray left behind, ended by its id (psutil: not a reused one)
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        shutil.rmtree(folder, ignore_errors=True)


DRIVERS: list[subprocess.Popen[str]] = []  # the commands a test started, ended after it


@pytest.fixture(autouse=True)
def drivers_ended() -> Iterator[None]:
    """Every command a test started ended by its id, should the test fail while one runs."""
    yield
    for driver in DRIVERS:
        if driver.poll() is None:
            driver.kill()
        driver.communicate()
    DRIVERS.clear()


def stackwars(*argv: str) -> subprocess.Popen[str]:
    """The command in a process of its own: a driver whose head dies is ended by Ray."""
    driver = subprocess.Popen(
        [sys.executable, "-m", "stackwars", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    DRIVERS.append(driver)
    return driver


def finished(process: subprocess.Popen[str], timeout_s: float = 120) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout_s)
    return process.returncode, out, err


def suite_file(folder: Path, *cells: tuple[str, int]) -> str:
    path = folder / "suite.toml"
    entries = [
        f'[[cells]]\nworkload = "{name}"\nparams = {{ size = {size} }}\nstacks = ["numpy:eager"]\n'
        for name, size in cells
    ]
    path.write_text("\n".join(entries), encoding="utf-8")
    return str(path)


def hanging_workers(cluster: Nodes, count: int, run: subprocess.Popen[str]) -> list[Any]:
    """``count`` timing workers of ``hangs`` cells, once the run started them: (process,
    size, node name) each."""
    deadline = time.time() + ANSWER_S
    while time.time() < deadline:
        assert run.poll() is None, f"the run ended first: {run.communicate()[1][-3000:]}"
        found = []
        for process in cluster.processes():
            try:
                request = json.loads((Path(process.cwd()) / "request.json").read_text())
            except (OSError, ValueError, psutil.Error):
                continue
            asked = request["request"]["cell"]
            if asked["workload"] == "hangs":
                found.append((process, asked["params"]["size"], cluster.node_running(process)))
        if len(found) >= count:
            return found
        time.sleep(0.1)
    raise AssertionError(f"fewer than {count} hangs workers within {ANSWER_S} s")


def stored(db: Path) -> tuple[str, list[Cell]]:
    record = store.Store(db).load_run("latest")
    return record.status, record.cells


@pytest.mark.slow
def test_cells_spread_over_the_nodes_each_records_its_node_and_kinds_are_never_pooled(
    nodes: Nodes, tmp_path: Path
) -> None:
    db = str(tmp_path / "db.sqlite")
    argv = ["run", "--workload", "gemm", "--param", "n=16", "--stacks", "numpy", "--repeat", "3"]
    run = stackwars(*argv, *QUICK, "--executor", "ray", "--ray-address", nodes.address, "--db", db)
    code, _, err = finished(run)
    assert code == 0, err
    status, cells = stored(Path(db))
    assert status == "complete" and [c.status for c in cells] == ["ok"] * 3
    # Three slots, three workers asked for at once: one on each node.
    assert sorted(c.node["ray_node_id"] for c in cells) == sorted(nodes.ids.values())
    kinds = sorted(sorted(c.node["ray_resources"].items()) for c in cells)
    declared = [{"CPU": spec["num_cpus"], **spec["resources"]} for spec in NODES.values()]
    assert kinds == sorted(sorted(kind.items()) for kind in declared)
    assert len({c.node["fingerprint"] for c in cells}) == 1  # one host's hardware for all
    code, shown, err = finished(stackwars("show", "latest", "--db", db))
    assert code == 0, err
    assert "Ray node CPU=1 sim_h100=1 stackwars_cell=1" in shown
    assert "Ray node CPU=2 sim_a100=1 stackwars_cell=1" in shown
    assert "Ray node CPU=2 stackwars_cell=1)" in shown
    # Cells that ask for a kind of node run there only.
    kind = ("--executor", "ray", "--ray-address", nodes.address, "--ray-resource", "sim_h100")
    code, _, err = finished(stackwars(*argv, *QUICK, *kind, "--db", str(tmp_path / "h.sqlite")))
    assert code == 0, err
    _, on_h100 = stored(tmp_path / "h.sqlite")
    assert [c.node["ray_node_id"] for c in on_h100] == [nodes.ids["small"]] * 3
    out = tmp_path / "compare.json"
    compared = stackwars("compare", "latest", "latest", "--db", db, "--json", str(out))
    code, _, err = finished(compared)
    assert code == 0, err
    row = json.loads(out.read_text())["rows"][0]
    assert "ran on different machines" in json.dumps(row)


@pytest.mark.slow
def test_a_node_removed_mid_cell_makes_that_cell_an_error_and_resume_measures_only_it(
    nodes: Nodes, tmp_path: Path
) -> None:
    db = str(tmp_path / "db.sqlite")
    suite = suite_file(tmp_path, ("doubles", 1), ("hangs", 1), ("hangs", 2), ("hangs", 3))
    ray_here = ("--executor", "ray", "--ray-address", nodes.address, "--db", db)
    argv = ("run", "--workload-file", FAULTY, "--suite-file", suite, "--timeout", "4", *QUICK)
    run = stackwars(*argv, *ray_here)
    # Three hangs cells and three slots: one hangs on each node; the worker nodes' are removable.
    found = hanging_workers(nodes, 3, run)
    _, size, name = next(worker for worker in found if worker[2] != "head")
    nodes.send("remove", name)
    code, _, err = finished(run)
    assert code == 0, err
    assert "1 cell(s) of run " in err and "were lost with their Ray node" in err
    status, before = stored(Path(db))
    assert status == "complete" and len(before) == 4
    [lost] = [c for c in before if c.node.get("lost")]
    assert (lost.workload, lost.params["size"], lost.status) == ("hangs", size, "error")
    assert lost.reason.startswith("the node running the cell left the Ray cluster: ")
    assert nodes.ids[name] in lost.reason  # Ray's own words, naming the node
    others = sorted((c.workload, c.params["size"], c.status) for c in before if c is not lost)
    assert others == [("doubles", 1, "ok"), *(("hangs", s, "timeout") for s in {1, 2, 3} - {size})]
    nodes.send("add", name)
    code, _, err = finished(stackwars("run", "--resume", "latest", "--quiet", *ray_here))
    assert code == 0, err
    status, after = stored(Path(db))
    assert status == "complete" and [c for c in after if c.key() != lost.key()] == [
        c for c in before if c is not lost
    ]
    [again] = [c for c in after if c.key() == lost.key()]
    assert again.status == "timeout" and not again.node.get("lost")
    assert again.node["ray_node_id"] in nodes.ids.values()


@pytest.mark.slow
def test_the_head_removed_mid_run_ends_it_interrupted_and_resume_finishes_it_on_a_new_head(
    nodes: Nodes, tmp_path: Path
) -> None:
    db = str(tmp_path / "db.sqlite")
    suite = suite_file(tmp_path, ("doubles", 1), ("hangs", 1), ("hangs", 2), ("hangs", 3))
    argv = ("run", "--workload-file", FAULTY, "--suite-file", suite, "--timeout", "4", *QUICK)
    ray_here = ("--executor", "ray", "--ray-address", nodes.address, "--db", db)
    run = stackwars(*argv, *ray_here)
    hanging_workers(nodes, 3, run)  # the doubles cell ended first, or waits for a slot
    for name in ("small", "large", "head"):  # worker nodes die with their head anyway
        nodes.send("remove", name)
    code, _, err = finished(run)
    assert code == 2, err
    assert f"the Ray cluster's head at {nodes.address} stopped answering" in err
    assert "--resume RUN --executor ray" in err and "Traceback" not in err
    status, before = stored(Path(db))
    assert status == "interrupted" and len(before) < 4
    assert all(not c.node.get("lost") for c in before)  # no cell is blamed on the head
    for name in ("head", "small", "large"):
        nodes.send("add", name)
    code, _, err = finished(stackwars("run", "--resume", "latest", "--quiet", *ray_here))
    assert code == 0, err
    status, after = stored(Path(db))
    assert status == "complete" and after[: len(before)] == before
    assert sorted((c.workload, c.params["size"], c.status) for c in after) == [
        ("doubles", 1, "ok"),
        ("hangs", 1, "timeout"),
        ("hangs", 2, "timeout"),
        ("hangs", 3, "timeout"),
    ]
