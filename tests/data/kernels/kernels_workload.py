"""A workload file wrapping kernel modules a project already has (one per framework, in this
folder), as the README's "Kernels you already have" shows: each module loaded with
load_module, so that torch.compile can import it again by name."""

from pathlib import Path

from stackwars.workloads import Param, Work, Workload, load_module, register

HERE = Path(__file__).parent
MODULES = {
    "numpy": "kernel_numpy",
    "jax": "kernel_jax",
    "torch": "kernel_pytorch",
    "tensorflow": "kernel_tensorflow",
}


def inputs(params, seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    degree = params["degree"]
    x = rng.uniform(-1.5, 1.5, params["n"])
    p = rng.standard_normal(degree + 1)
    q = rng.standard_normal(degree + 1)
    # A denominator with no zero on the inputs' interval, as a rational approximation has.
    q[0] = 1 + np.sum(np.abs(q[1:]) * 1.5 ** np.arange(1, degree + 1))
    return x, p, q


def builder(framework):
    def build(params):
        kernel = load_module(HERE / f"{MODULES[framework]}.py").kernel
        scale = params["scale"]

        def damped_rational(x, p, q):
            return kernel(x, p, q, scale=scale)

        return damped_rational

    return build


def reference(params, xs):
    return load_module(HERE / "kernel_numpy.py").kernel(*xs, scale=params["scale"])


register(
    Workload(
        name="damped-rational",
        description="P(x)/Q(x)·exp(−x²/2) + log1p(x²)·tanh(s·x), float64, from kernel modules",
        params=(
            Param("n", int, 2**20, "elements", minimum=1),
            Param("degree", int, 24, "degree of P and Q", minimum=1),
            Param("scale", float, 1.0, "s"),
        ),
        make_inputs=inputs,
        reference=reference,
        # Horner: a multiply and an add per degree, twice; then a division, exp, log1p, tanh
        # (about 20 operations each) and 8 more.
        work=lambda params: Work(
            flops=params["n"] * (4 * params["degree"] + 69), bytes=16 * params["n"]
        ),
        memory_bytes=lambda params: 8 * 8 * params["n"],
        implementations={framework: builder(framework) for framework in MODULES},
        tiny={"n": 4096},
    )
)
