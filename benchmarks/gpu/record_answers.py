"""Record what the frameworks answer about devices on this machine, as JSON on stdout.

Run on a GPU machine to replace the documented shapes in tests/data/device_answers.json with
recordings: each framework's ``device_facts`` (through the devices worker's own ``answer``),
its memory statistics after one float32 GEMM of 4096² on the GPU, and nvidia-smi's memory
query, exactly as stackwars reads them.
"""

from __future__ import annotations

import json
import subprocess
import sys

from stackwars.runner.devices_worker import answer

N = 4096
STACKS = (("jax", "jit"), ("torch", "eager"), ("torch", "xla"), ("tensorflow", "eager"))


def jax_stats() -> dict:
    import jax
    import jax.numpy as jnp

    device = jax.devices("gpu")[0]
    x = jax.device_put(jnp.ones((N, N), jnp.float32), device)
    (x @ x).block_until_ready()
    return dict(device.memory_stats() or {})


def torch_stats() -> dict:
    import torch

    x = torch.ones((N, N), device="cuda")
    (x @ x).sum().item()
    return {
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "mem_get_info": list(torch.cuda.mem_get_info()),
    }


def main() -> int:
    facts = {}
    for framework, mode in STACKS:
        try:
            facts[f"{framework}:{mode}"] = answer({"framework": framework, "mode": mode})
        except Exception as exc:  # a recording keeps every failure's text
            facts[f"{framework}:{mode}"] = {"raised": f"{type(exc).__name__}: {exc}"}
    stats = {}
    for name, read in (("jax", jax_stats), ("torch", torch_stats)):
        try:
            stats[name] = read()
        except Exception as exc:
            stats[name] = {"raised": f"{type(exc).__name__}: {exc}"}
    query = ["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"]
    smi = subprocess.run(query, capture_output=True, text=True, check=False).stdout
    recorded = {"facts": facts, "memory_stats": stats, "nvidia_smi_memory_total": smi}
    json.dump(recorded, sys.stdout, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
