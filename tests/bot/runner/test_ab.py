"""``perfbot ab`` between commits of a temporary git repository holding a copy of this tree.

Four commits: one that predates the runner (no bot/runner), the current tree, the current tree
with a compiler made 5 ms slower per inference, and the current tree with a compiler that has no
``compiler.tuning`` (older code than the runner that measures it). Each side's workers import that commit's own
compiler from a temporary worktree, and this perfbot's runner.
"""
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from bot.cli import main
from bot.results_doc import validate_compare, validate_results
from bot.runner import sides
from models.manifest import load_manifest
from tests.fixtures.runner.helpers import CODE_ROOT
from tests.fixtures.runner.manifest import write_manifest

SLOWDOWN = '''

import time as _time

_fast_run = Program.run


def _slow_run(self, feeds):  # test commit: every inference 5 ms slower
    _time.sleep(0.005)
    return _fast_run(self, feeds)


Program.run = _slow_run
'''


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                          cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """(path, {"old": sha, "base": sha, "slow": sha})"""
    repo = tmp_path_factory.mktemp("abrepo")
    # the working tree as this process imports it: tracked and new files, minus deleted ones
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "compiler",
                             "bot/__init__.py", "bot/runner"],
                            cwd=CODE_ROOT, check=True, capture_output=True, text=True).stdout.split()
    files = [name for name in listed if (CODE_ROOT / name).is_file()]
    _git(repo, "init", "-q", "-b", "main")
    # These tests check what ab measures and decides, not the machine: other work on a busy
    # development machine must not leave their rows unjudged (busy_machine has its own tests).
    (repo / "pyproject.toml").write_text("[tool.perfbot]\nbusy_limit_pct = 100\n")
    for name in files:
        if not name.startswith("bot/runner/"):
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(CODE_ROOT / name, repo / name)
    shas = {"old": _commit(repo, "compiler only")}
    for name in files:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(CODE_ROOT / name, repo / name)
    shas["base"] = _commit(repo, "with the runner")
    with open(repo / "compiler" / "__init__.py", "a") as fh:
        fh.write(SLOWDOWN)
    shas["slow"] = _commit(repo, "slower compiler")
    # on a branch of its own: main stays at the slower compiler
    _git(repo, "checkout", "-q", "-b", "untuned", shas["base"])
    (repo / "compiler" / "tuning.py").unlink()
    shas["untuned"] = _commit(repo, "a compiler older than its tuning counter")
    _git(repo, "checkout", "-q", "main")
    return repo, shas


def _ab(repo: Path, tmp_path: Path, capsys, *args: str) -> tuple[int, dict]:
    manifest = write_manifest(tmp_path / "m", [("tiny", "elementwise", 2, "fp32")])
    code = main(["ab", "--suite", "all", "--manifest", str(manifest), "--target", "cpu",
                 "--db", f"sqlite:///{tmp_path / 'r.db'}", "--out-dir", str(tmp_path / "out"),
                 "--format", "json", "--quiet", "--repeats", "3", "--warmup", "1",
                 "--min-sample-s", "0.001", *args])
    return code, json.loads(capsys.readouterr().out)


def _measure_tiny(tmp_path: Path, monkeypatch, on_phase, explain=None, **settings) -> list[dict]:
    """The results rows of an elementwise row measured by two sides of this tree on the cpu
    target, two samples a round, with ``settings`` (rounds, worker_per_round, profile)."""
    monkeypatch.setenv("PERFBOT_CACHE_DIR", str(tmp_path / "cache"))
    manifest = write_manifest(tmp_path / "m", [("tiny", "elementwise", 2, "fp32")])
    row = load_manifest(manifest).get("tiny")
    rows, _ = sides.measure_row(
        row, [sides.Side("base", CODE_ROOT), sides.Side("head", CODE_ROOT)],
        sides.Settings(target="cpu", repeats=2, warmup=1, manifest=str(manifest), workdir=tmp_path,
                       logdir=tmp_path, **settings),
        on_phase=on_phase, prepare_root=CODE_ROOT, explain=explain)
    return rows


