"""A GPU visit's tables, rendered from the run files it brought back (docs/data/gpu-visit-N/).

    python benchmarks/gpu/render_visit.py docs/data/gpu-visit-6

Prints Markdown: each accelerator cell's device peak beside the plan's prediction
(device_memory.py's table, over the visit's run files in the order of ``DEVICE_RUNS``), then
the seed-blog suite on the device machine's CPU where the visit ran it (the project's own
tables, ``report/table.py``). docs/results.md holds this output between ``rendered`` markers,
and tests/test_rendered_docs.py renders it again and fails on any difference: a figure of the
visit is never typed.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from stackwars.report.table import build_tables, render_markdown
from stackwars.results.aggregate import merge_repeats
from stackwars.results.schema import Cell

# The visits' run files with accelerator cells, in the order prove.sh's steps made them.
DEVICE_RUNS = (
    "maxbatch-jax-preallocate.json",
    "maxbatch-bert-torch.json",
    "models-rest.json",
    "models-gpt2-train.json",
    "gpt-neo.json",
)
BLOG_CPU = "blog-cpu.json"
HEADER = (
    "| cell | stack | status | predicted MiB | measured peak MiB | reserved MiB "
    "| peak ÷ predicted arrays | reserved ÷ predicted |\n"
    "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"
)


def _device_memory() -> object:
    """benchmarks/gpu/device_memory.py, a script beside this one."""
    path = Path(__file__).with_name("device_memory.py")
    spec = importlib.util.spec_from_file_location("device_memory", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def render(folder: Path) -> str:
    """The visit's tables as Markdown."""
    paths = [str(folder / name) for name in DEVICE_RUNS if (folder / name).exists()]
    rows = _device_memory().rows(paths)  # type: ignore[attr-defined]
    parts = ["#### Device peaks against the plan's prediction", "", HEADER, *rows]
    blog = folder / BLOG_CPU
    if blog.exists():
        data = json.loads(blog.read_text(encoding="utf-8"))
        cells = [Cell.from_dict(cell) for cell in data["cells"]]
        status = data["run"]["status"]
        ended = "complete" if status == "complete" else f"stored as {status}: stopped unfinished"
        parts += [
            "",
            f"#### seed-blog on the device machine's CPU ({len(cells)} cells; the run {ended})",
            "",
            render_markdown(build_tables(merge_repeats(cells))).rstrip(),
        ]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render(Path(sys.argv[1])))
