"""``perfbot report`` end to end: from a compare file, from two results files with a real SQLite
store for the trend history, and with coverage from a real git repository."""
from __future__ import annotations

import json
import re
import subprocess


from bot.cli import main
from bot.coverage import compare_coverage, diff_from_git, read_report
from bot.store import open_store
from tests.bot.coverage.test_diffcover import git, project  # noqa: F401  (the git + coverage.py fixture)
from tests.reports.test_helpers import FIXTURES, parse_markdown, seed_compare

SEED = str(FIXTURES / "seed-pr-1875-compare.json")


def run_cli(*argv: str) -> int:
    return main(["report", *argv])


def test_compare_file_to_markdown(tmp_path):
    out = tmp_path / "report.md"
    assert run_cli("--compare", SEED, "--format", "markdown", "--out", str(out)) == 0
    text = out.read_text()
    assert text.startswith("<!-- perfbot:performance -->")
    assert "<!-- perfbot:accuracy -->" in text and "<!-- perfbot:coverage -->" not in text
    rows = parse_markdown(text).tables[0][1:]
    assert len(rows) == 27 and rows[25] == ["agentmodel", "1", "5,581.60", "5,857.27", "-4.71%", "🔴"]


def test_compare_file_to_text_and_json(tmp_path, capsys):
    assert run_cli("--compare", SEED, "--format", "text") == 0
    text = capsys.readouterr().out
    assert "\x1b[" not in text  # not a terminal: no colour codes
    assert re.search(r"agentmodel .*5,581\.60 .*5,857\.27 .*-4\.71%", text)
    assert "not recommended to merge" in text
    assert run_cli("--compare", SEED, "--format", "json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["compare"] == seed_compare() and doc["coverage"] is None


def test_usage_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "perfbot.compare/1", "base": {"commit": "a"}}))
    for argv in (["--compare", str(bad)], ["--base", "x.json"], [],
                 ["--compare", SEED, "--git", "main...HEAD"],
                 ["--compare", str(tmp_path / "missing.json")]):
        assert run_cli(*argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("perfbot: error: ") and err.count("\n") == 1, err


def _results(commit: str, branch: str, run_id: str, rates: dict, started: str) -> dict:
    rows = []
    for (name, batch), rate in rates.items():
        samples = [rate * (1 + 0.001 * k) for k in (-2, -1, 0, 1, 2, 0, 1, -1)]
        rows.append({"name": name, "batch": batch, "mode": "fp32", "status": "ok", "rate": rate,
                     "samples": samples, "compile_s": 1.5, "peak_mem_bytes": 2**28,
                     "accuracy": {"status": "PASSED", "rtol": 1e-3, "atol": 1e-3,
                                  "max_abs_err": 1e-5, "max_rel_err": 1e-5}})
    return {"schema": "perfbot.results/1",
            "run": {"id": run_id, "commit": commit, "branch": branch, "target": "cpu",
                    "started": started, "ended": started},
            "rows": rows}


def test_two_results_files_with_store_history_to_html(tmp_path):
    rates = {("resnet50", 64): 895.19, ("agentmodel", 1): 5857.27}
    url = f"sqlite:///{tmp_path / 'results.db'}"
    with open_store(url) as store:
        for day in range(1, 6):  # the base branch's recorded past
            past = {k: v * (1 + 0.002 * (day % 3 - 1)) for k, v in rates.items()}
            store.import_document(_results(f"{day:07x}", "main", f"past-{day}", past,
                                           f"2026-11-0{day}T00:00:00+00:00"))
    base = tmp_path / "base.json"
    head = tmp_path / "head.json"
    base.write_text(json.dumps(_results("3f56680", "main", "base-run", rates, "2026-11-10T00:00:00+00:00")))
    head.write_text(json.dumps(_results("5924fd9", "feature", "head-run",
                                        {("resnet50", 64): 895.42, ("agentmodel", 1): 5581.60},
                                        "2026-11-10T01:00:00+00:00")))
    html = tmp_path / "out" / "report.html"
    out = tmp_path / "report.md"
    assert run_cli("--base", str(base), "--head", str(head), "--db", url, "--format", "markdown",
                   "--html", str(html), "--out", str(out)) == 0
    rows = parse_markdown(out.read_text()).tables[0]
    assert rows[0][2:4] == ["Rate new 5924fd", "Rate old 3f5668"]
    assert [r[:4] for r in rows[1:]] == [["resnet50", "64", "895.42", "895.19"],
                                         ["agentmodel", "1", "5,581.60", "5,857.27"]]
    page = html.read_text()
    assert page.count("<svg") == 3
    # The trend plots drew the five recorded base-branch runs (five markers on each history line).
    trend = page.split('<td class="plot">')[1].split("</td>")[0]
    assert trend.count("<use ") >= 5


def test_coverage_from_git_in_all_formats(project, tmp_path, capsys):  # noqa: F811
    repo, base_reports, head_reports = project
    other_head = "f" * 40
    common = ["--coverage-head", str(head_reports / "coverage.xml"),
              "--coverage-base", str(base_reports / "coverage.xml"),
              "--git", "main...feature", "--repo", str(repo), "--pr", "42", "--pr-head", other_head]
    diff = diff_from_git("main...feature", repo=str(repo))
    expected = compare_coverage(read_report(str(head_reports / "coverage.xml"), root=diff.root),
                                read_report(str(base_reports / "coverage.xml"), root=diff.root), diff)

    assert run_cli(*common, "--compare", SEED, "--format", "markdown") == 0
    text = capsys.readouterr().out
    assert [m for m in re.findall(r"<!-- perfbot:(\w+) -->", text)] == ["performance", "accuracy", "coverage"]
    coverage = text[text.index("<!-- perfbot:coverage -->"):]
    head_sha = git(repo, "rev-parse", "feature").strip()
    assert f"Merging #42 ({head_sha[:7]}) into main" in coverage
    assert f"The diff coverage is {expected.patch_pct:.2f}%." in coverage
    assert f"differs from the pull request's latest head {other_head[:7]}" in coverage
    assert "❗" in text.split("<!-- perfbot:accuracy -->")[0]  # the rates are stale too
    impacted = parse_markdown(coverage).tables[0][1:]
    assert [r[0] for r in impacted] == ["pkg/calc.py", "pkg/newmod.py"]

    assert run_cli(*common, "--format", "json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["compare"] is None
    assert (doc["coverage"]["patch_lines"], doc["coverage"]["patch_hits"]) == \
        (expected.patch_lines, expected.patch_hits)

    assert run_cli(*common, "--format", "text") == 0
    assert "Coverage Diff" in capsys.readouterr().out

    # The same change given as a diff file gives the same figures.
    patch = tmp_path / "change.diff"
    patch.write_text(subprocess.run(["git", "-C", str(repo), "diff", "main...feature"],
                                    capture_output=True, text=True, check=True).stdout)
    assert run_cli("--coverage-head", str(head_reports / "coverage.xml"), "--diff-file", str(patch),
                   "--repo", str(repo), "--format", "json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["coverage"]["patch_lines"], doc["coverage"]["patch_hits"]) == \
        (expected.patch_lines, expected.patch_hits)
    assert doc["coverage"]["base"] is None


def test_out_directory_gets_one_body_per_comment(project, tmp_path):  # noqa: F811
    """As the posting workflow calls it: performance and accuracy first, coverage later into the
    same directory, each file one comment body with its marker."""
    repo, base_reports, head_reports = project
    out = tmp_path / "out"
    out.mkdir()
    assert run_cli("--compare", SEED, "--pr", "7", "--format", "markdown", "--out", str(out)) == 0
    assert sorted(p.name for p in out.iterdir()) == ["accuracy.md", "performance.md"]
    performance = (out / "performance.md").read_text()
    patch = tmp_path / "pr.diff"
    patch.write_text(git(repo, "diff", "main...feature"))
    assert run_cli("--coverage-base", str(base_reports / "coverage.xml"),
                   "--coverage-head", str(head_reports / "coverage.xml"), "--diff", str(patch),
                   "--repo", str(repo), "--pr", "7", "--format", "markdown", "--out", str(out)) == 0
    assert sorted(p.name for p in out.iterdir()) == ["accuracy.md", "coverage.md", "performance.md"]
    assert (out / "performance.md").read_text() == performance
    for kind in ("performance", "accuracy", "coverage"):
        body = (out / f"{kind}.md").read_text()
        assert body.startswith(f"<!-- perfbot:{kind} -->\n") and body.count("<!-- perfbot:") == 1
    assert "Merging #7" in (out / "coverage.md").read_text()
