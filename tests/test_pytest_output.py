"""`python3 -m pytest -q` (README) ends with a summary only: no line per skipped or expected-to-fail
test (the suite has hundreds of each), and markers stay declared (--strict-markers)."""
from __future__ import annotations

import subprocess
import sys
import tomllib

from tests.paths import ROOT


def test_quiet_run_prints_counts_not_reasons(tmp_path):
    (tmp_path / "test_few.py").write_text(
        "import pytest\n\n"
        "def test_ok():\n    pass\n\n"
        "@pytest.mark.skip(reason='no such device here')\n"
        "def test_skipped():\n    pass\n\n"
        "@pytest.mark.xfail(reason='a known gap')\n"
        "def test_known_gap():\n    assert False\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c",
                           str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert "no such device here" not in done.stdout and "a known gap" not in done.stdout
    assert "short test summary" not in done.stdout
    assert lines[-1].startswith("1 passed, 1 skipped, 1 xfailed")


def test_addopts_keep_strict_markers_and_drop_ra():
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "--strict-markers" in addopts.split() and not any(opt.startswith("-r") for opt in addopts.split())
