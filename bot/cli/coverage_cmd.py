"""``perfbot coverage store|load``: keep each commit's coverage report in the results store.

CI stores the report of every default-branch commit; a pull request's coverage comment later
loads the report of its base commit from there and compares the PR's head report with it.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from bot.cli.options import add_format


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "coverage", help="store a commit's coverage report in the results database, or load it back",
        description="Keep coverage reports (Cobertura XML, LCOV, coverage.py JSON) in the results "
                    "store keyed by commit, so that a pull request's coverage comment can compare "
                    "its head with the report of its base commit.")
    actions = parser.add_subparsers(dest="coverage_action", metavar="ACTION")
    actions.required = True

    store = actions.add_parser("store", help="keep FILE as the coverage report of --commit")
    store.add_argument("file", metavar="FILE", help="Cobertura, Clover or JaCoCo XML, LCOV .info, "
                       "coverage.py, gcovr or llvm-cov JSON, or a Go coverage profile")
    store.add_argument("--commit", required=True, metavar="SHA")
    store.add_argument("--branch", metavar="B", help="branch the commit is on (recorded)")
    store.add_argument("--db", metavar="URL", help="results database, any SQLAlchemy URL "
                       "(default $PERFBOT_DB_URL, else db_url of [tool.perfbot], else sqlite file "
                       ".perfbot/results.db)")
    add_format(store)
    store.set_defaults(func=store_command)

    load = actions.add_parser("load", help="write the stored coverage report of --commit")
    load.add_argument("--commit", required=True, metavar="SHA", help="commit (a prefix is enough)")
    load.add_argument("--db", metavar="URL", help="results database (as for store)")
    load.add_argument("--out", metavar="FILE", help="write the report here (default: stdout)")
    add_format(load, "format of the message")
    load.set_defaults(func=load_command)


def _check_commit(commit: str) -> str:
    from common.errors import UserError

    commit = commit.strip().lower()
    if not (4 <= len(commit) <= 64 and all(c in "0123456789abcdef" for c in commit)):
        raise UserError(f"--commit must be a commit SHA (hex), got {commit!r}")
    return commit


def _say(args, text: str, **fields) -> None:
    if args.format == "json":
        print(json.dumps(fields))
    else:
        print(text)


def store_command(args) -> int:
    from bot.coverage.readers import report_kind
    from bot.store import open_store

    commit = _check_commit(args.commit)
    fmt = report_kind(args.file)
    data = Path(args.file).read_bytes()
    with open_store(args.db) as store:
        store.save_coverage(commit, fmt, data, branch=args.branch)
    _say(args, f"stored the {fmt} coverage report of {commit[:12]} ({len(data)} bytes)",
         commit=commit, format=fmt, bytes=len(data), branch=args.branch)
    return 0


def load_command(args) -> int:
    from common.errors import UserError
    from bot.store import open_store

    commit = _check_commit(args.commit)
    with open_store(args.db, create=False) as store:
        found = store.load_coverage(commit)
    if found is None:
        raise UserError(f"no coverage report of commit {commit[:12]} in the results database")
    fmt, data = found
    if args.out:
        from bot.outfiles import write_output

        write_output(args.out, data, "coverage report")
        _say(args, f"wrote the {fmt} coverage report of {commit[:12]} to {args.out}",
             commit=commit, format=fmt, bytes=len(data), out=args.out)
    else:
        sys.stdout.buffer.write(data)
    return 0
