"""Every command the README shows works, run as a user would: the installed ``stackwars``
command, from a temporary folder that is not the repository, with the results store there.
"The README" here is README.md and the docs pages its long sections moved to (``DOCUMENTS``):
every command a user is shown there runs here.

Commands are extracted from those documents themselves, so a new line fails this test until it
is listed in ``AS_RUN`` below: either as it is, or with a tiny substitution that keeps what the
line teaches (its command, suite, workload and options) and shrinks sizes, stacks and time
budgets to test size. The two set-up commands are run by CI itself (``.ci/run`` is the test
command; the main-job command differs from it only in installing without the ``dev`` extra);
their ``stackwars run`` is run here at tiny size. The cluster section's ``ray`` commands run
with the venv's ``ray`` on this machine's loopback (tests/conftest.py), the head on a free
port; the one line that needs a second machine is in ``NOT_RUN``, with the reason.

The lines run in ``GROUPS`` of consecutive lines, each group in a folder of its own, so that
pytest-xdist spreads them over its workers; within a group, two lines that stand for the same
run run it once.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection
from pathlib import Path

import psutil
import pytest

from conftest import USER_ENVIRONMENTS
from stackwars.commands.options import EXIT_FAIL, EXIT_UNDERPOWERED
from stackwars.frameworks import environments

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# The documents whose commands users are shown, in this order: the README, then the pages its
# long sections moved to (issue 53). Their shell lines are one list, AS_RUN's order.
DOCUMENTS = [
    README,
    *(ROOT / "docs" / name for name in ("cli.md", "claims.md", "gate.md", "cluster-use.md")),
    *(ROOT / "docs" / name for name in ("devices.md", "workloads.md")),
]
STACKWARS = str(Path(sys.executable).with_name("stackwars"))
REGRESSED = Path(__file__).resolve().parents[1] / "benchmarks" / "power" / "regressed_gemm.py"
RAY = str(Path(sys.executable).with_name("ray"))


def free_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


RAY_PORT = free_port()
FAST = ["--budget", "0.05", "--quiet"]
SMALL = ["--stacks", "numpy,jax:jit", *FAST]
OPS = ["--param", "n=32", "--param", "d_model=16", "--param", "d_ff=32", "--param", "heads=2"]
OPS += ["--param", "seq=8"]
# One probe of each kind of outcome the matrix shows (an error, a silent difference, a retrace,
# random draws): all 22 on two stacks would add 40 s.
BEHAVE_PROBES = "boolean-mask,side-effect,new-shape,prng-draw-twice"

THREE_STACKS = "numpy,jax:jit,torch:eager"
FIRST_EXAMPLE = f"stackwars run --workload gemm --param n=256 --stacks {THREE_STACKS}"
INSTALL_AND_RUN = (
    "python3 -m venv .venv && .venv/bin/pip install -c constraints.txt -e '.[all]' "
    "&& .venv/bin/stackwars run"
)
INSTALL_AND_TEST = (
    "python3 -m venv .venv && .venv/bin/pip install -q -c constraints.txt -e '.[all,dev]' "
    "&& .venv/bin/stackwars env create torch-xla "
    '&& .venv/bin/python -m pytest -n 2 -m "not serial" && .venv/bin/python -m pytest -m serial'
)
KERNELS = (
    "stackwars run --workload-file my_kernels.py --workload my-kernel --stacks "
    "numpy,torch:eager,torch:compile"
)
LAZY_OPS = (
    "stackwars run --suite stack-wars-ops --stacks jax:jit,torch:xla,torch:compile,torch-xla:lazy"
)
BISECT_PLAN = (
    "stackwars bisect --stacks jax:eager --good 0.9.2 --bad 0.10.2 --dry-run -- --workload selu "
    "--param n=2000"
)
AB_REGRESSION = (
    "stackwars ab --candidate-env REGRESS_EXTRA=0.1 --fail-above 5 -- --workload-file "
    "benchmarks/power/regressed_gemm.py --workload regressed-gemm --stacks numpy"
)
BISECT = (
    "stackwars bisect --stacks jax:eager --good 0.9.2 --bad 0.10.2 --time-budget 1800 -- "
    "--workload selu --param n=2000"
)
# README line -> the runs that stand for it (each a stackwars argv), in this order: later
# lines read what earlier ones stored. None: CI runs it (see the module docstring).
AS_RUN: dict[str, list[list[str]] | None] = {
    FIRST_EXAMPLE: [
        ["run", "--workload", "gemm", "--param", "n=32", "--stacks", THREE_STACKS, *FAST]
    ],
    INSTALL_AND_RUN: [["run", "--param", "n=32", *SMALL]],
    INSTALL_AND_TEST: None,
    "stackwars reproduce": [["reproduce", "--scale", "tiny", "--time-budget", "1", "--quiet"]],
    "stackwars run --suite seed-blog": [["run", "--suite", "seed-blog", "--param", "n=32", *SMALL]],
    # The suite on numpy: its jax cells are workloads test_workload_contract.py runs on every
    # stack (here about 25 s of fresh jax:jit workers).
    "stackwars run --suite numpy-vs-jax": [
        ["run", "--suite", "numpy-vs-jax", "--param", "n=32", "--stacks", "numpy", *FAST]
    ],
    "stackwars run --suite stack-wars": [
        [
            "run",
            "--suite",
            "stack-wars",
            "--param",
            "scale=tiny",
            *OPS,
            "--stacks",
            "numpy",
            *FAST,
        ]
    ],
    "stackwars run": [["run", "--param", "n=32", *SMALL]],
    "stackwars run --suite stack-wars-ops": [["run", "--suite", "stack-wars-ops", *OPS, *SMALL]],
    # The user's environment (tests/conftest.py): made by the README's test command before the
    # tests, so here it is found ready.
    "stackwars env create torch-xla": [["env", "create", "torch-xla"]],
    LAZY_OPS: [
        [
            *["run", "--suite", "stack-wars-ops", *OPS, "--stacks", "torch-xla:lazy"],
            *["--json", "ops-lazy.json", *FAST],
        ]
    ],
    "stackwars run --suite compile-cache": [["run", "--suite", "compile-cache", *OPS, *SMALL]],
    "stackwars run --suite models": [
        ["run", "--suite", "models", "--param", "scale=tiny", "--stacks", "numpy", *FAST]
    ],
    "stackwars run --suite models --param scale=tiny": [
        ["run", "--suite", "models", "--param", "scale=tiny", "--stacks", "numpy", *FAST]
    ],
    # The Keras stacks run through the command line in test_keras.py; here the suite's plan.
    "stackwars run --suite unified": [
        ["run", "--suite", "unified", "--param", "scale=tiny", *OPS, "--stacks", "jax:jit", *FAST]
    ],
    "stackwars run --workload gpt2-small --param task=train --param dtype=bfloat16 "
    "--stacks jax:jit,torch": [
        [
            "run",
            "--workload",
            "gpt2-small",
            "--param",
            "task=train",
            "--param",
            "dtype=bfloat16",
            "--param",
            "scale=tiny",
            "--stacks",
            "jax:jit,torch:eager",
            *FAST,
        ]
    ],
    "stackwars run --suite models --find-max-batch": [
        ["run", "--suite", "models", "--find-max-batch"]
    ],
    "stackwars run --workload gemm --param n=256,1024 --stacks numpy,jax:jit,torch": [
        [
            "run",
            "--workload",
            "gemm",
            "--param",
            "n=32,64",
            "--stacks",
            "numpy,jax:jit,torch:eager",
            *FAST,
        ]
    ],
    "stackwars run --workload poly --param n=64..4096:x2 --stacks numpy,jax:jit --repeat 3": [
        ["run", "--workload", "poly", "--param", "n=16..32:x2", *SMALL, "--repeat", "3"]
    ],
    "stackwars run --workload gemm,selu --param n=512": [
        ["run", "--workload", "gemm,selu", "--param", "n=32", *SMALL]
    ],
    "stackwars list workloads | stacks | suites": [
        ["list", "workloads"],
        ["list", "stacks"],
        ["list", "suites"],
    ],
    "stackwars env [--peak]": [["env"]],
    "stackwars --version": [["--version"]],
    "stackwars runs": [["runs"]],
    "stackwars show [RUN|latest] [--baseline jax:jit]": [
        ["show"],
        ["show", "latest", "--baseline", "jax:jit"],
    ],
    "stackwars show latest --details": [["show", "latest", "--details"]],
    "stackwars report latest --out report.html": [["report", "latest", "--out", "report.html"]],
    "stackwars export RUN --format json|csv [--out F]": [
        ["export", "latest", "--format", "json"],
        ["export", "latest", "--format", "csv", "--out", "cells.csv"],
    ],
    "stackwars compare RUN_A RUN_B [--fail-above 5]": [["compare", "latest", "latest"]],
    AB_REGRESSION: [
        [
            "ab",
            "--candidate-env",
            "REGRESS_EXTRA=1",
            "--fail-above",
            "5",
            "--json",
            "ab-regression.json",
            "--",
            "--workload-file",
            str(REGRESSED),
            "--workload",
            "regressed-gemm",
            "--param",
            "n=128",
            "--stacks",
            "numpy",
            "--threads",
            "1",
            *FAST,
        ]
    ],
    "stackwars history --workload gemm --stack jax:jit": [
        ["history", "--workload", "gemm", "--stack", "jax:jit"]
    ],
    "stackwars ir --workload ffn --stacks jax:jit,torch:xla --diff jax:jit torch:xla": [
        [
            "ir",
            "--workload",
            "ffn",
            *OPS[2:6],
            *OPS[-2:],
            "--stacks",
            "jax:jit,torch:xla",
            "--diff",
            "jax:jit",
            "torch:xla",
        ]
    ],
    "stackwars profile --workload selu --param n=2000 --stacks jax:jit,torch:compile,"
    "tensorflow:xla": [
        [
            "profile",
            "--workload",
            "selu",
            "--param",
            "n=32",
            "--stacks",
            "jax:jit,numpy",
            "--calls",
            "3",
            "--budget",
            "0.05",
            "--json",
            "profile.json",
        ]
    ],
    "stackwars run --workload poly --param n=10000 --stacks numpy,jax:jit --inputs per-call "
    "--profile": [
        [
            "run",
            "--workload",
            "poly",
            "--param",
            "n=32",
            "--inputs",
            "per-call",
            "--profile",
            *SMALL,
        ]
    ],
    "stackwars selftest": [["selftest", "--stacks", "numpy:eager,jax:jit"]],
    "stackwars behave --details": [
        ["behave", "--details", "--stacks", "numpy:eager,jax:jit", "--probes", BEHAVE_PROBES]
    ],
    "stackwars claims --builtin": [
        ["claims", "--builtin", "--only", "seed002-jit-poly-6x*", "--param", "n=32", *FAST]
    ],
    'stackwars claim "jax:jit >= 6x numpy:eager on poly n=10000"': [
        ["claim", "jax:jit >= 6x numpy:eager on poly n=10000", "--param", "n=32", *FAST]
    ],
    "stackwars ab --baseline-python base/.venv/bin/python --candidate-python .venv/bin/python "
    "--fail-above 5 -- --suite quick": [
        [
            "ab",
            "--baseline-python",
            sys.executable,
            "--candidate-python",
            sys.executable,
            "--fail-above",
            "100",
            "--max-rounds",
            "10",
            "--",
            "--param",
            "n=128",
            "--stacks",
            "numpy",
            "--threads",
            "1",
            *FAST,
        ]
    ],
    "stackwars run --suite quick --repeat 3 --label main --json baseline.json": [
        [
            "run",
            "--param",
            "n=32",
            "--stacks",
            "numpy",
            "--repeat",
            "3",
            "--label",
            "main",
            "--json",
            "baseline.json",
            "--threads",
            "1",
            *FAST,
        ]
    ],
    "stackwars run --suite quick --repeat 3 --label change --json candidate.json": [
        [
            "run",
            "--param",
            "n=32",
            "--stacks",
            "numpy",
            "--repeat",
            "3",
            "--label",
            "change",
            "--json",
            "candidate.json",
            "--threads",
            "1",
            *FAST,
        ]
    ],
    "stackwars compare baseline.json candidate.json --fail-above 5 --markdown compare.md "
    "--github-summary": [
        [
            "compare",
            "baseline.json",
            "candidate.json",
            "--fail-above",
            "50",
            "--markdown",
            "compare.md",
            "--github-summary",
        ]
    ],
    "stackwars import baseline.json": [["import", "baseline.json", "--db", "imported.sqlite"]],
    "stackwars runs --label main": [["runs", "--label", "main"]],
    BISECT_PLAN: [
        [
            *["bisect", "--stacks", "jax:eager", "--good", "0.9.2", "--bad", "0.10.2"],
            *["--dry-run", "--versions", "0.9.2,0.10.0,0.10.1,0.10.2"],
            *["--", "--workload", "selu", "--param", "n=2000"],
        ]
    ],
    BISECT: None,
    "ray start --head --port 6379": [["ray", "start", "--head", "--port", RAY_PORT]],
    """ray start --address HEAD:6379 --resources '{"stackwars_cell": 1}'""": None,
    "stackwars run --suite stack-wars --executor ray --ray-address HEAD:6379": [
        [
            "run",
            "--suite",
            "stack-wars",
            "--param",
            "scale=tiny",
            *OPS,
            "--stacks",
            "numpy",
            "--executor",
            "ray",
            "--ray-address",
            f"127.0.0.1:{RAY_PORT}",
            *FAST,
        ]
    ],
    "ray stop": [["ray", "stop"]],
    "python3 -m venv .venv && .venv/bin/pip install -e '.[cuda]'": None,
    "stackwars env": None,
    "stackwars selftest --device gpu": [
        ["selftest", "--device", "gpu", "--stacks", "numpy:eager,jax:jit"]
    ],
    "stackwars run --suite seed-blog --device gpu --matmul-precision default": [
        [
            "run",
            "--suite",
            "seed-blog",
            "--device",
            "gpu",
            "--matmul-precision",
            "default",
            "--param",
            "n=32",
            *SMALL,
        ]
    ],
    "stackwars env --peak --device gpu": None,
    "python3 -m venv .venv && .venv/bin/pip install -e '.[tpu]'": None,
    "stackwars run --suite stack-wars-ops --device tpu --stacks jax,torch:xla": [
        ["run", "--suite", "stack-wars-ops", "--device", "tpu", *OPS, "--stacks", "jax:jit", *FAST]
    ],
    "stackwars run --workload-file my_workloads.py --workload tanh --stacks numpy,jax": [
        [
            "run",
            "--workload-file",
            "my_workloads.py",
            "--workload",
            "tanh",
            "--stacks",
            "numpy,jax",
            "--param",
            "n=1000",
            *FAST,
        ]
    ],
    KERNELS: [
        [
            "run",
            "--workload-file",
            "my_kernels.py",
            "--workload",
            "my-kernel",
            "--stacks",
            "numpy,torch:eager,torch:compile",
            "--param",
            "n=1000",
            "--json",
            "kernels.json",
            *FAST,
        ]
    ],
    "stackwars run --suite-file my_suite.toml": [
        ["run", "--suite-file", "my_suite.toml", "--param", "n=32", *FAST]
    ],
    "stackwars rerun latest": [["rerun", "latest", "--quiet"]],
}
# Substitutions that change more than sizes, stacks and budgets, and why.
WHY = {
    "stackwars reproduce": "--scale tiny --time-budget 1: the edition stops after its first "
    "cell and lists every other part not run, its findings written all the same; "
    "tests/test_reproduce.py runs the whole tiny edition, cut by its budget and resumed",
    BISECT_PLAN: "--versions: the releases the index offered (tests/data/bisect): tests never "
    "ask the package index",
    "stackwars env [--peak]": "--peak measures the machine for ~4 minutes (tests/test_peak.py)",
    "stackwars compare RUN_A RUN_B [--fail-above 5]": "one run compared with itself: no rerun",
    "stackwars run --suite quick --repeat 3 --label main --json baseline.json": "numpy at n=32 "
    "with --threads 1: OpenBLAS threads a GEMM even at 32², and a worker whose second thread "
    "waits for a busy core lands at a second speed (+77 % on 2026-11-28's AMD EPYC), which "
    "the compare below then read as a regression of identical code",
    "stackwars run --suite quick --repeat 3 --label change --json candidate.json": "as the "
    "baseline's line: numpy at n=32 with --threads 1",
    "stackwars compare baseline.json candidate.json --fail-above 5 --markdown compare.md "
    "--github-summary": "--fail-above 50: two tiny runs of identical code may differ by 5 %",
    "stackwars import baseline.json": "into another store: the run itself stored it already",
    "stackwars run --suite-file my_suite.toml": "--param n=32 keeps the file and its stacks",
    KERNELS: "--json kernels.json: the test reads that every stack ended ok",
    LAZY_OPS: "--json ops-lazy.json: the test reads what seed 001's operations did on "
    "torch-xla:lazy (tests/test_torch_lazy.py checks the rest of that stack)",
    "ray start --head --port 6379": "a free port: 6379 may be taken on a shared machine",
    "stackwars run --suite stack-wars --executor ray --ray-address HEAD:6379": "the head "
    "started above, on loopback",
    "stackwars claims --builtin": "--only: the whole set takes minutes at full size",
    AB_REGRESSION: "the repository's file by its absolute path (the test runs elsewhere); "
    "REGRESS_EXTRA=1, every row computed twice: what the line shows is a regression caught, "
    "and at test size a 10 % change is lost in a worker's noise, a 2x one is caught in 5-7 "
    "rounds; n=128 with --threads 1: OpenBLAS runs larger GEMMs on its threads, which on a "
    "loaded 2-core machine can make one worker's GEMM 100x slower (a 128² session of "
    "2026-11-28 read its candidate at 0.01-0.19x the baseline), while at 64² and below a "
    "call's overhead dilutes the 2x (1.3-2.6x a round at 64²); --json: the test reads the "
    "outcome",
    "stackwars ab --baseline-python base/.venv/bin/python --candidate-python .venv/bin/python "
    "--fail-above 5 -- --suite quick": "this venv's Python on both sides: the test has one "
    "checkout; --fail-above 100: identical sides may differ by 5 % at test size; up to 10 rounds: "
    "the quick suite's cells are one family, shown within the limit from about 7 paired rounds; "
    "--threads 1: OpenBLAS threads a GEMM even at 32², and a worker whose second thread waits "
    "for a busy core lands at a second speed (1.8-1.9x on 2026-11-28's AMD EPYC), which left "
    "identical sides undecided; n=128: at 32² a call is 2-6 µs of mostly Python, whose rounds "
    "reached 1.97x on an idle machine (2026-11-29, 24 sessions), at 128² the 10 sessions' "
    "rounds stayed within 1.32x, far from the 4x that holds a pass at this limit",
    "stackwars profile --workload selu --param n=2000 --stacks jax:jit,torch:compile,"
    "tensorflow:xla": "jax:jit and numpy (unsupported, no worker): torch:compile and "
    "tensorflow:xla are profiled in tests/test_profile_workers.py",
    "stackwars run --suite stack-wars-ops --device tpu --stacks jax,torch:xla": "jax:jit "
    "alone: here every cell ends unsupported (no TPU), tests/test_devices.py runs torch:xla",
}


# Lines whose exit status rests on timings taken here (the selftest's checks, the A/B
# sessions' gate, which once failed an A/A pair at +290 % from noise beside other tests at load
# 4.4): run alone, in the serial pass (pytest -m serial); none reads what another stored.
MEASURING = (
    "stackwars selftest",
    AB_REGRESSION,
    "stackwars ab --baseline-python base/.venv/bin/python --candidate-python .venv/bin/python "
    "--fail-above 5 -- --suite quick",
)
# Lines that cannot run here (AS_RUN None, apart from the set-up commands CI runs), and why.
NOT_RUN = {
    BISECT: "makes an environment per jax release (about a minute and 1 GB each, downloaded) and "
    "measures for up to 30 minutes; tests/test_bisect.py runs its decisions on measurements "
    "from a table, an uninstallable release, the install cache and a real step in a borrowed "
    "environment; the measured run is docs/results.md's",
    """ray start --address HEAD:6379 --resources '{"stackwars_cell": 1}'""": "a second "
    "machine joining the head: the tests have one machine (tests/test_ray_nodes.py joins worker "
    "raylets with these resources to a head on this host through Ray's test cluster instead)",
    "python3 -m venv .venv && .venv/bin/pip install -e '.[cuda]'": "downloads gigabytes of "
    "CUDA wheels for a GPU this machine lacks; tests/test_accelerator_extras.py checks the "
    "extra's pins and docs/accelerators.md the resolver's dry run",
    "stackwars env": "the same command as docs/cli.md's `stackwars env [--peak]`, run "
    "there once (a worker per framework); tests/test_devices.py checks the devices it lists",
    "stackwars env --peak --device gpu": "measures a GPU this machine lacks; tests/test_peak.py "
    "runs its code path here, where every library says why it has no gpu",
    "python3 -m venv .venv && .venv/bin/pip install -e '.[tpu]'": "installs libtpu for a TPU "
    "VM this machine is not; tests/test_accelerator_extras.py checks the pins",
}


# The README's lines in groups of consecutive lines, each named by its first line: a group
# runs in a folder (and results store) of its own, so the groups are independent tests that
# pytest-xdist spreads over its workers. Within a group the lines run in the README's order.
GROUPS = {
    "quick start and suites": FIRST_EXAMPLE,
    "models and workloads": "stackwars run --suite models --param scale=tiny",
    "results": "stackwars list workloads | stacks | suites",
    "instruments": "stackwars ir --workload ffn --stacks jax:jit,torch:xla --diff jax:jit "
    "torch:xla",
    "ci": "stackwars run --suite quick --repeat 3 --label main --json baseline.json",
    "cluster": "ray start --head --port 6379",
    "accelerators and extending": "python3 -m venv .venv && .venv/bin/pip install -e '.[cuda]'",
}
# Groups whose lines read a stored run ('latest', history) that no line of theirs made: a
# tiny run is stored first, as a reader of that section would have one.
SEEDED = {"results": ["run", "--workload", "gemm", "--param", "n=16", *SMALL]}


def lazy_ops_ok(folder: Path) -> bool:
    """Seed 001's operations on torch-xla:lazy, run from the README (issue 001's own system):
    every cell ok against the float64 reference, in the environment's pinned torch and
    torch_xla, its first run compiling and every steady call executing one graph."""
    data = json.loads((folder / "ops-lazy.json").read_text(encoding="utf-8"))
    cells = [cell for cell in data["cells"] if cell["stack"] == "torch-xla:lazy"]
    assert {cell["workload"] for cell in cells} == {"gemm", "ffn", "mha"}
    assert {cell["params"].get("task") for cell in cells} >= {"forward", "grad"}
    assert [(c["workload"], c["reason"]) for c in cells if c["status"] != "ok"] == []
    for cell in cells:
        assert cell["parity"]["reference"], "checked against the float64 NumPy reference"
        assert cell["settings"]["versions"]["torch"].startswith("2.9.0")
        assert cell["settings"]["versions"]["torch_xla"] == "2.9.0"
        assert cell["counters"]["first_run"]["graphs_compiled"] >= 1
        steady = cell["counters"]["steady"]
        assert steady["graphs_executed"] == steady["calls"]
    return True


# Lines whose exit status is a gate's answer on identical code: pass (0) or underpowered (3)
# are both honest answers, which one rests on the noise of a few workers; a fail (1) or an error
# is a bug. At test size the CI section's compare has 3 workers a side, whose medians differed
# by up to 78 % here (2026-11-27): its interval's bound crosses the limit of 50 % either way.
GATE_ANSWERS = {
    "stackwars compare baseline.json candidate.json --fail-above 5 --markdown compare.md "
    "--github-summary": {0: "**Gate: PASS", EXIT_UNDERPOWERED: "**Gate: UNDERPOWERED"},
}


# What a line leaves in its folder, checked after its group.
LEFT_BEHIND = {
    "stackwars export RUN --format json|csv [--out F]": lambda folder: (
        (folder / "cells.csv").read_text(encoding="utf-8").startswith("run_id,")
    ),
    "stackwars ir --workload ffn --stacks jax:jit,torch:xla --diff jax:jit torch:xla": lambda f: (
        bool(list(f.glob("stackwars-ir/*/jax_jit/stablehlo.txt")))
    ),
    LAZY_OPS: lazy_ops_ok,
    KERNELS: lambda folder: (
        [
            cell["status"]
            for cell in json.loads((folder / "kernels.json").read_text(encoding="utf-8"))["cells"]
        ]
        == ["ok"] * 3
    ),
    "stackwars profile --workload selu --param n=2000 --stacks jax:jit,torch:compile,"
    "tensorflow:xla": lambda folder: (
        [
            found["status"]
            for found in json.loads((folder / "profile.json").read_text(encoding="utf-8"))[
                "profiles"
            ]
        ]
        == ["ok", "unsupported"]
    ),
}


# The second look (20 s by default) measures a run's cheapest cells again in fresh workers:
# the quick start's run keeps it, as a user runs it; the other runs at test size skip it, a
# time budget like --budget (tests/test_second_look.py tests it).
KEEPS_SECOND_LOOK = (INSTALL_AND_RUN, "stackwars run")


def at_test_size(line: str, argv: list[str]) -> list[str]:
    """ARGV as run for LINE: without the second look, unless LINE shows it."""
    if argv[0] != "run" or line in KEEPS_SECOND_LOOK or "--repeat" in argv:
        return argv
    return [*argv, "--second-look", "0"]


def group_starts() -> list[int]:
    """Where each group's first line stands among the README's lines."""
    return [list(AS_RUN).index(first) for first in GROUPS.values()]


def grouped() -> dict[str, list[str]]:
    """Each group's lines: from its first line up to the next group's."""
    lines, starts = list(AS_RUN), group_starts()
    ends = [*starts[1:], len(lines)]
    return {name: lines[start:end] for name, start, end in zip(GROUPS, starts, ends, strict=True)}


def blocks(language: str) -> list[str]:
    """The LANGUAGE code blocks of DOCUMENTS, in order."""
    return [
        block
        for document in DOCUMENTS
        for block in re.findall(
            rf"^```{language}\n(.*?)^```",
            document.read_text(encoding="utf-8"),
            flags=re.MULTILINE | re.DOTALL,
        )
    ]


def readme_commands() -> list[str]:
    """Every shell line of the README and its pages (DOCUMENTS), without its trailing
    comment."""
    lines = (
        re.sub(r"\s+# .*$", "", line).strip()
        for block in blocks("sh")
        for line in block.split("\n")
    )
    return [line for line in lines if line]


def environment(folder: Path) -> dict[str, str]:
    """A user's: the store in ``folder``, the environments of their own the user made."""
    return {
        **os.environ,
        "STACKWARS_DB": str(folder / "stackwars.sqlite"),
        environments.ROOT_VARIABLE: USER_ENVIRONMENTS,
    }


