"""``perfbot run`` end to end: real worker processes, real store (SQLite), tiny ONNX models.

Crashes and hangs come from the worker's test-only fault hook (PERFBOT_TEST_FAULT, see
bot/runner/faults.py); the unsupported operator is a real custom-domain node.
"""
import json
import re

import pytest

from bot.cli import main
from bot.results_doc import validate_results
from bot.runner.faults import ENV as FAULT_ENV
from bot.store import open_store
from tests.fixtures.runner.manifest import write_manifest

FAST = ["--target", "cpu", "--repeats", "3", "--warmup", "1", "--quiet"]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # worker logs go under ./.perfbot
    return tmp_path


def _run(capsys, *args) -> tuple[int, str, str]:
    code = main(["run", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_isolation_one_bad_row_never_stops_the_suite(workdir, capsys, monkeypatch):
    manifest = write_manifest(workdir / "m", [
        ("ok", "elementwise", 2, "fp32"), ("crashy", "elementwise", 1, "fp32"),
        ("quitter", "elementwise", 1, "fp32"), ("sleepy", "elementwise", 1, "fp32"),
        ("custom", "custom_op", 1, "fp32"), ("half", "elementwise", 2, "fp16"),
        ("nan", "log", 2, "fp32")])
    monkeypatch.setenv(FAULT_ENV, "crashy@compile=segv,quitter@warm-up=exit,sleepy@measure=hang")
    db = f"sqlite:///{workdir / 'r.db'}"
    # the hang costs the whole timeout; it stays well above a slow machine's first numba compile
    code, out, _ = _run(capsys, "--suite", "all", "--manifest", str(manifest), "--db", db,
                        "--timeout", "12", "--format", "json", "--out", str(workdir / "r.json"),
                        "--commit", "abc1234", "--branch", "main", *FAST)
    assert code == 0
    doc = validate_results(json.loads(out))
    assert doc == validate_results(json.loads((workdir / "r.json").read_text()))
    rows = {r["name"]: r for r in doc["rows"]}
    assert [r["name"] for r in doc["rows"]] == ["ok", "crashy", "quitter", "sleepy", "custom", "half", "nan"]
    assert doc["run"]["commit"] == "abc1234" and doc["run"]["branch"] == "main"
    assert doc["run"]["target"] == "cpu" and doc["run"]["suite"] == "all" and doc["run"]["ended"]

    for name in ("ok", "half"):
        row = rows[name]
        assert row["status"] == "ok" and row["error"] is None
        assert len(row["samples"]) == 3 and row["rate"] == sorted(row["samples"])[1]
        assert row["compile_s"] > 0 and row["peak_mem_bytes"] > 0
        assert row["accuracy"]["status"] == "PASSED"
    assert rows["half"]["accuracy"]["rtol"] == 4e-2  # fp16 rows are judged at fp16 tolerance
    assert rows["ok"]["accuracy"]["rtol"] == 1e-3

    assert rows["crashy"]["error"] == "worker crashed (SIGSEGV) during compile"
    assert rows["quitter"]["error"] == "worker exited with status 3 during warm-up"
    assert rows["sleepy"]["error"] == "timed out after 12 s during measure (worker killed)"
    assert rows["sleepy"]["compile_s"] > 0  # what was measured before the hang is kept
    assert rows["custom"]["error"].startswith("unsupported operator Frobnicate (domain com.example")
    for name in ("crashy", "quitter", "sleepy", "custom"):
        assert rows[name]["status"] == "error" and rows[name]["rate"] is None
    # NaN outputs: an error row, accuracy FAILED with the first NaN's place; the rate is kept
    nan = rows["nan"]
    assert nan["accuracy"] is not None, nan["error"]
    assert nan["status"] == "error" and nan["accuracy"]["status"] == "FAILED"
    assert nan["accuracy"]["nonfinite"] is True and len(nan["samples"]) == 3
    assert re.fullmatch(r"output 'y' has NaN at index \[\d, \d\] \(so does ONNX Runtime's\)", nan["error"])
    assert all("\n" not in r["error"] for r in doc["rows"] if r["status"] == "error")
    # worker logs are kept for the failed rows only
    logs = sorted(p.name for p in (workdir / ".perfbot" / "logs" / doc["run"]["id"]).iterdir())
    assert logs == ["crashy-b1-fp32-run.log", "custom-b1-fp32-run.log", "nan-b2-fp32-run.log",
                    "quitter-b1-fp32-run.log", "sleepy-b1-fp32-run.log"]
    assert "Segmentation fault" in (workdir / ".perfbot" / "logs" / doc["run"]["id"] / logs[0]).read_text()
    # the store holds exactly what was printed
    with open_store(db) as store:
        assert store.get_run(doc["run"]["id"])["rows"] == doc["rows"]


def test_a_row_whose_model_file_is_missing_fails_alone(workdir, capsys):
    manifest = write_manifest(workdir / "m", [("ok", "relu", 1, "fp32"), ("gone", "relu", 1, "fp32"),
                                              ("dir", "relu", 1, "fp32")])
    (workdir / "m" / "gone.onnx").unlink()
    (workdir / "m" / "dir.onnx").unlink()
    (workdir / "m" / "dir.onnx").mkdir()
    code, out, _ = _run(capsys, "--suite", "all", "--manifest", str(manifest), "--db",
                        f"sqlite:///{workdir / 'r.db'}", "--format", "json", *FAST)
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)["rows"]}
    assert rows["ok"]["status"] == "ok"
    assert rows["gone"]["status"] == "error" and "gone.onnx not found" in rows["gone"]["error"]
    assert rows["dir"]["status"] == "error" and "is a folder, not an .onnx file" in rows["dir"]["error"]


