"""``perfbot drift``: new change points and rows gone missing on a branch; with --repo, one
GitHub issue that lists them, opened or edited in place."""
from __future__ import annotations

import os
import sys

from bot.cli.options import add_branch_options, min_step


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "drift", help="change points and missing rows among a branch's newest runs (scheduled check)",
        description="Look at every row of the newest --limit finished runs of --branch: change "
        "points (as `perfbot history` finds them) among the newest --recent runs, rows measured "
        "earlier but failing or absent in the newest --missing-runs runs, and a newest run older "
        "than --stale-days. With --repo, also open or edit one GitHub issue listing them (found "
        "by a hidden marker; the token is read from GITHUB_TOKEN).")
    add_branch_options(parser)
    parser.add_argument("--recent", type=int, default=10, metavar="N",
                        help="report change points among the newest N runs (default 10)")
    parser.add_argument("--missing-runs", type=int, default=1, metavar="N",
                        help="a row is missing when the newest N runs lack it (default 1)")
    parser.add_argument("--stale-days", type=float, default=7.0, metavar="D",
                        help="report a newest run older than D days (default 7; 0: never)")
    parser.add_argument("--out", metavar="FILE", help="also write the Markdown report here")
    parser.add_argument("--repo", metavar="OWNER/NAME", help="open or edit the drift issue there")
    parser.add_argument("--api-url", default=os.environ.get("GITHUB_API_URL") or None, metavar="URL",
                        help="REST API root (default: $GITHUB_API_URL or https://api.github.com)")
    parser.add_argument("--author", metavar="LOGIN",
                        help="login whose marked issues are perfbot's (default: the token's user)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when anything is reported")
    parser.set_defaults(func=drift_command)


def _check(args) -> None:
    from common.errors import UserError

    for flag, value in (("--recent", args.recent), ("--missing-runs", args.missing_runs)):
        if value < 1:
            raise UserError(f"{flag} must be at least 1, got {value}")
    if not args.stale_days >= 0:
        raise UserError(f"--stale-days must be 0 or more, got {args.stale_days:g}")


def drift_command(args) -> int:
    from bot.drift.branch import load_branch
    from bot.drift.scan import scan
    from bot.store import open_store
    from reports.drift import drift_markdown, render_drift

    _check(args)
    step = min_step(args)
    if args.out:
        from bot.outfiles import check_output

        check_output(args.out, "drift report")
    with open_store(args.db) as store:
        history = load_branch(store, args.branch, args.target, args.limit)
    report = scan(history, args.recent, args.missing_runs, args.stale_days or None, step)
    markdown = drift_markdown(report.as_dict())
    if args.out:
        from bot.outfiles import write_output

        write_output(args.out, markdown, "drift report")
    sys.stdout.write(render_drift(report.as_dict(), args.format))
    if args.repo:
        _post(args, report, markdown)
    return 1 if args.strict and report.anything else 0


def _post(args, report, markdown: str) -> None:
    from bot.github.issue import IssueRequest, post_issue, token_from_environment
    from reports.drift import ISSUE_TITLE

    outcome = post_issue(IssueRequest(
        repo=args.repo, kind="drift", title=ISSUE_TITLE.format(branch=report.branch), body=markdown,
        findings=report.fingerprint(), token=token_from_environment(), api_url=args.api_url,
        author=args.author))
    where = f" #{outcome.number} ({outcome.url})" if outcome.number else ""
    print(f"perfbot: drift issue {outcome.action}{where}", file=sys.stderr)
    for note in outcome.notes:
        print(f"perfbot: note: {note}", file=sys.stderr)
