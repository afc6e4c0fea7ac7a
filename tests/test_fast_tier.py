"""The fast tier (``pytest -m "not slow"``) starts no Python: tests/conftest.py fails a test
that does without the slow mark, in the test's thread or in another."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")
TESTS = """
import subprocess, sys, threading
import pytest

def test_in_the_tests_thread():
    subprocess.Popen([sys.executable, "-c", "pass"]).wait()

def test_in_another_thread():
    thread = threading.Thread(target=lambda: subprocess.Popen([sys.executable, "-V"]).wait())
    thread.start()
    thread.join()

def test_a_small_program():
    assert subprocess.run(["true"], check=False).returncode == 0

@pytest.mark.slow
def test_marked_slow():
    pass
"""


def test_a_test_that_starts_python_unmarked_fails_naming_the_mark(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makeini("[pytest]\nfilterwarnings = error\nmarkers =\n    slow: starts Python\n")
    pytester.makepyfile(test_guard=TESTS)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    # In another thread the refusal is also the thread's unhandled exception (a warning, an
    # error under filterwarnings=error, as in pyproject.toml).
    result.assert_outcomes(passed=2, failed=2, errors=1)
    output = result.stdout.str()
    assert output.count("mark it @pytest.mark.slow") >= 2
    assert "ERROR at teardown of test_in_another_thread" in output
