"""A hostile user's invocations: each must end with exit 2 and one ``perfbot: error:`` line on
stderr, never a traceback, and must leave nothing half-written behind.

The table runs the CLI in-process (an uncaught exception fails the test with its traceback);
a few checks run the installed ``python -m bot`` to see exactly what a user sees.
"""
from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bot.cli import main
from compiler.onnx.testing import model_of

from tests.paths import ROOT


def _tiny_results(run_id: str = "r1") -> dict:
    row = {"name": "tiny", "batch": 1, "mode": "fp32", "status": "ok", "error": None,
           "rate": 100.0, "samples": [100.0, 101.0, 99.0], "compile_s": 0.1,
           "peak_mem_bytes": 1000, "accuracy": None}
    return {"schema": "perfbot.results/1",
            "run": {"id": run_id, "commit": "abc1234", "branch": "main", "target": "cpu",
                    "started": "2026-11-01T10:00:00Z"},
            "rows": [row]}


def _write_models(folder: Path) -> None:
    """relu.onnx (fine), unsupported.onnx (MaxRoiPool), and broken files of every kind."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
    relu = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r0")], "g", [x], [y])
    onnx.save(model_of(relu, 17), folder / "relu.onnx")
    rois = helper.make_tensor_value_info("rois", TensorProto.FLOAT, [1, 5])
    pool = helper.make_graph([helper.make_node("MaxRoiPool", ["x", "rois"], ["y"], name="pool7",
                                               pooled_shape=[1, 1])], "g", [x, rois], [y])
    onnx.save(model_of(pool, 17),
              folder / "unsupported.onnx")
    stft = helper.make_graph([helper.make_node("STFT", ["x"], ["y"], name="stft0")], "g", [x], [y])
    onnx.save(model_of(stft, 17),
              folder / "missing-input.onnx")  # STFT needs frame_step too
    text_in = helper.make_tensor_value_info("s", TensorProto.STRING, [3])
    ident = helper.make_graph([helper.make_node("Identity", ["s"], ["y"], name="id0")], "g", [text_in], [y])
    onnx.save(model_of(ident, 17), folder / "strings.onnx")
    # beyond any machine's address space (364 TiB), so allocating it fails at once, never swaps
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [10 ** 7, 10 ** 7])
    huge = helper.make_graph([helper.make_node("ConstantOfShape", ["shape"], ["c"], name="big"),
                              helper.make_node("Add", ["x", "c"], ["y"], name="add")], "g", [x], [y], [shape])
    onnx.save(model_of(huge, 17), folder / "huge.onnx")
    future = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r0")], "g", [x], [y])
    onnx.save(helper.make_model(future, opset_imports=[helper.make_opsetid("", 99)]), folder / "future.onnx")
    fixed_in = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    fixed = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r0")], "g", [fixed_in], [y])
    onnx.save(model_of(fixed, 17), folder / "fixed.onnx")
    data = (folder / "relu.onnx").read_bytes()
    (folder / "truncated.onnx").write_bytes(data[: len(data) // 2])
    (folder / "empty.onnx").write_bytes(b"")
    (folder / "text.onnx").write_text("not a model\n")
    (folder / "folder.onnx").mkdir()


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    """A working directory full of bad inputs (and one good results file)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PERFBOT_DB_URL", raising=False)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    (tmp_path / "afile").write_text("a file where a folder is wanted\n")
    (tmp_path / "adir").mkdir()
    (tmp_path / "good.json").write_text(json.dumps(_tiny_results()))
    (tmp_path / "empty.cov.xml").write_text("<coverage/>\n")
    (tmp_path / "body.md").write_text("the report\n")

    foreign = sqlite3.connect(tmp_path / "foreign.db")  # some other program's database
    foreign.execute("CREATE TABLE runs (x INTEGER)")
    foreign.commit()
    foreign.close()
    damaged = sqlite3.connect(tmp_path / "damaged.db")  # a version stamp and nothing else
    damaged.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY)")
    damaged.execute("INSERT INTO schema_version VALUES (1)")
    damaged.commit()
    damaged.close()

    manifests = {
        "bad-toml": "rows = [\n",
        "wrong-type": '[suites]\ns = ["a"]\n[[rows]]\nname = "a"\nbuilder = "resnet"\nbatch = "two"\n',
        "duplicate": '[[rows]]\nname = "a"\nbuilder = "resnet"\nbatch = 1\n' * 2,
        "dotdot": '[[rows]]\nname = "a"\npath = "../x.onnx"\nbatch = 1\n',
    }
    manifests["not-onnx"] = f'[[rows]]\nname = "a"\npath = "{tmp_path / "text.onnx"}"\nbatch = 1\n'
    manifests["bad-option"] = '[[rows]]\nname = "a"\nbuilder = "resnet"\nbatch = 1\noptions = { depth = 7 }\n'
    (tmp_path / "m").mkdir()
    for name, text in manifests.items():
        (tmp_path / "m" / f"{name}.toml").write_text(text)

    _write_models(tmp_path)

    big = _tiny_results("big")
    big["rows"][0]["batch"] = 10 ** 30  # valid JSON and schema, too large for any database
    (tmp_path / "bigint.json").write_text(json.dumps(big))
    return tmp_path


