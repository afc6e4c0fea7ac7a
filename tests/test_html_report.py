"""``stackwars report``: the HTML and Markdown reports, from hand-built runs (every section,
hostile names) and from a small real run, which headless Chromium opens as a person would."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from stackwars.cli import main
from stackwars.report.html.data import SECTIONS, Report, ReportInputs, build_report
from stackwars.report.html.figures import WARMUP_EARLY, WARMUP_POINTS, draw_figures, thinned
from stackwars.report.html.markdown import render_markdown
from stackwars.report.html.page import render_html
from stackwars.results.run import Run
from stackwars.results.schema import Cell, Cpu, Memory, Steady, Times

DATA = Path(__file__).parent / "data"
HOSTILE = "<script>alert(1)</script>"
HOSTILE_REASON = "</td></tr><script>alert(2)</script> & $x$ | ~~gone~~ <img src=x>"
SETTINGS = {
    "run": {"threads": None, "cache": "cold", "x64": False, "cache_dir": "/tmp/c"},
    "environment": {"JAX_PLATFORMS": "cpu", "KERAS_HOME": "/tmp/c/keras"},
    "blas": [{"internal_api": "openblas", "num_threads": 2, "architecture": "Haswell"}],
}
_URL = re.compile(r"url\(\s*['\"]?([^'\")]*)")


class _References(HTMLParser):
    """What a page's tags and styles point at (text that merely reads like a tag is not)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "action", "srcset", "poster", "data"):
                self.found.append(value or "")
            if name == "style":
                self.found.extend(_URL.findall(value or ""))
        self._in_style = tag == "style"

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.found.extend(_URL.findall(data))


def external_references(page: str) -> list[str]:
    """Every reference of the page to something outside it (a fragment stays inside)."""
    parser = _References()
    parser.feed(page)
    return [ref for ref in parser.found if not ref.startswith("#")]


def cell(
    stack: str,
    median: float,
    *,
    workload: str = "gemm",
    params: dict[str, object] | None = None,
    status: str = "ok",
    reason: str = "",
) -> Cell:
    """A cell with every signal the report draws."""
    return Cell(
        workload=workload,
        params={"n": 64} if params is None else params,
        stack=stack,
        status=status,
        reason=reason,
        times=Times(first_run_s=median * 50, second_run_s=median * 2, dispatch_s=median / 4),
        first_run_breakdown={"trace_s": median * 10, "compile_s": median * 30}
        if stack.endswith("jit")
        else {},
        runs_to_steady=3,
        warmup_s=[median * 50, median * 3, median * 1.2, median, median],
        steady=Steady(
            median_s=median,
            ci95_low_s=median * 0.97,
            ci95_high_s=median * 1.03,
            stable=True,
            samples_s=[median * (1 + k / 100) for k in range(-5, 6)],
        ),
        memory=Memory(peak_rss_bytes=80 * 2**20, predicted_bytes=100 * 2**20),
        # JAX's fresh output per call: page faults the other stacks do not have.
        cpu=Cpu(
            user_s_per_call=median * 1.5,
            sys_s_per_call=median / 10,
            page_faults_per_call=50.0 if stack.startswith("jax") else 0.0,
        ),
        settings=SETTINGS,
        warnings=[f"not stable: {HOSTILE}"] if workload == HOSTILE else [],
    )


SWEEP = ((64, 1e-5, 4e-5), (256, 3e-4, 2e-4), (1024, 2e-2, 5e-3))  # n, numpy, jax:jit


def hand_run(run_id: str = "run-1", scale: float = 1.0, sizes: int = len(SWEEP)) -> Run:
    """A sweep with a crossover, a hostile workload, and cells that did not end ok."""
    cells = []
    for n, numpy_s, jax_s in SWEEP[:sizes]:
        cells.append(cell("numpy:eager", numpy_s * scale, params={"n": n}))
        cells.append(cell("jax:jit", jax_s * scale, params={"n": n}))
    cells.append(cell("numpy:eager", 1e-4, workload=HOSTILE, params={"n": "$1$"}))
    cells.append(cell("jax:jit", 0, workload=HOSTILE, status="error", reason=HOSTILE_REASON))
    planned = [{"workload": "selu", "params": {"n": 8}, "stack": "torch:eager"}]
    return Run(
        id=run_id,
        started="2026-11-23T10:00:00+00:00",
        machine={"cpu_model": HOSTILE, "logical_cores": 2},
        versions={"numpy": "2.4.6", "jax": "0.10.2"},
        argv=["stackwars", "run", "--workload", HOSTILE],
        options={"cache": "cold"},
        planned=planned,
        status="interrupted",
        cells=cells,
    )


@pytest.fixture(scope="module")
def hand_report() -> tuple[Report, dict[str, str]]:
    report = build_report(ReportInputs(runs=[hand_run()], baseline="numpy:eager"))
    return report, draw_figures(report)