def test_text_and_markdown_output(workdir, capsys):
    manifest = write_manifest(workdir / "m", [("ok", "elementwise", 2, "fp32"),
                                              ("custom", "custom_op", 1, "fp32")])
    db = f"sqlite:///{workdir / 'r.db'}"
    code, out, _ = _run(capsys, "--suite", "ok,custom", "--manifest", str(manifest), "--db", db, *FAST)
    assert code == 0
    assert "2 rows, 1 errors, 0 accuracy failures" in out
    assert "PASSED" in out and "error: unsupported operator Frobnicate" in out
    code, out, _ = _run(capsys, "--suite", "custom", "--manifest", str(manifest), "--db", db,
                        "--format", "markdown", "--strict", *FAST)
    assert code == 1  # --strict: an error row fails the command
    assert "| custom | 1 | fp32 |" in out


def test_shards_split_the_suite_and_are_recorded(workdir, capsys):
    manifest = write_manifest(workdir / "m", [("r1", "relu", 1, "fp32"), ("r2", "seq_first", 3, "fp32"),
                                              ("r3", "relu", 2, "fp32")])
    db = f"sqlite:///{workdir / 'r.db'}"
    docs = []
    for shard in ("1/2", "2/2"):
        code, out, _ = _run(capsys, "--suite", "all", "--manifest", str(manifest), "--db", db,
                            "--shard", shard, "--format", "json", *FAST)
        assert code == 0
        docs.append(json.loads(out))
    assert [r["name"] for r in docs[0]["rows"]] == ["r1", "r3"]
    assert [r["name"] for r in docs[1]["rows"]] == ["r2"]
    assert [d["run"]["shard"] for d in docs] == ["1/2", "2/2"]
    # r2's batch is its second dimension: bound from the feeds, not by position
    assert all(r["status"] == "ok" and r["accuracy"]["status"] == "PASSED" for d in docs for r in d["rows"])


@pytest.mark.parametrize("args, message", [
    (["--shard", "3/2"], "--shard '3/2': there is no shard 3 of 2; shards are numbered 1 to 2"),
    (["--shard", "x"], "--shard 'x' must look like I/N"),
    (["--suite", "nope"], "'nope' is neither a suite nor a row of manifest"),
    (["--commit", "not-a-sha"], "--commit 'not-a-sha' is not a hexadecimal commit id"),
    (["--resume", "no-such-run"], "no run 'no-such-run'"),
    (["--suite", ",".join(["ok"] * 70)], "--suite lists 70 rows in 209 characters; a run records at most 200"),
])
def test_user_mistakes_are_one_line_and_exit_2(workdir, capsys, args, message):
    manifest = write_manifest(workdir / "m", [("ok", "relu", 1, "fp32")])
    code, _, err = _run(capsys, "--manifest", str(manifest), "--db", f"sqlite:///{workdir / 'r.db'}",
                        "--target", "cpu", "--quiet", *args)
    assert code == 2
    assert message in err and err.count("\n") == 1
    if "--resume" not in args:  # nothing was recorded for a refused command
        with open_store(f"sqlite:///{workdir / 'r.db'}") as store:
            assert store.find_runs() == []
