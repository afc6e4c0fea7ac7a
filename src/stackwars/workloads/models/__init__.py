"""End-to-end models (issue 6): one ModelSpec per model (see spec.py for the contract), each
registered as a workload through adapter.py. Framework code lives in ``<family>_<framework>.py``
and ``run_<framework>.py``, imported only inside workers."""

from __future__ import annotations

from stackwars.workloads import register
from stackwars.workloads.models import encoder, gpt, llama, resnet
from stackwars.workloads.models.adapter import as_workload
from stackwars.workloads.models.spec import ModelSpec

SPECS: tuple[ModelSpec, ...] = (
    *resnet.SPECS,
    *encoder.SPECS[:1],
    *gpt.SPECS[:1],
    *encoder.SPECS[1:],
    *gpt.SPECS[1:],
    *llama.SPECS,
)

for _spec in SPECS:
    register(as_workload(_spec))