def test_every_section_is_there_and_every_run_string_is_text(
    hand_report: tuple[Report, dict[str, str]],
) -> None:
    report, figures = hand_report
    page = render_html(report, figures)
    for section, _ in SECTIONS:
        assert f'<section id="{section}">' in page
    assert "<script" not in page.lower()  # the page has none, and hostile names are text
    assert "<img" not in page.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;script&gt;alert(2)&lt;/script&gt; &amp; $x$" in page  # the reason, whole
    assert external_references(page) == []
    assert "n=$1$" in page  # a dollar sign is not mathtext
    # The sweep over n crosses over: numpy is faster at 64, jax:jit at 256 and 1024.
    assert "jax:jit is faster than numpy:eager above n ≈" in page
    assert "not run" in page and "planned, never measured: the run is interrupted" in page
    assert "page faults per call: 51" in page  # why the explain section shows the group
    assert {"group-0", "group-0-warmup", "sweep-0", "explain-group-0"} <= set(figures)
    assert page.count('<figure class="plot"') == len(figures)


def test_markdown_says_the_same_with_figures_beside_it(
    hand_report: tuple[Report, dict[str, str]],
) -> None:
    report, figures = hand_report
    text = render_markdown(report, {name: f"plots/{name}.svg" for name in figures})
    for _, heading in SECTIONS:
        assert f"## {heading}" in text.replace("\\", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<script" not in text
    # A failure reason with a pipe and newlines stays inside its table row.
    row = next(line for line in text.splitlines() if "alert(2)" in line and "error" in line)
    assert row.startswith("| ") and row.endswith(" |") and "\\|" in row
    assert "![steady median, first-run phases and memory" in text
    assert all(f"(plots/{name}.svg)" in text for name in figures)


def test_several_runs_add_comparisons_and_history(tmp_path: Path) -> None:
    runs = [hand_run("run-1", sizes=1), hand_run("run-2", 1.5, 1), hand_run("run-3", 1.5, 1)]
    db = tmp_path / "db.sqlite"
    paths = []
    for run in runs:
        path = tmp_path / f"{run.id}.json"
        run.write_json(path)
        paths.append(str(path))
    out = tmp_path / "several.html"
    argv = ["report", *paths, "--db", str(db), "--out", str(out), "--within-process"]
    assert main(argv) == 0
    page = out.read_text(encoding="utf-8")
    assert "run-2 against run-1" in page and "run-3 against run-1" in page
    assert 'aria-label="ratio with its interval per cell: run-2 against run-1"' in page
    assert "slower" in page  # run-2 is 1.5 times run-1, with ten blocks each side
    history = page[page.index('<section id="history">') : page.index('<section id="ir">')]
    assert "<table>" in history and "run-3" in history


def test_captured_ir_shows_op_histograms_and_findings() -> None:
    run = hand_run()
    gemm = [c for c in run.cells if c.workload == "gemm" and c.params["n"] == 64]
    captures = {
        json.dumps(c.key()): {"stablehlo": (DATA / name).read_text(encoding="utf-8")}
        for c, name in zip(gemm, ("ir_flattens.mlir", "ir_keeps_3d.mlir"), strict=True)
    }
    report = build_report(ReportInputs(runs=[run], captures={run.id: captures}))
    page = render_html(report, {})
    section = page[page.index('<section id="ir">') : page.index('<section id="fairness">')]
    assert "dot_general" in section
    assert "numpy:eager vs jax:jit:" in section


def test_markdown_format_writes_figure_files(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    hand_run(sizes=2).write_json(path)
    out = tmp_path / "report.md"
    assert main(["report", str(path), "--db", str(tmp_path / "db"), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    files = sorted(p.name for p in (tmp_path / "report-plots").iterdir())
    assert "group-0.svg" in files and "sweep-0.svg" in files
    assert all(f"(report-plots/{name})" in text for name in files)


def test_a_baseline_that_ran_nothing_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    hand_run().write_json(path)
    argv = ["report", str(path), "--db", str(tmp_path / "db"), "--baseline", "torch:eager"]
    assert main([*argv, "--out", str(tmp_path / "r.html")]) == 2
    assert not (tmp_path / "r.html").exists()


def test_a_long_warm_up_is_drawn_from_a_sample_that_keeps_its_start_and_end() -> None:
    points = [(i, 1.0 / i) for i in range(1, 1001)]
    shown = thinned(points)
    assert len(shown) <= WARMUP_POINTS
    assert shown[:WARMUP_EARLY] == points[:WARMUP_EARLY] and shown[-1] == points[-1]
    assert thinned(points[:WARMUP_POINTS]) == points[:WARMUP_POINTS]


# What `stackwars --help` does: the root parser with every command discovered, the report's
# among them (its module imports figures.py, which must leave matplotlib to the first figure).
_HELP_IMPORTS = """
import json, sys
from stackwars.cli import build_parser
help = build_parser().format_help()
loaded = sorted(m for m in sys.modules if m.split(".")[0] == "matplotlib")
print(json.dumps({"help": help, "modules": sorted(sys.modules), "matplotlib": loaded}))
"""


@pytest.mark.slow
def test_other_commands_do_not_import_matplotlib() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _HELP_IMPORTS], capture_output=True, text=True, check=True
    )
    seen = json.loads(result.stdout)
    assert all(f"    {name} " in seen["help"] for name in ("run", "compare", "report", "ab"))
    assert "stackwars.report.html.figures" in seen["modules"]  # the report command's module
    assert seen["matplotlib"] == []


@pytest.fixture(scope="module")
def real_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report of a small real run: GEMM on numpy and jax:jit, cheap budgets, profiled."""
    folder = tmp_path_factory.mktemp("real")
    db = str(folder / "stackwars.sqlite")
    run = ["run", "--workload", "gemm", "--param", "n=32", "--stacks", "numpy,jax:jit"]
    assert main([*run, "--budget", "0.05", "--quiet", "--db", db, "--profile"]) == 0
    out = folder / "report.html"
    assert main(["report", "latest", "--db", db, "--out", str(out)]) == 0
    return out


@pytest.mark.slow
def test_a_real_run_reports_every_section_offline(real_report: Path) -> None:
    page = real_report.read_text(encoding="utf-8")
    for section, _ in SECTIONS:
        assert f'<section id="{section}">' in page
    assert page.count("<svg") >= 2  # the group's bars and its warm-up series
    assert "jax:jit" in page and "numpy:eager" in page and "openblas" in page
    assert external_references(page) == []
    assert "Content-Security-Policy" in page
    # jax:jit's profile (numpy has no profiler): its categories, then its operations.
    assert '<h3 id="profile-0">gemm(n=32, dtype=float32) @ cpu</h3>' in page
    assert "matmul/conv" in page and "numpy:eager: unsupported" in page


def chromium_command(folder: Path) -> list[str]:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    return [
        chromium,
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--hide-scrollbars",
        "--no-first-run",
        f"--user-data-dir={folder / 'chromium-profile'}",
    ]


def open_page(command: list[str], page: Path) -> tuple[str, set[str]]:
    """The DOM Chromium built from ``page``, and every URL the page itself asked for, from
    Chromium's network log (the browser's own background requests, whose initiator is 'not
    an origin', left out)."""
    net_log = page.with_suffix(".net-log.json")
    dom = subprocess.run(
        [*command, f"--log-net-log={net_log}", "--dump-dom", page.as_uri()],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    log = json.loads(net_log.read_text(encoding="utf-8"))
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    starts = [event.get("params", {}) for event in log["events"] if event["type"] == start]
    asked = {
        params["url"]
        for params in starts
        if "url" in params and params.get("initiator") != "not an origin"
    }
    return dom, asked


@pytest.mark.slow
def test_chromium_opens_the_report_without_a_request(real_report: Path) -> None:
    folder = real_report.parent
    command = chromium_command(folder)
    # The control: a page that does ask for something is caught asking.
    control = folder / "control.html"
    control.write_text('<img src="http://127.0.0.1:9/probe.png">', encoding="utf-8")
    assert open_page(command, control)[1] == {"http://127.0.0.1:9/probe.png"}
    dom, asked = open_page(command, real_report)
    assert asked == set()
    for section, _ in SECTIONS:
        assert f'id="{section}"' in dom
    assert dom.count("<svg") >= 2
    assert 'id="profile-0"' in dom
    shot = folder / "report.png"  # the artefact: the top of the report as a person sees it
    subprocess.run(
        [*command, "--window-size=1280,1600", f"--screenshot={shot}", real_report.as_uri()],
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert shot.stat().st_size > 10_000


def test_a_timed_mismatch_shows_its_time_and_reason_in_the_html_table() -> None:
    """The HTML table is the terminal's: a mismatch was timed, so its row has its time, its
    status beside the stack and its reason among the notes."""
    reason = "output 0: 9 of 64 elements beyond the tolerance; --rtol 4.4e-09 would accept it"
    cells = [
        cell("numpy:eager", 1e-4),
        cell("torch:eager", 7.6e-3, status="mismatch", reason=reason),
    ]
    run = dataclasses.replace(hand_run(), cells=cells, planned=[], status="complete")
    report = build_report(ReportInputs(runs=[run], baseline="numpy:eager"))
    page = render_html(report, draw_figures(report))
    row = page[page.index("torch:eager MISMATCH") :]
    assert "7.60 ms" in row[: row.index("</tr>")]
    assert "--rtol 4.4e-09 would accept it" in page
