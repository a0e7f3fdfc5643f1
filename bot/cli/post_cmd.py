"""``perfbot post``: put a rendered report on a pull request as a sticky comment (and a status)."""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from bot.cli.options import add_format
from bot.github.markers import KINDS


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "post",
        help="create or update perfbot's comment of one kind on a pull request",
        description="Create or update perfbot's comment of one kind on a pull request (found by its "
                    "hidden marker), and optionally set a commit status and check run with the "
                    "verdict. The token is read from GITHUB_TOKEN.",
    )
    p.add_argument("--repo", required=True, metavar="OWNER/NAME")
    p.add_argument("--pr", required=True, type=int, metavar="N", help="pull request number")
    p.add_argument("--kind", required=True, choices=KINDS)
    p.add_argument("--body", required=True, type=Path, metavar="FILE",
                   help="the rendered Markdown report (kept on disk whatever happens)")
    p.add_argument("--section", action="store_true",
                   help="FILE is a combined `perfbot report --format markdown` output: post only "
                        "the part that starts with KIND's marker line")
    p.add_argument("--status", action="store_true",
                   help="also set the commit status perfbot/KIND (and a check run where allowed)")
    p.add_argument("--state-from", type=Path, metavar="COMPARE_JSON",
                   help="`perfbot compare --format json` output: verdict and the results' head SHA")
    p.add_argument("--state", choices=("success", "failure", "error", "pending"),
                   help="status state to set, overriding the verdict of --state-from")
    p.add_argument("--head-sha", metavar="SHA",
                   help="commit the results were measured on; the comment warns when the PR moved on")
    p.add_argument("--api-url", default=os.environ.get("GITHUB_API_URL") or None, metavar="URL",
                   help="REST API root, e.g. https://ghe.example.com/api/v3 "
                        "(default: $GITHUB_API_URL or https://api.github.com)")
    p.add_argument("--author", metavar="LOGIN",
                   help="login whose marked comments are perfbot's (default: the token's user, or "
                        "github-actions[bot] when the token cannot tell)")
    p.add_argument("--target-url", metavar="URL", help="link shown with the commit status")
    p.add_argument("--status-note", metavar="TEXT",
                   help="put before the status description, e.g. what the verdict rests on")
    p.add_argument("--full-report", metavar="URL",
                   help="where the whole report is (e.g. the workflow run with the HTML report): a "
                        "body longer than one comment is cut to fit and points there")
    p.add_argument("--retries", type=int, default=5, metavar="N", help="attempts per request (default 5)")
    p.add_argument("--backoff", type=float, default=1.0, metavar="S",
                   help="first retry delay in seconds, doubled per attempt (default 1)")
    p.add_argument("--max-wait", type=float, default=300.0, metavar="S",
                   help="longest single wait for a rate limit or Retry-After before giving up (default 300)")
    p.add_argument("--pace", type=float, default=1.0, metavar="S",
                   help="seconds between writes, to stay clear of secondary rate limits (default 1)")
    p.add_argument("--timeout", type=float, default=30.0, metavar="S",
                   help="seconds to wait for each reply from GitHub before retrying (default 30)")
    add_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here so that `perfbot --help` does not pay for PyGithub.
    from bot.github.post import PostRequest, post_report
    from bot.github.retry import RetryPolicy

    policy = RetryPolicy(attempts=max(1, args.retries), backoff=max(0.0, args.backoff),
                         max_wait=max(0.0, args.max_wait), pace=max(0.0, args.pace))
    result = post_report(PostRequest(
        repo=args.repo, pr=args.pr, kind=args.kind, body_path=args.body,
        # A trailing newline (a token read from a file) is a copy slip, not part of the token.
        token=os.environ.get("GITHUB_TOKEN", "").strip(), api_url=args.api_url, status=args.status,
        state_from=args.state_from, state=args.state, section=args.section, head_sha=args.head_sha,
        author=args.author, target_url=args.target_url, full_report_url=args.full_report,
        status_note=args.status_note,
        policy=policy, timeout=max(1.0, args.timeout)))
    c = result.comment
    if args.format == "json":
        print(json.dumps({
            "action": c.action, "comment_id": c.comment_id, "url": c.url,
            "removed_duplicates": c.removed_duplicates, "pr_head_sha": result.pr_head_sha,
            "stale": result.stale, "status": result.status_state, "status_sha": result.status_sha,
            "check_run_id": result.check_run_id, "notes": result.notes,
        }, indent=2))
        return 0
    link = f"[{c.url}]({c.url})" if args.format == "markdown" else c.url
    verb = {"unchanged": "kept (unchanged)"}.get(c.action, c.action)
    print(f"{verb} the {args.kind} comment on {args.repo}#{args.pr}: {link}")
    if c.removed_duplicates:
        print(f"removed {len(c.removed_duplicates)} duplicate comment(s) left by a concurrent post")
    if result.stale:
        print(f"note: the pull request's head is now {result.pr_head_sha[:7]}; the comment says the results are stale")
    if result.status_state:
        print(f"set status perfbot/{args.kind} = {result.status_state} on {result.status_sha[:7]}")
    for note in result.notes:
        print(f"note: {note}")
    return 0