def _run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors end this way
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def _assert_one_line_error(code: int, err: str, expect: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    # one line; commands that take several files say one line per bad file and a summary
    assert lines and all(line.startswith("perfbot: error: ") for line in lines), err
    assert len(lines) == 1 or "file(s)" in lines[-1], err
    assert expect in err, err


# `perfbot` command lines that must fail with one error line (argv with {tmp} for the working
# directory, and a fragment the line must contain), kept as data beside this file
BAD_INVOCATIONS = [pytest.param(case["argv"], case["expect"], id=case["id"])
                   for case in tomllib.loads((Path(__file__).parent / "bad_invocations.toml").read_text())["case"]]


@pytest.mark.parametrize("argv, expect", BAD_INVOCATIONS)
def test_bad_invocation_is_one_line_exit_2(hostile, capsys, argv, expect):
    code, _, err = _run_cli([a.replace("{tmp}", str(hostile)) for a in argv], capsys)
    _assert_one_line_error(code, err, expect)


def test_foreign_database_is_left_untouched(hostile, capsys):
    code, _, _ = _run_cli(["results", "list", "--db", f"sqlite:///{hostile}/foreign.db"], capsys)
    assert code == 2
    tables = {name for (name,) in sqlite3.connect(hostile / "foreign.db").execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"runs"}  # not stamped with our schema, no tables added


@pytest.mark.parametrize("argv", [
    ["results", "list"], ["results", "export", "r1"], ["coverage", "load", "--commit", "abcdef1"],
    ["compare", "--base", "good.json", "--head", "good.json"],
    ["report", "--base", "good.json", "--head", "good.json", "--format", "markdown"],
], ids=["results-list", "results-export", "coverage-load", "compare-history", "report-history"])
def test_a_mistyped_db_of_a_reading_command_creates_nothing(hostile, capsys, argv):
    """A reading command given a database that is not there says so in one line, instead of
    creating it and answering from an empty one (an empty table, no history)."""
    code, _, err = _run_cli([*argv, "--db", f"sqlite:///{hostile}/nnone/x.db"], capsys)
    _assert_one_line_error(code, err, "no results database at")
    assert not (hostile / "nnone").exists()


def test_user_sees_no_traceback_from_the_real_entry_point(hostile):
    done = subprocess.run([sys.executable, "-m", "bot", "results", "list", "--db",
                           f"sqlite:///{hostile}/foreign.db"],
                          capture_output=True, text=True, cwd=hostile,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("perfbot: error: ")


def test_unwritable_run_out_fails_before_measuring(hostile, capsys):
    code, _, err = _run_cli(["run", "--target", "ref", "--suite", "smoke-bert", "--out", "adir"], capsys)
    _assert_one_line_error(code, err, "it is a folder")
    assert not (hostile / ".perfbot" / "results.db").exists()  # no run was started


def test_export_and_coverage_load_to_unwritable_paths(hostile, capsys):
    db = f"sqlite:///{hostile}/r.db"
    assert _run_cli(["results", "import", "good.json", "--db", db], capsys)[0] == 0
    code, _, err = _run_cli(["results", "export", "r1", "--db", db, "--out", "adir"], capsys)
    _assert_one_line_error(code, err, "cannot write results file adir: it is a folder")
    assert _run_cli(["coverage", "store", "empty.cov.xml", "--commit", "abcd1234", "--db", db],
                    capsys)[0] == 0
    code, _, err = _run_cli(["coverage", "load", "--commit", "abcd", "--db", db, "--out", "afile/c.xml"],
                            capsys)
    _assert_one_line_error(code, err, "cannot write coverage report afile/c.xml: a file is in the way")
    assert not list(hostile.glob("adir/*")) and not list(hostile.glob(".*.tmp"))


@pytest.mark.parametrize("content, expect", [
    (b'[tool.perfbot]\nthreshold_pct = "5"\n', "pyproject.toml: threshold_pct in [tool.perfbot] must be a number"),
    (b"[tool.perfbot]\nthreshold_pct = -1\n", "pyproject.toml: threshold_pct in [tool.perfbot] must be between 0"),
    (b'[tool.perfbot.thresholds]\nresnet = "x"\n', "pyproject.toml: thresholds.resnet in [tool.perfbot]"),
    (b"tool = 5\n", "pyproject.toml: 'tool' must be a table"),
    (b"\xff\xfe[tool.perfbot]\n", "pyproject.toml: not UTF-8 text"),
    (b"[tool.perfbot\n", "pyproject.toml: not valid TOML"),
], ids=["threshold-string", "threshold-negative", "row-threshold-string", "tool-not-table",
        "not-utf8", "bad-toml"])
def test_bad_pyproject_in_cwd(hostile, capsys, content, expect):
    (hostile / "pyproject.toml").write_bytes(content)
    code, _, err = _run_cli(["compare", "--base", "good.json", "--head", "good.json"], capsys)
    _assert_one_line_error(code, err, expect)


TOKEN = "ghp_testtokenthatmustneverbeprinted"


def _closed_port() -> int:
    with socket.socket() as sock:  # bound and closed again: nothing listens there
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("extra, expect", [
    (["--repo", "bad"], "--repo must be OWNER/NAME, got 'bad'"),
    (["--api-url", "notaurl"], "--api-url must be an http(s) URL"),
    (["--api-url", f"ftp://x:{TOKEN}@127.0.0.1:1/"], "--api-url must be an http(s) URL"),
    (["--api-url", TOKEN], "got '***'"),
    (["--body", "empty.onnx"], "report file empty.onnx is empty"),
    (["--api-url", "http://127.0.0.1:{port}/api"], "GitHub is unavailable (network error: connection refused at 127.0.0.1); "
                                                   "the report is kept at body.md"),
], ids=["bad-repo", "api-url-not-url", "api-url-ftp", "api-url-is-token", "empty-body", "unreachable"])
def test_post_failures_are_one_redacted_line(hostile, capsys, monkeypatch, extra, expect):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    extra = [a.replace("{port}", str(_closed_port())) for a in extra]
    argv = ["post", "--repo", "a/b", "--pr", "1", "--kind", "performance", "--body", "body.md",
            "--retries", "2", "--backoff", "0", "--pace", "0", *extra]
    code, out, err = _run_cli(argv, capsys)
    _assert_one_line_error(code, err, expect)
    assert TOKEN not in out + err
    assert (hostile / "body.md").read_text() == "the report\n"  # the report is kept as it was


def test_report_git_range_errors_name_the_flag(hostile, capsys):
    repo = hostile / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "first"], check=True)
    base = ["report", "--coverage-head", "empty.cov.xml"]
    code, _, err = _run_cli([*base, "--git", "nosuch...HEAD", "--repo", str(repo)], capsys)
    _assert_one_line_error(code, err, f"--git nosuch...HEAD: no commit 'nosuch' in {repo}")
    code, _, err = _run_cli([*base, "--git=--output=x...HEAD", "--repo", str(repo)], capsys)
    _assert_one_line_error(code, err, "no commit '--output=x'")
    assert not (hostile / "x").exists() and not (repo / "x").exists()  # not taken as a git option
    code, _, err = _run_cli([*base, "--git", "HEAD~1...HEAD", "--repo", str(hostile / "adir")], capsys)
    _assert_one_line_error(code, err, f"--repo {hostile / 'adir'} is not a git repository")


