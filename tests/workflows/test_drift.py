"""The scheduled drift workflow: reads the store from its secret, may write issues and nothing
else, and runs `perfbot drift` on the default branch (actionlint: tests/workflows/test_lint.py)."""
from tests.workflows.test_lint import ROOT, load

DRIFT = ROOT / ".github" / "workflows" / "drift.yml"


def test_drift_runs_daily_on_the_default_branch_and_may_only_write_issues():
    wf = load(DRIFT)
    assert set(wf["on"]) == {"schedule", "workflow_dispatch"} and wf["on"]["schedule"][0]["cron"]
    assert wf["permissions"] == {"contents": "read"}
    [job] = wf["jobs"].values()
    assert job["permissions"] == {"contents": "read", "issues": "write"}
    [step] = [s for s in job["steps"] if "perfbot drift" in s.get("run", "")]
    assert step["env"]["PERFBOT_DB_URL"] == "${{ secrets.PERFBOT_DB_URL }}"
    assert step["env"]["BRANCH"] == "${{ github.event.repository.default_branch }}"
    assert '--branch "$BRANCH"' in step["run"] and '--repo "$REPO"' in step["run"]
    assert "${{" not in step["run"]  # values reach the script through env only
    checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["persist-credentials"] is False
