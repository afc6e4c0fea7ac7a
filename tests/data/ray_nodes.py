"""A Ray cluster of several nodes on this host, on loopback, for tests: Ray's own multi-node
test cluster (``ray.cluster_utils.Cluster``: each node its own raylet with its own resources,
joined to one head), driven over stdin by a test in another process.

    python tests/data/ray_nodes.py FOLDER NODES_JSON

``NODES_JSON`` maps each node's name to its arguments (``num_cpus``, ``resources``; the one
named ``head`` is the head, started first, on a fixed port so that a restarted head answers at
the same address). Each line read is a command, each answer one JSON line:

    add NAME      -> {"added": NAME, "node_id": ..., "pids": [...]}
    remove NAME   -> {"removed": NAME}      (every process of that node killed)
    quit          -> every node removed, then this process ends

The first line written is ``{"address": "127.0.0.1:PORT", "node_id": ..., "pids": [...]}``, the
head's. It runs in a process of its own
because Ray starts its nodes with a pre-exec hook, which forks a process that imported JAX (the
test suite's), and JAX warns that this deadlocks its threads.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any

from ray.cluster_utils import Cluster

# Each node's object store small (they share the host's memory), each node on loopback.
EVERY_NODE = {"object_store_memory": 80 * 2**20, "node_ip_address": "127.0.0.1"}


def answer(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def described(node: Any) -> dict[str, Any]:
    """The node's id and the processes Ray started for it (its raylet, and the head's GCS)."""
    pids = [info.process.pid for infos in node.all_processes.values() for info in infos]
    return {"node_id": node.node_id, "pids": pids}


def main() -> None:
    folder, specs = sys.argv[1], json.loads(sys.argv[2])
    # Ray notes the newest cluster's address under its temporary folder: this one's, not the
    # machine's /tmp/ray, where other users' 'ray.init()' would find it.
    os.environ["RAY_TMPDIR"] = folder
    os.makedirs(os.path.join(folder, "ray"), exist_ok=True)
    head = {
        **specs["head"],
        **EVERY_NODE,
        "gcs_server_port": free_port(),
        "temp_dir": folder,
        "include_dashboard": False,
    }
    cluster = Cluster(shutdown_at_exit=True)
    nodes = {"head": cluster.add_node(**head)}
    answer(address=cluster.address, **described(nodes["head"]))
    for line in sys.stdin:
        command, _, name = line.strip().partition(" ")
        if command == "add":
            arguments = head if name == "head" else {**specs[name], **EVERY_NODE}
            nodes[name] = cluster.add_node(**arguments)
            answer(added=name, **described(nodes[name]))
        elif command == "remove":
            cluster.remove_node(nodes.pop(name), allow_graceful=False)
            answer(removed=name)
        elif command == "quit":
            break
    for node in nodes.values():
        cluster.remove_node(node, allow_graceful=False)


if __name__ == "__main__":
    main()