def test_bad_url_in_environment_is_named(hostile, capsys, monkeypatch):
    monkeypatch.setenv("PERFBOT_DB_URL", "user:pw@nowhere")
    code, out, err = _run_cli(["results", "list"], capsys)
    _assert_one_line_error(code, err, "$PERFBOT_DB_URL is not a database URL: 'nowhere'")
    assert "pw" not in err.replace("PATH", "")


def test_newer_schema_is_refused(hostile, capsys):
    newer = sqlite3.connect(hostile / "newer.db")
    newer.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY)")
    newer.execute("INSERT INTO schema_version VALUES (99)")
    newer.commit()
    newer.close()
    code, _, err = _run_cli(["results", "list", "--db", f"sqlite:///{hostile}/newer.db"], capsys)
    _assert_one_line_error(code, err, "schema version 99, newer than this perfbot understands")


def test_a_broken_row_is_an_error_row_and_the_json_stays_valid(hostile, capsys):
    code, out, err = _run_cli(["run", "--target", "ref", "--manifest", "m/not-onnx.toml", "--suite", "a",
                               "--repeats", "1", "--warmup", "0", "--quiet", "--format", "json",
                               "--db", f"sqlite:///{hostile}/r.db"], capsys)
    assert code == 0 and "Traceback" not in err
    row = json.loads(out)["rows"][0]
    assert row["status"] == "error"
    assert row["error"].startswith("the model file is not valid ONNX (truncated or corrupt?) during build")


