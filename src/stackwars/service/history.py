"""A cell's history across stored runs (``stackwars history``): every stored cell of a workload
on a stack, filtered by parameters, label and machine. Re-exported by ``api.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

from stackwars.errors import ParameterError, UsageError
from stackwars.frameworks import parse_stack
from stackwars.results.schema import Cell
from stackwars.service.runs import open_store


def history(
    workload: str,
    stack: str,
    params: Sequence[str] = (),
    db: str | None = None,
    *,
    label: str | None = None,
    machine: str | None = None,
) -> tuple[list[tuple[str, str, Cell]], dict[str, str]]:
    """(run id, run start, cell) of every stored cell of a workload on a stack, oldest first,
    keeping those whose parameters match ``params`` (``"n=1024"``) and whose run has ``label``
    and ran on ``machine`` (a fingerprint, as ``runs`` shows it); and each run's machine."""
    name = str(parse_stack(stack))
    wanted = dict(_param_filter(text) for text in params)
    results = open_store(db, must_exist=True)
    identities = results.identities()
    machines = {run_id: ident.get("fingerprint", "") for run_id, ident in identities.items()}

    def kept(run_id: str, cell: Cell) -> bool:
        identity = identities.get(run_id, {})
        return (
            all(str(cell.params.get(k)) == v for k, v in wanted.items())
            and (label is None or identity.get("label") == label)
            and (machine is None or identity.get("fingerprint") == machine)
        )

    rows = [row for row in results.cells_of(workload, name) if kept(row[0], row[2])]
    if not rows:
        given = [*params, *([f"label {label}"] if label else [])]
        given += [f"machine {machine}"] if machine else []
        which = f" with {', '.join(given)}" if given else ""
        raise UsageError(f"no stored results of {workload} on {name}{which}; see 'stackwars runs'")
    return rows, machines


def _param_filter(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep:
        raise ParameterError(f"--param {text!r} is not KEY=VALUE; example: --param n=1024")
    return name.strip(), value.strip()
