"""An edition's findings, rendered from its file (docs/findings.md is this script's output).

    python benchmarks/render_findings.py docs/data/edition/edition.json [--headlines]

Prints Markdown: the whole findings page (``stackwars reproduce --render`` writes the same),
or with ``--headlines`` the five findings the README shows. The documents hold this output
between ``rendered`` markers, and tests/test_rendered_docs.py renders it again and fails on any
difference: no finding is typed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from stackwars.instruments.reproduce.data import read_edition
from stackwars.instruments.reproduce.render.findings import findings_markdown, headlines_markdown


def main(argv: list[str]) -> None:
    path = Path(argv[0])
    edition = read_edition(path)
    if "--headlines" in argv[1:]:
        text = headlines_markdown(edition)
    else:
        text = findings_markdown(edition, size_bytes=path.stat().st_size)
    sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