def stackwars(
    argv: list[str], folder: Path, statuses: Collection[int] = (0,)
) -> subprocess.CompletedProcess[str]:
    """``stackwars ARGV``, or the venv's ``ray`` when ARGV starts with it, exiting with one of
    STATUSES."""
    command = [RAY, *argv[1:]] if argv[0] == "ray" else [STACKWARS, *argv]
    done = subprocess.run(  # noqa: PLW1510 (the exit status is asserted)
        command,
        cwd=folder,
        env=environment(folder),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode in statuses, (
        f"stackwars {shlex.join(argv)} exited {done.returncode}:\n{done.stderr[-3000:]}\n"
        f"{done.stdout[-3000:]}\n{machine_load()}"
    )
    return done


def machine_load() -> str:
    """The load average and the processes busy now: a gate's answer on identical code rests
    on this machine's noise, so a failure says what else was running."""
    processes = list(psutil.process_iter(["pid", "name"]))
    for process in processes:
        with contextlib.suppress(psutil.Error):
            process.cpu_percent(None)  # the first call starts the process's count
    time.sleep(0.5)
    busy = []
    for process in processes:
        with contextlib.suppress(psutil.Error):
            busy.append((process.cpu_percent(None), process.info["name"], process.info["pid"]))
    named = ", ".join(f"{name} ({pid}) {cpu:.0f} %" for cpu, name, pid in sorted(busy)[-5:])
    return f"load average {os.getloadavg()}; busy now: {named}"


def test_ci_runs_the_readme_test_command_exactly() -> None:
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert INSTALL_AND_TEST in ci


@pytest.mark.slow
@pytest.mark.serial
def test_the_readme_lines_whose_status_rests_on_timings_pass_alone(tmp_path: Path) -> None:
    for line in MEASURING:
        for argv in [] if line == AB_REGRESSION else AS_RUN[line] or []:
            done = stackwars(argv, tmp_path)
            assert "Traceback" not in done.stdout + done.stderr, line


@pytest.mark.slow
@pytest.mark.serial
def test_the_readme_ab_line_catches_its_regression(tmp_path: Path) -> None:
    """The README's ab line (REGRESS_EXTRA=0.1: a candidate about 10 % slower) shows the gate
    catching a slower candidate: at test size too the session must end fail (exit 1), its one
    cell a REGRESSION, neither broken nor undecided. The change injected here (every row
    twice) is far past the line's 5 % limit, so the gate's power is near 1 and the answer
    does not rest on this machine's noise."""
    (argv,) = AS_RUN[AB_REGRESSION] or []
    done = stackwars(argv, tmp_path, (EXIT_FAIL,))
    assert "Traceback" not in done.stdout + done.stderr
    assert "REGRESSION above 5%: regressed-gemm(n=128, extra=0.0) numpy:eager @ cpu" in (
        " ".join(done.stdout.split())
    )
    data = json.loads((tmp_path / "ab-regression.json").read_text(encoding="utf-8"))
    assert (data["outcome"], data["exit_status"]) == ("fail", EXIT_FAIL)
    assert [(row["gate_state"], row["broken"]) for row in data["rows"]] == [("fail", "")]


def test_every_readme_command_is_listed() -> None:
    assert readme_commands() == list(AS_RUN)
    assert all(AS_RUN[line] for line in MEASURING)
    not_run = [line for line, runs in AS_RUN.items() if runs is None]
    assert not_run == [INSTALL_AND_TEST, *NOT_RUN]


def test_the_groups_cover_the_readme_in_order() -> None:
    starts = group_starts()
    assert starts[0] == 0 and starts == sorted(starts)
    assert set(SEEDED) <= set(GROUPS) and set(LEFT_BEHIND) <= set(AS_RUN)


# Groups run in the serial pass. The cluster's 'ray stop' stops every Ray instance of the
# machine (tests/test_ray_*.py start theirs in the parallel pass). The CI section's compare
# answers from the timings of the two runs before it (GATE_ANSWERS): an A/A pair of the gate
# once read +290 % beside other tests at load 4.4, a fail its answers exclude.
ALONE = {"cluster": pytest.mark.serial, "ci": pytest.mark.serial}


@pytest.mark.slow
@pytest.mark.parametrize(
    "group", [pytest.param(name, marks=ALONE.get(name, ())) for name in GROUPS]
)
def test_every_readme_command_works_from_another_folder(
    group: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert Path.cwd().resolve() != tmp_path
    for block in blocks("python") + blocks("toml"):
        name = re.match(r"# (\w+\.(?:py|toml))\n", block)
        if name:  # a file the README asks the user to write
            (tmp_path / name.group(1)).write_text(block, encoding="utf-8")
    # Ray's files in a folder of their own, short: its socket paths must stay under 108 bytes.
    monkeypatch.setenv("RAY_TMPDIR", tempfile.mkdtemp(prefix="swray-"))
    lines = grouped()[group]
    try:
        for argv in [SEEDED[group]] if group in SEEDED else []:
            stackwars(argv, tmp_path)
        ran: set[tuple[str, ...]] = set()  # two lines that run the same argv run it once
        for line in lines:
            for shown in [] if line in MEASURING else AS_RUN[line] or []:
                argv = at_test_size(line, shown)
                if tuple(argv) in ran:
                    continue
                ran.add(tuple(argv))
                answers = GATE_ANSWERS.get(line)
                done = stackwars(argv, tmp_path, answers or (0,))
                if answers:  # the gate's outcome first (issue 34), as its exit said; the table
                    markdown = (tmp_path / "compare.md").read_text(encoding="utf-8")
                    assert markdown.startswith(answers[done.returncode]), markdown[:300]
                assert "Traceback" not in done.stdout + done.stderr, line
    finally:  # the README's head, also when a line between its start and stop failed
        if any(line.startswith("ray ") for line in lines):
            stop = [RAY, "stop"]
            subprocess.run(stop, env=environment(tmp_path), capture_output=True, check=False)
        shutil.rmtree(os.environ["RAY_TMPDIR"], ignore_errors=True)
    for line in set(lines) & set(LEFT_BEHIND):
        assert LEFT_BEHIND[line](tmp_path), line


@pytest.mark.slow
def test_the_readme_python_runs_from_another_folder(tmp_path: Path) -> None:
    stackwars(["run", "--workload", "gemm", "--param", "n=16", *SMALL], tmp_path)
    for block in blocks("python"):
        if re.match(r"# \w+\.py\n", block):
            continue
        done = subprocess.run(  # noqa: PLW1510 (the exit status is asserted)
            [sys.executable, "-c", block],
            cwd=tmp_path,
            env=environment(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.strip(), block
