"""``perfbot bisect``: the search itself against scripted A/B outcomes (fast, every position of a
planted slow commit), and once for real on the cpu target in a temporary repository of 6
commits, one of which makes Relu's cpu kernel sleep."""
import json

import pytest

from bot.cli import main
from bot.runner import bisect
from bot.runner.ab import AbOutcome
from tests.fixtures.runner.gitrepo import commit, copy_files, git, new_repo, tree_files
from tests.fixtures.runner.manifest import write_manifest

ROW = "tiny"


@pytest.fixture(scope="module")
def sixteen(tmp_path_factory):
    repo = new_repo(tmp_path_factory.mktemp("sixteen"))
    return repo, [commit(repo, f"change {i}") for i in range(16)]


@pytest.fixture
def history(sixteen, tmp_path, monkeypatch):
    """A repository of 16 empty commits (good is the first) and the row's manifest; cwd is it."""
    repo, shas = sixteen
    monkeypatch.chdir(repo)
    return shas, write_manifest(tmp_path / "m", [(ROW, "relu", 2, "fp32")])


def _row(mark: str, diff: float | None, p: float | None, reason: str | None = None) -> dict:
    return {"name": ROW, "batch": 2, "mode": "fp32", "mark": mark, "diff_pct": diff,
            "p_value": p, "threshold_pct": 3.0, "rate_old": 100.0,
            "rate_new": None if diff is None else 100.0 + diff, "reason": reason}


def scripted_ab(monkeypatch, judge):
    """Replace the A/B with ``judge(head_sha, rounds) -> compare row``; returns the calls made."""
    calls = []

    def fake(store, request, announce=lambda text: None):
        calls.append((request.base, request.head, request.settings.rounds, request.suite))
        row = judge(request.head, request.settings.rounds)
        return AbOutcome(f"b{len(calls)}", f"h{len(calls)}", {}, {}, {"rows": [row]})
    monkeypatch.setattr(bisect, "run_ab", fake)
    return calls


def _run(manifest, good, bad, *extra):
    return main(["bisect", "--good", good, "--bad", bad, "--row", ROW, "--manifest", str(manifest),
                 "--target", "cpu", "--quiet", "--format", "json", "--db", "sqlite://", *extra])


