"""Validate the artifact of a perf.yml run before perf-comment.yml believes any of it.

The artifact was produced by a pull request's code, possibly from a fork, so it is untrusted data:
only the expected plain files, of bounded size; pr.json with a PR number and the SHAs (the head SHA
must be the one GitHub reports for the workflow run); both results documents valid against the
project's own schema, read from the default branch (compare.json, if there, against the compare
schema). On success prints ``pr=N``, ``head_sha=...`` and ``base_sha=...`` lines for
$GITHUB_OUTPUT; on failure one line on stderr and exit code 1.

With ``--coverage DIR`` it checks the coverage artifact instead: the one file head-coverage.xml,
plain, of bounded size, and Cobertura XML (the only format perf.yml uploads), parsed with
defusedxml so that it can neither expand entities nor reach the network.

usage: python .github/scripts/check_pr_artifact.py DIR EXPECTED_HEAD_SHA
       python .github/scripts/check_pr_artifact.py --coverage DIR
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import defusedxml.ElementTree as ET
import jsonschema
from defusedxml import DefusedXmlException

SCHEMAS = Path(__file__).resolve().parents[2] / "bot" / "schemas"
# A pull request based on an older main writes version 1; both load (bot.results_doc upgrades).
RESULTS_SCHEMAS = {f"perfbot.results/{v}": SCHEMAS / f"results-{v}.schema.json" for v in (1, 2)}
COMPARE_SCHEMA = SCHEMAS / "compare-1.schema.json"
EXPECTED = {"pr.json", "pr.diff", "base-results.json", "head-results.json", "compare.json"}
REQUIRED = {"pr.json", "base-results.json", "head-results.json"}
COVERAGE = "head-coverage.xml"
MAX_BYTES = 32 * 1024 * 1024
MAX_COVERAGE_BYTES = 64 * 1024 * 1024
SHA = re.compile(r"^[0-9a-f]{40}$")


class Rejected(Exception):
    pass


def check_files(folder: Path, expected: set[str] = EXPECTED, required: set[str] = REQUIRED,
                max_bytes: int = MAX_BYTES) -> None:
    for path in folder.rglob("*"):
        name = path.relative_to(folder).as_posix()
        if path.is_symlink() or not path.is_file() or name not in expected:
            raise Rejected(f"unexpected entry {name!r} in the artifact")
        if path.stat().st_size > max_bytes:
            raise Rejected(f"{name} is larger than {max_bytes} bytes")
    missing = sorted(n for n in required if not (folder / n).is_file())
    if missing:
        raise Rejected(f"the artifact lacks {', '.join(missing)}")


def load_json(path: Path) -> object:
    try:
        return json.loads(path.read_text("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Rejected(f"{path.name} is not JSON: {exc}") from None


def check_pr(folder: Path, expected_head: str) -> dict:
    facts = load_json(folder / "pr.json")
    if not isinstance(facts, dict) or set(facts) != {"pr", "head_sha", "base_sha"}:
        raise Rejected("pr.json must hold exactly pr, head_sha and base_sha")
    pr = facts["pr"]
    if not isinstance(pr, int) or isinstance(pr, bool) or not 0 < pr < 10**9:
        raise Rejected("pr.json: pr is not a pull request number")
    for key in ("head_sha", "base_sha"):
        if not isinstance(facts[key], str) or not SHA.match(facts[key]):
            raise Rejected(f"pr.json: {key} is not a full commit SHA")
    if facts["head_sha"] != expected_head:
        raise Rejected("pr.json: head_sha is not the commit this workflow run measured")
    return facts


def check_schema(folder: Path, name: str, schema_path: Path, label: str) -> dict:
    doc = load_json(folder / name)
    schema = json.loads(schema_path.read_text("utf-8"))
    try:
        jsonschema.validate(doc, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "top level"
        raise Rejected(f"{name} does not match {label} at {where}") from None
    return doc


def check_results(folder: Path, facts: dict) -> None:
    for name, sha in (("base-results.json", facts["base_sha"]), ("head-results.json", facts["head_sha"])):
        found = load_json(folder / name)
        version = found.get("schema") if isinstance(found, dict) else None
        if version not in RESULTS_SCHEMAS:
            raise Rejected(f"{name} is not a perfbot results document (schema {str(version)[:40]!r})")
        doc = check_schema(folder, name, RESULTS_SCHEMAS[version], version)
        commit = doc["run"]["commit"]
        if commit != "unknown" and not sha.startswith(commit):
            raise Rejected(f"{name} is for commit {commit[:12]}, not {sha[:12]}")
    if (folder / "compare.json").is_file():
        check_schema(folder, "compare.json", COMPARE_SCHEMA, "perfbot.compare/1")


def check_coverage(folder: Path) -> None:
    check_files(folder, {COVERAGE}, {COVERAGE}, MAX_COVERAGE_BYTES)
    try:
        root = ET.parse(folder / COVERAGE).getroot()
    except (ET.ParseError, DefusedXmlException) as exc:
        raise Rejected(f"{COVERAGE} is not readable XML ({exc})") from None
    if root.tag != "coverage" or root.get("clover") is not None or root.find("packages") is None:
        raise Rejected(f"{COVERAGE} is not a Cobertura XML report")


def main_coverage(folder: Path) -> int:
    try:
        check_coverage(folder)
    except Rejected as exc:
        print(f"rejected coverage artifact: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--coverage":
        return main_coverage(Path(argv[1]))
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    folder, expected_head = Path(argv[0]), argv[1]
    try:
        if not SHA.match(expected_head):
            raise Rejected("the expected head SHA is not a full commit SHA")
        check_files(folder)
        facts = check_pr(folder, expected_head)
        check_results(folder, facts)
    except Rejected as exc:
        print(f"rejected artifact: {exc}", file=sys.stderr)
        return 1
    print(f"pr={facts['pr']}\nhead_sha={facts['head_sha']}\nbase_sha={facts['base_sha']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