def test_ab_measures_each_revision_with_its_own_code(repo, tmp_path, capsys, monkeypatch):
    path, shas = repo
    monkeypatch.chdir(path)
    code, comparison = _ab(path, tmp_path, capsys, "--base", shas["base"], "--head", shas["slow"],
                           "--rounds", "5", "--max-rounds", "6")
    assert code == 0
    validate_compare(comparison)
    assert comparison["base"]["commit"] == shas["base"] and comparison["head"]["commit"] == shas["slow"]
    [row] = comparison["rows"]
    assert row["mark"] == "regression" and row["remeasured"] is True
    assert comparison["verdict"] == "not-recommended"
    # six rounds a side cannot settle a flag (p >= 0.0022 > alpha / 10): the row says so
    assert row["p_value"] > 0.001 and "flagged when the rounds ran out (6, --max-rounds)" in row["reason"]

    base = validate_results(json.loads((tmp_path / "out" / "base-results.json").read_text()))
    head = validate_results(json.loads((tmp_path / "out" / "head-results.json").read_text()))
    assert json.loads((tmp_path / "out" / "compare.json").read_text()) == comparison
    # 5 planned rounds, then one more (not yet settled at a tenth of alpha), 3 samples each
    assert len(base["rows"][0]["samples"]) == 18 and len(head["rows"][0]["samples"]) == 18
    assert base["rows"][0]["blocks"] == [b for b in range(6) for _ in range(3)]
    assert (row["blocks_old"], row["blocks_new"]) == (6, 6)
    assert base["run"]["measurement"]["mode"] == "ab" and base["run"]["measurement"]["rate"] == "host"
    # the head's own (slowed) compiler ran: no inference of batch 2 beat 5 ms
    assert max(head["rows"][0]["samples"]) <= 2 / 0.005
    assert base["rows"][0]["accuracy"]["status"] == head["rows"][0]["accuracy"]["status"] == "PASSED"
    assert base["run"]["commit"] == shas["base"] and head["run"]["commit"] == shas["slow"]
    # the temporary worktrees are gone
    assert _git(path, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_ab_measures_a_base_that_predates_the_runner_with_this_runner(repo, tmp_path, capsys,
                                                                       monkeypatch):
    """The measuring code is this perfbot's on both sides: a revision needs only a compiler."""
    path, shas = repo
    monkeypatch.chdir(path)
    code, comparison = _ab(path, tmp_path, capsys, "--base", shas["old"], "--head", "main",
                           "--rounds", "1", "--max-rounds", "1")
    assert code == 0
    base = json.loads((tmp_path / "out" / "base-results.json").read_text())
    head = json.loads((tmp_path / "out" / "head-results.json").read_text())
    assert base["rows"][0]["status"] == "ok" and len(base["rows"][0]["samples"]) == 3
    assert head["rows"][0]["status"] == "ok" and len(head["rows"][0]["samples"]) == 3
    assert head["run"]["branch"] == "main" and head["run"]["commit"] == shas["slow"]
    # one process a side cannot be judged, however far apart the two are
    assert comparison["rows"][0]["mark"] == "ok"
    assert "not enough independent samples" in comparison["rows"][0]["reason"]


def test_ab_refuses_an_unknown_revision(repo, tmp_path, capsys, monkeypatch):
    path, _ = repo
    monkeypatch.chdir(path)
    assert main(["ab", "--base", "no-such-branch", "--target", "cpu", "--quiet",
                 "--db", f"sqlite:///{tmp_path / 'r.db'}", "--suite", "x",
                 "--manifest", str(write_manifest(tmp_path / "m", [("x", "relu", 1, "fp32")]))]) == 2
    assert "unknown revision 'no-such-branch'" in capsys.readouterr().err


@pytest.mark.parametrize("fresh", [True, False])
def test_rounds_run_in_fresh_worker_processes_unless_told_not_to(tmp_path, monkeypatch, fresh):
    """One worker process per side per round (each compiling the row again), so the spread between
    processes falls on both sides; the compile time reported is the first process's. The next
    round's process starts while the other side measures, and rounds alternate ABBA."""
    measured: list[str] = []
    pids: dict[str, set] = {"base": set(), "head": set()}
    real_round = sides._round

    def watching(row, sides_, results, settings, index, prepared, on_phase, *rest):  # noqa: PLR0913
        real_round(row, sides_, results, settings, index, prepared, on_phase, *rest)
        for side, result in zip(sides_, results):
            pids[side.label].add(result.session.hello["pid"])

    monkeypatch.setattr(sides, "_round", watching)
    rows = _measure_tiny(tmp_path, monkeypatch,
                         lambda label, phase: measured.append(label) if phase == "measure" else None,
                         rounds=3, worker_per_round=fresh)
    # rounds alternate ABBA: base, head; head, base; base, head
    assert measured == ["base", "head", "head", "base", "base", "head"]
    assert [len(p) for p in pids.values()] == ([3, 3] if fresh else [1, 1])
    for result in rows:
        assert result["status"] == "ok" and len(result["samples"]) == 6
        assert result["blocks"] == ([0, 0, 1, 1, 2, 2] if fresh else [0] * 6)
        assert result["accuracy"]["status"] == "PASSED" and result["compile_s"] > 0
    # every sample of the row, on both sides, holds as many runs as the first one found
    assert len({n for r in rows for n in r["sampling"]["runs_per_sample"]}) == 1
    # where the row's time went, by step; the shared build is the same on both sides
    steps = [r["sampling"]["steps_s"] for r in rows]
    for taken in steps:
        assert {"build", "start", "compile", "measure", "accuracy"} <= set(taken)
        assert all(seconds >= 0 for seconds in taken.values())
    assert steps[0]["build"] == steps[1]["build"]


def test_a_worker_whose_compile_tuned_is_replaced_before_it_measures(tmp_path, monkeypatch):
    """A compile that timed choices and kept them (``compiler.tuning``) leaves its process slower
    than the next: that side's first worker is replaced, once, by a fresh one compiling from the
    cache, and only the fresh one measures. Here the base's first compile says it tuned."""
    compiled: list = []   # (side, worker pid)
    measured: set = set()
    real_compile, real_round = sides._compile, sides._round

    def compile_saying_base_tuned(row, result, settings, files):
        real_compile(row, result, settings, files)
        compiled.append(result.session.hello["pid"])
        return len(compiled) == 1               # the first compile (the base's) tuned

    def watching(row, sides_, results, *rest):
        real_round(row, sides_, results, *rest)
        measured.update(r.session.hello["pid"] for r in results)

    monkeypatch.setattr(sides, "_compile", compile_saying_base_tuned)
    monkeypatch.setattr(sides, "_round", watching)
    base, head = _measure_tiny(tmp_path, monkeypatch, lambda label, phase: None, rounds=2,
                               worker_per_round=False)
    tuned_pid = compiled[0]
    assert len(compiled) == 3 and tuned_pid not in measured and len(measured) == 2
    assert base["status"] == head["status"] == "ok"
    assert base["sampling"]["tuned_processes"] == 1 and "tuned_processes" not in head["sampling"]
    assert len(base["compile_samples"]) == 2 and len(head["compile_samples"]) == 1
    assert len(base["samples"]) == len(head["samples"]) == 4


def test_a_base_whose_compiler_predates_the_tuning_counter_is_measured(repo, tmp_path, capsys,
                                                                       monkeypatch):
    """This runner measures a base whose compiler cannot say whether its compile tuned: the row
    is compared, and the base's first worker is replaced as if it had tuned."""
    path, shas = repo
    monkeypatch.chdir(path)
    monkeypatch.setenv("PERFBOT_CACHE_DIR", str(tmp_path / "cache"))
    code, comparison = _ab(path, tmp_path, capsys, "--base", shas["untuned"], "--head", shas["base"],
                           "--rounds", "1", "--max-rounds", "1")
    [row] = comparison["rows"]
    assert row["mark"] != "error", row["reason"]
    assert row["rate_old"] > 0 and row["rate_new"] > 0
    [base] = json.loads((tmp_path / "out" / "base-results.json").read_text())["rows"]
    [head] = json.loads((tmp_path / "out" / "head-results.json").read_text())["rows"]
    assert base["sampling"]["tuned_processes"] == 1 and "tuned_processes" not in head["sampling"]


def test_rows_that_would_end_past_the_time_limit_are_reported_not_measured(repo, tmp_path, capsys,
                                                                          monkeypatch):
    """With --time-limit, a row starts only if it should end within the limit; the others are
    rows of both runs that say why they were not measured, and the verdict does not pass them.
    The budget's clock is the test's: 100 s pass at each look, so the first row starts (100 s
    of 150) and the second does not (200 s)."""
    from bot.runner import ab as ab_module
    from bot.runner.time_budget import TimeBudget

    ticks = iter(range(0, 10_000, 100))
    monkeypatch.setattr(ab_module, "TimeBudget", lambda limit: TimeBudget(limit, lambda: float(next(ticks))))
    path, shas = repo
    monkeypatch.chdir(path)
    monkeypatch.setenv("PERFBOT_CACHE_DIR", str(tmp_path / "cache"))
    manifest = write_manifest(tmp_path / "m2", [("first", "elementwise", 2, "fp32"),
                                                ("second", "elementwise", 2, "fp32")])
    code = main(["ab", "--suite", "all", "--manifest", str(manifest), "--target", "cpu", "--base", shas["base"],
                 "--head", shas["base"], "--db", f"sqlite:///{tmp_path / 'r.db'}", "--format", "json",
                 "--quiet", "--repeats", "2", "--warmup", "1", "--min-sample-s", "0.001", "--rounds", "1",
                 "--max-rounds", "1", "--time-limit", "150", "--threshold", "0.5",
                 "--out-dir", str(tmp_path / "out")])
    comparison = json.loads(capsys.readouterr().out)
    assert code == 0
    first, second = comparison["rows"]
    assert first["name"] == "first" and first["mark"] != "error"
    assert second["name"] == "second" and second["mark"] == "error"
    assert first["threshold_pct"] == 0.5        # --threshold, the comparison's default
    assert "not measured: the time limit (150 s, --time-limit)" in second["reason"]
    assert comparison["verdict"] == "not-recommended"
    head = validate_results(json.loads((tmp_path / "out" / "head-results.json").read_text()))
    assert [r["status"] for r in head["rows"]] == ["ok", "error"]


@pytest.mark.parametrize("flagged", [False, True])
def test_a_row_is_profiled_only_when_its_explain_callback_asks(tmp_path, monkeypatch, flagged):
    """An A/B profiles the instructions of a row that came out 🔴/🔆 alone (the details block is
    shown for nothing else); the callback sees the sides' measured results."""
    asked: list = []
    rows = _measure_tiny(tmp_path, monkeypatch, lambda label, phase: None,
                         explain=lambda found: asked.append([len(r.samples) for r in found]) or flagged,
                         rounds=1, profile=True)
    assert asked == [[2, 2]]
    for result in rows:
        assert result["status"] == "ok"
        assert bool(result.get("profile")) is flagged
        assert ("profile" in result["sampling"]["steps_s"]) is flagged


def test_rounds_compile_both_sides_fresh_workers_side_by_side_before_measuring(tmp_path, monkeypatch):
    """Where sides compile side by side (the gpu target; here the cpu target told to, as CI has no
    GPU), a round after the first compiles every side's new worker at once (a barrier both
    compiles must reach together), and no side measures before both are compiled; the first
    round compiles one side after the other (its compiles time and cache choices)."""
    import threading

    monkeypatch.setattr(sides, "compiles_side_by_side", lambda settings: True)
    events: list[str] = []
    together = threading.Barrier(2, timeout=30)
    real_compile = sides._compile

    def compiling(row, result, *rest):
        events.append("compile")
        if result.compile_samples:    # a round after the first: the other side is compiling too
            together.wait()
        return real_compile(row, result, *rest)

    monkeypatch.setattr(sides, "_compile", compiling)
    rows = _measure_tiny(tmp_path, monkeypatch,
                         lambda label, phase: events.append(label) if phase == "measure" else None,
                         rounds=3, worker_per_round=True)
    assert [r["status"] for r in rows] == ["ok", "ok"], [r["error"] for r in rows]
    assert [len(r["compile_samples"]) for r in rows] == [3, 3]
    # every round compiles both sides before either measures; the measures alternate ABBA
    assert events == ["compile", "compile", "base", "head", "compile", "compile", "head", "base",
                      "compile", "compile", "base", "head"]


def test_next_round_workers_start_during_the_compiles_and_are_ready_before_any_side_measures(
        tmp_path, monkeypatch):
    """Spare workers (the gpu target's; here the cpu target told to start them) are launched
    while a round's workers compile and have said hello before either side measures: no
    start-up runs beside a measurement. The rounds after the first take them."""
    monkeypatch.setattr(sides, "compiles_side_by_side", lambda settings: True)
    monkeypatch.setattr(sides, "starts_spares", lambda settings: settings.worker_per_round)
    events: list[str] = []
    real_init, real_ready = sides.SpareWorker.__init__, sides.SpareWorker.ready

    def launched(self, session, measuring_cpus=None):
        events.append("launch")
        real_init(self, session, measuring_cpus)

    def ready(self, timeout):
        if not self.session.hello and self.error is None:
            events.append("ready")
        real_ready(self, timeout)

    monkeypatch.setattr(sides.SpareWorker, "__init__", launched)
    monkeypatch.setattr(sides.SpareWorker, "ready", ready)
    rows = _measure_tiny(tmp_path, monkeypatch,
                         lambda label, phase: events.append(label) if phase == "measure" else None,
                         rounds=4, worker_per_round=True)
    assert [r["status"] for r in rows] == ["ok", "ok"], [r["error"] for r in rows]
    rounds = "".join("M" if e in ("base", "head") else e[0] for e in events)
    # round 1: nothing to take, two spares launched and ready before its measures; rounds 2 and 3
    # take those (no new process to wait for at their start) and launch the next ones the same way
    assert rounds == "MM" + "llrrMM" * 3, events
