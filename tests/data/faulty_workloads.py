"""Workloads that misbehave on purpose, to test how workers fail (numpy only, tiny)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Mapping
from typing import Any

from stackwars.workloads import Param, Work, Workload, register


def _inputs(params: Mapping[str, Any], seed: int) -> tuple[Any, ...]:
    import numpy as np

    return (np.arange(4.0),)


def _reference(params: Mapping[str, Any], inputs: tuple[Any, ...]) -> Any:
    return inputs[0] * 2


def _faulty(name: str, body: Callable[[Any], Any]) -> Workload:
    return register(
        Workload(
            name=name,
            description=f"misbehaves on purpose: {name}",
            params=(Param("size", int, 1, "size of the allocation in MiB, for 'hog'"),),
            make_inputs=_inputs,
            reference=_reference,
            work=lambda params: Work(flops=4.0, bytes=64.0),
            memory_bytes=lambda params: 1024,
            implementations={"numpy": lambda params: body},
        )
    )


def _raise(x: Any) -> Any:
    raise ValueError("this workload always fails")


def _crash(x: Any) -> Any:
    os.kill(os.getpid(), signal.SIGSEGV)


def _hang(x: Any) -> Any:
    time.sleep(3600)


def _hog(x: Any) -> Any:
    import numpy as np

    hoard = []
    while True:  # keeps allocating and touching memory until the parent kills it
        hoard.append(np.ones(64 * 2**20 // 8))
        time.sleep(0.01)


def _wrong(x: Any) -> Any:
    return x * 3


def _right(x: Any) -> Any:
    return x * 2


FIRST_RUN_MIB = 256  # what big-first's first call holds at once
_FIRST = [True]


def _big_first(x: Any) -> Any:
    """The first call holds FIRST_RUN_MIB at once for a moment, as a compiler's working
    memory does in a first run; later calls hold nothing more."""
    import numpy as np

    if _FIRST[0]:
        _FIRST[0] = False
        scratch = np.ones(FIRST_RUN_MIB * 2**20 // 8)  # written, so resident
        del scratch
    return x * 2


for _name, _body in (
    ("fails", _raise),
    ("crashes", _crash),
    ("hangs", _hang),
    ("hogs", _hog),
    ("wrong", _wrong),
    ("doubles", _right),
    ("big-first", _big_first),
):
    _faulty(_name, _body)
