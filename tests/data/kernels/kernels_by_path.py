"""The same kernels loaded the way a first attempt does it: importlib from the file's path,
without sys.modules. torch.compile then cannot import kernel_pytorch again by name; the
cell's error names the fix (tests/test_own_kernels.py)."""

import importlib.util
from pathlib import Path

from stackwars.workloads import Param, Work, Workload, register

HERE = Path(__file__).parent


def by_path(name):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(params):
    kernel = by_path("kernel_pytorch").kernel

    def damped_rational(x, p, q):
        return kernel(x, p, q, scale=1.0)

    return damped_rational


def inputs(params, seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    q = np.abs(rng.standard_normal(9))
    q[0] += 10
    return rng.uniform(-1, 1, params["n"]), rng.standard_normal(9), q


register(
    Workload(
        name="damped-rational-by-path",
        description="kernel_pytorch loaded from its path, not registered in sys.modules",
        params=(Param("n", int, 1024, "elements", minimum=1),),
        make_inputs=inputs,
        reference=lambda params, xs: by_path("kernel_numpy").kernel(*xs),
        work=lambda params: Work(flops=100 * params["n"], bytes=16 * params["n"]),
        memory_bytes=lambda params: 64 * params["n"],
        implementations={"torch": build},
    )
)
