"""An edition's findings, rendered from its file (docs/findings.md is this script's output).

    python benchmarks/render_findings.py docs/data/edition/edition.json [--headlines]
                                         [--earlier docs/data/editions/ID/edition.json ...]

Prints Markdown: the whole findings page (``stackwars reproduce --render`` writes the same),
listing each ``--earlier`` edition and the verdicts changed since the newest of them, or with
``--headlines`` the five findings the README shows. The documents hold this output between
``rendered`` markers, and tests/test_rendered_docs.py renders it again and fails on any
difference: no finding is typed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stackwars.instruments.reproduce.data import read_edition
from stackwars.instruments.reproduce.render.findings import findings_markdown, headlines_markdown


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description="render an edition's findings")
    parser.add_argument("edition", type=Path)
    parser.add_argument("--headlines", action="store_true", help="the README's five findings")
    parser.add_argument("--earlier", type=Path, action="append", default=[], metavar="EDITION")
    args = parser.parse_args(argv)
    edition = read_edition(args.edition)
    if args.headlines:
        text = headlines_markdown(edition)
    else:
        earlier = [read_edition(path) for path in args.earlier]
        text = findings_markdown(edition, earlier, size_bytes=args.edition.stat().st_size)
    sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
