"""The posting half of perf-comment.yml, run for real: results documents (as perf.yml uploads
them) → artifact check → perfbot compare → perfbot report → perfbot post, with the verdict as a
commit status; and the coverage comment from two Cobertura reports and the PR's diff."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from bot.cli import main
from bot.github.markers import marker
from tests.fakegithub import FakeGitHub
from tests.bot.github.post_cli import run_post

from tests.paths import ROOT

TOKEN = "ghs_pipelinetoken0123456789abcdefghij"
HEAD = "1a" * 20
BASE = "2b" * 20
PR = 5


def results(commit: str, rates: dict[str, float], seed: int, failed: str | None = None) -> dict:
    rng = np.random.default_rng(seed)
    rows = []
    for name, rate in rates.items():
        samples = [float(x) for x in rate * (1 + 0.003 * rng.standard_normal(12))]
        accuracy = {"status": "PASSED", "rtol": 1e-3, "atol": 1e-3}
        if name == failed:
            accuracy = {"status": "FAILED", "rtol": 1e-3, "atol": 1e-3, "max_abs_err": 0.5,
                        "max_rel_err": 0.2, "worst_output": "logits"}
        rows.append({"name": name, "batch": 1, "mode": "fp32", "status": "ok",
                     "rate": float(np.median(samples)), "samples": samples, "accuracy": accuracy})
    return {"schema": "perfbot.results/1",
            "run": {"id": f"run-{commit[:6]}", "commit": commit, "target": "cpu",
                    "started": "2026-01-01T00:00:00Z", "branch": None},
            "rows": rows}


@pytest.fixture
def gh(monkeypatch, tmp_path):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("PERFBOT_DB_URL", f"sqlite:///{tmp_path / 'history.db'}")
    # Like GitHub Actions' token: comments as github-actions[bot], may not read /user.
    with FakeGitHub() as server:
        server.state.add_user(TOKEN, "github-actions[bot]", app=True)
        server.state.add_pull(PR, HEAD, BASE)
        yield server


def post(gh, kind, body, *extra):
    return run_post(gh.api_url, PR, body, kind, *extra)


@pytest.mark.parametrize("head_rates,failed,perf_state,acc_state", [
    ({"resnet50": 1000.0, "bert": 500.0}, None, "success", "success"),
    ({"resnet50": 800.0, "bert": 500.0}, "bert", "failure", "failure"),  # 20 % slower, bert inaccurate
])
def test_artifact_to_comments_and_statuses(gh, tmp_path, head_rates, failed, perf_state, acc_state):
    art = tmp_path / "pr"
    art.mkdir()
    (art / "pr.json").write_text(json.dumps({"pr": PR, "head_sha": HEAD, "base_sha": BASE}))
    (art / "base-results.json").write_text(json.dumps(results(BASE, {"resnet50": 1000.0, "bert": 500.0}, 1)))
    (art / "head-results.json").write_text(json.dumps(results(HEAD, head_rates, 2, failed)))
    check = subprocess.run([sys.executable, str(ROOT / ".github/scripts/check_pr_artifact.py"), str(art), HEAD],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr

    compare, report = tmp_path / "compare.json", tmp_path / "report.md"
    rc = main(["compare", "--base", str(art / "base-results.json"), "--head", str(art / "head-results.json"),
               "--format", "json", "--out", str(compare), "--no-history"])
    assert rc == (0 if perf_state == "success" else 1)
    assert main(["report", "--compare", str(compare), "--pr", str(PR), "--format", "markdown",
                 "--out", str(report)]) == 0
    for _ in range(2):  # a re-run edits, never adds
        for kind in ("performance", "accuracy"):
            assert post(gh, kind, report, "--section", "--status", "--state-from", str(compare),
                        "--head-sha", HEAD) == 0

    comments = gh.state.comments_on(PR)
    assert [c.body.splitlines()[0] for c in comments] == [marker("performance"), marker("accuracy")]
    assert all(c.login == "github-actions[bot]" for c in comments)
    perf, acc = comments
    assert "resnet50" in perf.body and marker("accuracy") not in perf.body
    assert "bert" in acc.body and ("FAILED" in acc.body) == bool(failed)
    assert [(s["context"], s["state"]) for s in gh.state.statuses[:2]] == [
        ("perfbot/performance", perf_state), ("perfbot/accuracy", acc_state)]
    assert {s["sha"] for s in gh.state.statuses} == {HEAD}


COBERTURA = """<?xml version="1.0" ?>
<coverage version="7.4" timestamp="1" lines-valid="{valid}" lines-covered="{covered}" line-rate="{rate}" branches-covered="0" branches-valid="0" branch-rate="0" complexity="0">
  <sources><source>.</source></sources>
  <packages><package name="pkg" line-rate="{rate}" branch-rate="0" complexity="0"><classes>
    <class name="a.py" filename="pkg/a.py" complexity="0" line-rate="{rate}" branch-rate="0">
      <methods/><lines>{lines}</lines>
    </class>
  </classes></package></packages>
</coverage>
"""


def cobertura(hits: list[int]) -> str:
    lines = "".join(f'<line number="{n}" hits="{h}"/>' for n, h in enumerate(hits, 1))
    covered = sum(1 for h in hits if h)
    return COBERTURA.format(valid=len(hits), covered=covered, rate=covered / len(hits), lines=lines)


DIFF = """diff --git a/pkg/a.py b/pkg/a.py
--- a/pkg/a.py
+++ b/pkg/a.py
@@ -1,2 +1,4 @@
 x = 1
 y = 2
+z = 3
+w = 4
"""


def test_coverage_comment_from_reports_and_diff(gh, tmp_path):
    (tmp_path / "base.xml").write_text(cobertura([1, 1]))
    (tmp_path / "head.xml").write_text(cobertura([1, 1, 1, 0]))
    (tmp_path / "pr.diff").write_text(DIFF)
    out = tmp_path / "coverage.md"
    assert main(["report", "--coverage-base", str(tmp_path / "base.xml"), "--coverage-head", str(tmp_path / "head.xml"),
                 "--diff-file", str(tmp_path / "pr.diff"), "--pr", str(PR), "--format", "markdown",
                 "--out", str(out)]) == 0
    assert post(gh, "coverage", out, "--head-sha", "3c" * 20) == 0
    (comment,) = gh.state.comments_on(PR)
    lines = comment.body.splitlines()
    assert lines[0] == marker("coverage")
    assert "3c3c3c3" in lines[1] and HEAD[:7] in lines[1]  # stale: the PR moved on since the run
    assert f"#{PR}" in comment.body and "50.00%" in comment.body  # 1 of 2 added lines covered
