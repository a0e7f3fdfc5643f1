"""Resume after kill -9: the parent dies mid-suite, its worker dies with it, and ``--resume``
measures only the rows that were not recorded."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.cli import main
from bot.runner.faults import ENV as FAULT_ENV
from bot.store import open_store
from tests.fixtures.runner.manifest import write_manifest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _workers_of(parent: int) -> list[int]:
    """Worker processes started by ``parent`` (they carry its pid in their environment)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"PERFBOT_PARENT_PID={parent}".encode() in env:
            found.append(int(entry.name))
    return found


def _wait_for(predicate, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"gave up waiting for {what}")


def test_resume_after_kill_9_measures_each_row_once(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    manifest = write_manifest(tmp_path / "m", [("r1", "relu", 1, "fp32"), ("r2", "relu", 1, "fp32"),
                                               ("r3", "elementwise", 2, "fp32")])
    db = f"sqlite:///{tmp_path / 'r.db'}"
    args = ["run", "--suite", "all", "--manifest", str(manifest), "--db", db, "--repeats", "3",
            "--warmup", "1"]
    # r2 hangs, so the parent is surely busy with r2 (and r1 recorded) when it is killed
    env = dict(os.environ, **{FAULT_ENV: "r2@measure=hang"})
    parent = subprocess.Popen([sys.executable, "-m", "bot", *args, "--target", "cpu", "--timeout", "300"],
                              cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    try:
        run_id = re.search(r"perfbot: run (\S+) ", parent.stderr.readline()).group(1)
        with open_store(db) as store:
            _wait_for(lambda: store.recorded_rows(run_id) == {("r1", 1, "fp32")}, 120, "row r1")
            first = store.get_run(run_id)["rows"]
        workers = _wait_for(lambda: _workers_of(parent.pid), 60, "r2's worker")
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    # the hung worker does not outlive its parent (PR_SET_PDEATHSIG)
    _wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in workers), 30, "worker exit")

    monkeypatch.delenv(FAULT_ENV, raising=False)
    assert main([*args, "--resume", run_id, "--format", "json"]) == 0
    err = capsys.readouterr().err
    measured = re.findall(r"^\[\d+/(\d+) .*?\] (\S+)", err, re.M)
    assert measured == [("2", "r2"), ("2", "r3")]  # r1 was not measured again
    with open_store(db) as store:
        doc = store.get_run(run_id)
    assert [r["name"] for r in doc["rows"]] == ["r1", "r2", "r3"]
    assert doc["rows"][0] == first[0]  # r1's samples are the ones from before the kill
    assert all(r["status"] == "ok" for r in doc["rows"]) and doc["run"]["ended"]
    assert doc["run"]["target"] == "cpu" and doc["run"]["suite"] == "all"


def test_resume_takes_the_runs_settings_and_refuses_changed_ones(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    manifest = write_manifest(tmp_path / "m", [("r1", "relu", 1, "fp32"), ("r2", "relu", 1, "fp32")])
    db = f"sqlite:///{tmp_path / 'r.db'}"
    monkeypatch.setenv(FAULT_ENV, "r2@compile=exit")
    assert main(["run", "--suite", "all", "--manifest", str(manifest), "--db", db, "--target", "cpu",
                 "--repeats", "4", "--warmup", "1", "--quiet", "--format", "json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run"]["id"]
    monkeypatch.delenv(FAULT_ENV)

    # A different --repeats, --target or manifest would mix rows measured two ways: refused.
    for flags, message in ((["--repeats", "50"], f"--repeats 50 differs from run {run_id}'s 4"),
                           (["--target", "ref"], f"--target ref differs from run {run_id}'s cpu"),
                           (["--manifest", str(write_manifest(tmp_path / "other", []))],
                            f"differs from run {run_id}'s {manifest.resolve()}")):
        assert main(["run", "--resume", run_id, "--db", db, "--quiet", *flags]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1

    # No flags repeated: the manifest and the measurement settings come from the run; without
    # --retry-errors the errored row stays as it is, with it that row alone is measured again.
    assert main(["run", "--resume", run_id, "--db", db, "--quiet"]) == 0
    capsys.readouterr()
    with open_store(db) as store:
        before = store.get_run(run_id)["rows"]
    assert [r["status"] for r in before] == ["ok", "error"]
    assert main(["run", "--resume", run_id, "--retry-errors", "--db", db, "--quiet",
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["name"] for r in rows] == ["r1", "r2"] and [r["status"] for r in rows] == ["ok", "ok"]
    assert rows[0] == before[0]  # r1 was not measured again
    assert len(rows[1]["samples"]) == 4  # r2 was measured with the run's own --repeats


def test_retry_errors_needs_resume(tmp_path, capsys):
    assert main(["run", "--retry-errors", "--db", f"sqlite:///{tmp_path / 'r.db'}"]) == 2
    assert "--retry-errors goes with --resume" in capsys.readouterr().err