def test_log_folder_in_the_way_fails_before_a_run_is_recorded(hostile, capsys):
    (hostile / ".perfbot").write_text("a file where perfbot keeps its folder\n")
    db = f"sqlite:///{hostile}/r.db"
    code, _, err = _run_cli(["run", "--target", "ref", "--suite", "smoke-bert", "--db", db], capsys)
    _assert_one_line_error(code, err, "cannot create worker log folder .perfbot/logs: a file is in the way")
    assert _run_cli(["results", "list", "--db", db, "--format", "json"], capsys)[1].strip() == "[]"


def test_db_url_of_pyproject_is_where_results_go(hostile, capsys):
    (hostile / "pyproject.toml").write_text('[tool.perfbot]\ndb_url = "sqlite:///configured.db"\n')
    assert _run_cli(["results", "import", "good.json"], capsys)[0] == 0
    assert (hostile / "configured.db").is_file() and not (hostile / ".perfbot").exists()
    (hostile / "pyproject.toml").write_text('[tool.perfbot]\ndb_url = "configured.db"\n')
    code, _, err = _run_cli(["results", "list"], capsys)
    _assert_one_line_error(code, err, f"db_url in {hostile / 'pyproject.toml'} is not a database URL")


@pytest.mark.parametrize("argv", [["verify", "smoke-bert"], ["models", "build", "smoke-bert"],
                                  ["models", "check", "smoke-bert"],
                                  ["run", "--target", "ref", "--suite", "smoke-bert"]],
                         ids=["verify", "models-build", "models-check", "run"])
def test_model_cache_in_the_way_is_one_line(hostile, capsys, monkeypatch, argv):
    monkeypatch.setenv("PERFBOT_CACHE_DIR", str(hostile / "afile"))
    code, _, err = _run_cli([*argv, *(["--db", f"sqlite:///{hostile}/r.db"] if argv[0] == "run" else [])],
                            capsys)
    _assert_one_line_error(code, err, "cannot create model cache ($PERFBOT_CACHE_DIR)")
    if argv[0] == "run":
        assert _run_cli(["results", "list", "--db", f"sqlite:///{hostile}/r.db", "--format", "json"],
                        capsys)[1].strip() == "[]"


