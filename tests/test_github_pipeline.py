"""The posting half of perf-comment.yml, run for real: results documents (as perf.yml uploads
them) → artifact check → perfbot compare → perfbot post with the verdict as a commit status."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bot.cli import main
from fakegithub import FakeGitHub

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "ghs_pipelinetoken0123456789abcdefghij"
HEAD = "1a" * 20
BASE = "2b" * 20
PR = 5


def results(commit: str, rates: dict[str, float], seed: int) -> dict:
    rng = np.random.default_rng(seed)
    rows = []
    for name, rate in rates.items():
        samples = [float(x) for x in rate * (1 + 0.003 * rng.standard_normal(12))]
        rows.append({"name": name, "batch": 1, "mode": "fp32", "status": "ok",
                     "rate": float(np.median(samples)), "samples": samples,
                     "accuracy": {"status": "PASSED", "rtol": 1e-3, "atol": 1e-3}})
    return {"schema": "perfbot.results/1",
            "run": {"id": f"run-{commit[:6]}", "commit": commit, "target": "cpu",
                    "started": "2026-01-01T00:00:00Z", "branch": None},
            "rows": rows}


@pytest.fixture
def gh(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    # Like GitHub Actions' token: comments as github-actions[bot], may not read /user.
    with FakeGitHub() as server:
        server.state.add_user(TOKEN, "github-actions[bot]", app=True)
        server.state.add_pull(PR, HEAD, BASE)
        yield server


@pytest.mark.parametrize("head_rates,state", [
    ({"resnet50": 1000.0, "bert": 500.0}, "success"),
    ({"resnet50": 800.0, "bert": 500.0}, "failure"),  # a 20 % slowdown
])
def test_artifact_to_status(gh, tmp_path, monkeypatch, head_rates, state):
    monkeypatch.setenv("PERFBOT_DB_URL", f"sqlite:///{tmp_path / 'history.db'}")
    art = tmp_path / "pr"
    art.mkdir()
    (art / "pr.json").write_text(json.dumps({"pr": PR, "head_sha": HEAD, "base_sha": BASE}))
    (art / "base-results.json").write_text(json.dumps(results(BASE, {"resnet50": 1000.0, "bert": 500.0}, 1)))
    (art / "head-results.json").write_text(json.dumps(results(HEAD, head_rates, 2)))

    check = subprocess.run([sys.executable, str(ROOT / ".github/scripts/check_pr_artifact.py"), str(art), HEAD],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr
    compare = tmp_path / "compare.json"
    rc = main(["compare", "--base", str(art / "base-results.json"), "--head", str(art / "head-results.json"),
               "--format", "json", "--out", str(compare), "--no-history"])
    assert rc == (0 if state == "success" else 1)
    body = tmp_path / "performance.md"
    body.write_text("<!-- perfbot:performance -->\n| Test | Batch |\n", encoding="utf-8")
    for _ in range(2):
        assert main(["post", "--repo", "octo/widgets", "--pr", str(PR), "--kind", "performance",
                     "--body", str(body), "--status", "--state-from", str(compare), "--head-sha", HEAD,
                     "--api-url", gh.api_url, "--pace", "0", "--backoff", "0.01"]) == 0
    (comment,) = gh.state.comments_on(PR)
    assert comment.login == "github-actions[bot]"
    assert [s["state"] for s in gh.state.statuses] == [state, state]
    assert {s["sha"] for s in gh.state.statuses} == {HEAD}
    if state == "failure":
        assert "1 slower" in gh.state.statuses[0]["description"]
