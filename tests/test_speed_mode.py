"""What could set a worker's speed mode: read from Linux's files (here from written copies),
recorded in the cell, and listed per worker by show --details."""

from __future__ import annotations

from pathlib import Path

import pytest

from stackwars.report.signals import speed_mode_rows
from stackwars.results.schema import Cell, Cpu, Steady
from stackwars.runner import speed_mode


def fake_linux(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    thp = tmp_path / "thp"
    thp.mkdir()
    (thp / "enabled").write_text("always [madvise] never\n", encoding="utf-8")
    (thp / "defrag").write_text("always defer defer+madvise [madvise] never\n", encoding="utf-8")
    smaps = tmp_path / "smaps_rollup"
    smaps.write_text("Rss:  81920 kB\nAnonHugePages:  30720 kB\n", encoding="utf-8")
    tasks = tmp_path / "task"
    for tid, cpu in ((100, 1), (101, 0), (102, 1)):
        (tasks / str(tid)).mkdir(parents=True)
        fields = ["S", *["0"] * (speed_mode.LAST_CPU_FIELD - 4), str(cpu), "0", "0"]
        stat = f"{tid} (python3 -m stackwars) " + " ".join(fields)
        (tasks / str(tid) / "stat").write_text(stat, encoding="utf-8")
    monkeypatch.setattr(speed_mode, "THP", thp)
    monkeypatch.setattr(speed_mode, "SMAPS_ROLLUP", smaps)
    monkeypatch.setattr(speed_mode, "TASKS", tasks)


def test_the_signals_are_read_from_the_kernels_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_linux(tmp_path, monkeypatch)
    facts = speed_mode.speed_mode_facts()
    assert facts["thp_enabled"] == "madvise" and facts["thp_defrag"] == "madvise"
    assert facts["anon_huge_pages_kb"] == 30720
    assert facts["threads_last_cpus"] == [0, 1]  # a command name with spaces parsed
    assert isinstance(facts["load_1min"], float)


def test_what_cannot_be_read_is_recorded_as_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(speed_mode, "THP", tmp_path / "absent")
    monkeypatch.setattr(speed_mode, "SMAPS_ROLLUP", tmp_path / "absent")
    monkeypatch.setattr(speed_mode, "TASKS", tmp_path / "absent")
    facts = speed_mode.speed_mode_facts()
    assert facts["thp_enabled"] is None and facts["anon_huge_pages_kb"] is None
    assert facts["threads_last_cpus"] is None


def worker(repeat: int, median: float, huge_kb: int | None) -> Cell:
    mode = {"thp_enabled": "madvise", "thp_defrag": "madvise", "anon_huge_pages_kb": huge_kb}
    mode |= {"threads_last_cpus": [1], "allowed_cpus": [0, 1], "load_1min": 0.5}
    return Cell(
        workload="gemm", params={"n": 1024}, stack="numpy:eager", repeat=repeat, status="ok",
        steady=Steady(median_s=median, samples_s=[median]), cpu=Cpu(page_faults_per_call=2.0),
        settings={"speed_mode": mode, "background_cores": 0.1},
    )  # fmt: skip


def test_show_details_lists_each_worker_fastest_first_with_its_signals() -> None:
    rows = speed_mode_rows([worker(0, 10.5e-3, 0), worker(1, 7e-3, 30720)])
    assert [row[2] for row in rows] == ["1", "0"]  # the 7 ms worker first
    assert rows[0][4] == "madvise/madvise" and rows[0][6] == "1 (0,1)"
    assert rows[0][5] != rows[1][5]  # huge pages shown per worker
    old = Cell(workload="gemm", params={}, stack="numpy:eager", status="ok", steady=Steady(1e-3))
    assert speed_mode_rows([old])[0][4:7] == ("unknown/unknown", "unknown", "unknown (unknown)")