@pytest.mark.parametrize("planted", range(1, 16))
def test_a_planted_slow_commit_is_found_in_at_most_five_steps(history, monkeypatch, capsys, planted):
    shas, manifest = history
    slow = set(shas[planted:])
    calls = scripted_ab(monkeypatch, lambda head, rounds: _row("regression", -40.0, 1e-4)
                        if head in slow else _row("ok", 0.3, 0.6))
    assert _run(manifest, shas[0], shas[-1]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "found" and doc["candidates"] == 15
    assert doc["first_bad"]["commit"] == shas[planted]
    assert doc["first_bad"]["diff_pct"] == -40.0 and doc["first_bad"]["p_value"] == 1e-4
    assert len(doc["steps"]) == len(calls) <= 5
    assert doc["steps"][0]["commit"] == shas[-1]  # the bad end is confirmed first
    # every step is an A/B against the good commit, of the one row, with ab's rounds
    assert {(base, rounds, suite) for base, _, rounds, suite in calls} == {(shas[0], 6, ROW)}


def test_every_step_compares_under_the_threshold_given(history, monkeypatch, capsys):
    """--threshold reaches each step's A/B: a slowdown below the default can be bisected."""
    shas, manifest = history
    seen = []

    def fake(store, request, announce=lambda text: None):
        seen.append(request.threshold_pct)
        return AbOutcome("b", "h", {}, {}, {"rows": [_row("ok", -1.0, 0.6)]})
    monkeypatch.setattr(bisect, "run_ab", fake)
    assert _run(manifest, shas[0], shas[-1], "--threshold", "1.5") == 0
    assert json.loads(capsys.readouterr().out)["status"] == "not-reproduced" and seen == [1.5]
    assert _run(manifest, shas[0], shas[-1], "--threshold", "0") == 2      # not a percentage


def test_an_inconclusive_step_is_measured_again_with_more_rounds(history, monkeypatch, capsys):
    shas, manifest = history
    slow = set(shas[9:])

    def judge(head, rounds):
        if head == shas[8] and rounds == 6:  # a 5 % drop, not significant yet
            return _row("ok", -5.0, 0.2, "not significant")
        return _row("regression", -6.0, 1e-3) if head in slow else _row("ok", -0.5, 0.5)
    calls = scripted_ab(monkeypatch, judge)
    assert _run(manifest, shas[0], shas[-1]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["first_bad"]["commit"] == shas[9]
    again = [s for s in doc["steps"] if s["remeasured"]]
    assert [(s["commit"], s["rounds"], s["verdict"]) for s in again] == [(shas[8], 12, "good")]
    assert [c[2] for c in calls if c[1] == shas[8]] == [6, 12]


def test_a_commit_whose_row_fails_is_skipped(history, monkeypatch, capsys):
    shas, manifest = history
    broken = {shas[8]}

    def judge(head, rounds):
        if head in broken:
            return _row("error", None, None, "head: compile failed")
        return _row("regression", -30.0, 1e-4) if head in set(shas[8:]) else _row("ok", 0.0, 0.9)
    scripted_ab(monkeypatch, judge)
    assert _run(manifest, shas[0], shas[-1]) == 0
    doc = json.loads(capsys.readouterr().out)
    # 8 fails to run and 9 is bad: either could be the first bad one
    assert doc["status"] == "ambiguous" and doc["first_bad"]["commit"] == shas[9]
    assert doc["suspects"] == [shas[8], shas[9]]
    assert "skipped" in [s["verdict"] for s in doc["steps"]]


def test_no_search_when_the_bad_commit_is_not_slower(history, monkeypatch, capsys):
    shas, manifest = history
    calls = scripted_ab(monkeypatch, lambda head, rounds: _row("ok", -1.0, 0.3))
    assert _run(manifest, shas[0], shas[-1], "--strict") == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "not-reproduced" and doc["first_bad"] is None and len(calls) == 1


def test_a_good_commit_that_cannot_run_is_one_line(history, monkeypatch, capsys):
    shas, manifest = history
    scripted_ab(monkeypatch, lambda head, rounds: _row("error", None, None, "base: no worker"))
    assert _run(manifest, shas[0], shas[-1]) == 2
    assert capsys.readouterr().err.strip() == (
        f"perfbot: error: the good commit {shas[0][:12]} cannot be measured: base: no worker")


@pytest.mark.parametrize("args, message", [
    (["--good", "HEAD", "--bad", "HEAD~3"], "is not an ancestor of the bad commit"),
    (["--good", "HEAD", "--bad", "HEAD"], "there are no commits between"),
    (["--good", "nope", "--bad", "HEAD"], "unknown revision 'nope'"),
])
def test_revisions_that_bound_nothing_are_refused(history, monkeypatch, capsys, args, message):
    _, manifest = history
    calls = scripted_ab(monkeypatch, lambda head, rounds: _row("ok", 0.0, 1.0))
    assert main(["bisect", *args, "--row", ROW, "--manifest", str(manifest), "--quiet",
                 "--db", "sqlite://"]) == 2
    assert message in capsys.readouterr().err and not calls


def test_an_unknown_row_is_refused_before_anything_runs(history, monkeypatch, capsys):
    shas, manifest = history
    calls = scripted_ab(monkeypatch, lambda head, rounds: _row("ok", 0.0, 1.0))
    assert main(["bisect", "--good", shas[0], "--row", "nope", "--manifest", str(manifest),
                 "--quiet", "--db", "sqlite://"]) == 2
    assert "'nope' is neither a suite nor a row" in capsys.readouterr().err and not calls


def test_markdown_and_text_escape_commit_subjects(tmp_path, monkeypatch, capsys):
    repo = new_repo(tmp_path / "repo")
    good = commit(repo, "start")
    bad = commit(repo, "| @someone <b>x</b> #12 \x1b[31m")
    monkeypatch.chdir(repo)
    manifest = write_manifest(tmp_path / "m", [(ROW, "relu", 2, "fp32")])
    scripted_ab(monkeypatch, lambda head, rounds: _row("regression", -9.0, 1e-5))
    for fmt in ("markdown", "text"):
        assert main(["bisect", "--good", good, "--bad", bad, "--row", ROW, "--manifest", str(manifest),
                     "--quiet", "--db", "sqlite://", "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out
        if fmt == "markdown":
            assert "<b>" not in out and "@someone" not in out and "\\|" in out
        assert (f"first bad commit: `{bad[:12]}`" if fmt == "markdown" else
                f"first bad commit: {bad[:12]}") in out and "-9.00%" in out


SLOW_RELU = '''

import time as _time

_pick_kernel = pick_kernel


def pick_kernel(ins):  # test commit: every Relu sleeps 10 ms
    kernel = _pick_kernel(ins)
    if ins.op != "Relu":
        return kernel

    def slow(*args, **kwargs):
        _time.sleep(0.01)
        return kernel(*args, **kwargs)
    return slow
'''
COMMITS, PLANTED = 6, 4  # the fifth of six commits: the scripted tests above cover every position


@pytest.mark.slow
def test_bisect_finds_a_planted_slow_kernel_on_the_cpu_target(tmp_path, monkeypatch, capsys):
    repo = new_repo(tmp_path / "repo")
    copy_files(repo, tree_files())
    # A 10 ms sleep makes the row ~99 % slower: a 50 % threshold keeps noise on a busy 2-core
    # machine from passing for a slowdown in the few rounds this test can afford, and the steps
    # are judged whatever that machine's load (busy_machine has its own tests).
    (repo / "pyproject.toml").write_text("[tool.perfbot]\nthreshold_pct = 50.0\nbusy_limit_pct = 100\n")
    shas = [commit(repo, "the compiler and the runner")]
    for i in range(1, COMMITS):
        if i == PLANTED:
            with open(repo / "compiler/targets/cpu/kernels/__init__.py", "a") as fh:
                fh.write(SLOW_RELU)
        else:
            (repo / "NOTES").write_text(f"note {i}\n")
        shas.append(commit(repo, f"change {i}"))
    monkeypatch.chdir(repo)
    monkeypatch.setenv("PERFBOT_CACHE_DIR", str(tmp_path / "cache"))
    manifest = write_manifest(tmp_path / "m", [(ROW, "relu", 2, "fp32")])
    code = main(["bisect", "--good", shas[0], "--bad", "main", "--row", ROW, "--manifest",
                 str(manifest), "--target", "cpu", "--db", f"sqlite:///{tmp_path / 'r.db'}",
                 "--format", "json", "--quiet", "--rounds", "5", "--max-rounds", "5", "--repeats", "1",
                 "--warmup", "1", "--min-sample-s", "0.001"])  # five processes a side: the fewest judged
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "found" and doc["first_bad"]["commit"] == shas[PLANTED]
    assert len(doc["steps"]) <= 4     # the bad end confirmed, then halving five candidates
    assert doc["first_bad"]["diff_pct"] < -50 and doc["first_bad"]["p_value"] < 0.01
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