def test_token_with_a_line_break_inside_is_named_not_sent(hostile, capsys, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_first\nghp_second")
    code, out, err = _run_cli(["post", "--repo", "a/b", "--pr", "1", "--kind", "performance", "--body",
                               "body.md", "--api-url", f"http://127.0.0.1:{_closed_port()}/api"], capsys)
    _assert_one_line_error(code, err, "GITHUB_TOKEN has whitespace or a line break in it")
    assert "ghp_" not in out + err


def test_reader_closing_the_pipe_early_is_no_traceback(hostile):
    # `perfbot results validate ... | head -1`: the reader goes away while we still write
    proc = subprocess.Popen([sys.executable, "-m", "bot", "results", "validate", *["good.json"] * 3000],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=hostile,
                            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == ""


def test_ascii_only_output_gets_question_marks_not_a_traceback(hostile):
    done = subprocess.run([sys.executable, "-m", "bot", "compare", "--base", "good.json", "--head",
                           "good.json", "--format", "markdown"], capture_output=True, cwd=hostile,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "ascii"},
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    assert b"|tiny|1|" in done.stdout and b"?" in done.stdout  # the emoji verdict, replaced


def test_ambiguous_commit_prefix_of_coverage_is_refused(hostile, capsys):
    db = f"sqlite:///{hostile}/r.db"
    for commit in ("abcd1111", "abcd2222"):
        assert _run_cli(["coverage", "store", "empty.cov.xml", "--commit", commit, "--db", db], capsys)[0] == 0
    code, _, err = _run_cli(["coverage", "load", "--commit", "abcd", "--db", db], capsys)
    _assert_one_line_error(code, err, "commit prefix 'abcd' matches coverage reports of several commits "
                                      "(abcd1111, abcd2222)")
    assert _run_cli(["coverage", "load", "--commit", "abcd2", "--db", db], capsys)[0] == 0


def test_a_message_spanning_lines_is_printed_on_one(capsys, monkeypatch):
    from common.errors import UserError
    import bot.cli.results_cmd as results_cmd

    def fails(args):
        raise UserError("first line\nsecond line\r\n\tthird")

    monkeypatch.setattr(results_cmd, "list_command", fails)
    code, _, err = _run_cli(["results", "list"], capsys)
    assert code == 2 and err == "perfbot: error: first line second line third\n"


def test_report_holding_the_token_is_not_posted(hostile, capsys, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    (hostile / "leaky.md").write_text(f"env dump: GITHUB_TOKEN={TOKEN}\n")
    code, out, err = _run_cli(["post", "--repo", "a/b", "--pr", "1", "--kind", "performance", "--body",
                               "leaky.md", "--api-url", f"http://127.0.0.1:{_closed_port()}/api"], capsys)
    _assert_one_line_error(code, err, "report file leaky.md contains the GITHUB_TOKEN; not posting it")
    assert TOKEN not in out + err


@pytest.mark.filterwarnings("error::RuntimeWarning")  # no numpy overflow chatter on stderr either
def test_compare_json_stays_valid_json_for_absurd_rates(hostile, capsys):
    tiny = _tiny_results("tiny")
    tiny["rows"][0].update(rate=5e-324, samples=[5e-324] * 3)  # schema-valid, a denormal
    (hostile / "tiny.json").write_text(json.dumps(tiny))
    code, out, _ = _run_cli(["compare", "--base", "tiny.json", "--head", "good.json", "--format", "json",
                             "--no-history"], capsys)

    def refuse(constant):
        raise AssertionError(f"{constant} in the JSON output")

    doc = json.loads(out, parse_constant=refuse)
    assert code == 1 and doc["rows"][0]["mark"] == "error"
    assert "too far apart to compare" in doc["rows"][0]["reason"]


def test_read_only_database_refuses_writes_in_one_line(hostile, capsys):
    # Tests may run as root, which writes anywhere: SQLite's read-only mode stands in for a
    # database file in a read-only folder.
    assert _run_cli(["results", "import", "good.json", "--db", f"sqlite:///{hostile}/r.db"], capsys)[0] == 0
    read_only = f"sqlite:///file:{hostile}/r.db?mode=ro&uri=true"
    code, _, err = _run_cli(["coverage", "store", "empty.cov.xml", "--commit", "abcd1234", "--db", read_only],
                            capsys)
    _assert_one_line_error(code, err, "attempt to write a readonly database")
    code, out, _ = _run_cli(["results", "list", "--db", read_only, "--format", "json"], capsys)
    assert code == 0 and [r["id"] for r in json.loads(out)] == ["r1"]  # reading still works
