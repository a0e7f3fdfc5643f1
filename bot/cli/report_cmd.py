"""``perfbot report``: the performance, accuracy and coverage reports of a change, as Markdown
(the PR comments), terminal text, JSON, and optionally a self-contained HTML page with plots.

The comparison comes from two runs (``--base``/``--head``: run ids, commits or results files) or
from an existing compare document (``--compare``); coverage from two coverage reports and the
change (``--git BASE...HEAD`` or ``--diff-file``).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from bot.cli.options import add_format, warn


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "report", help="render the rate-diff, accuracy and coverage reports (Markdown, text, JSON, HTML)",
        description="Render the reports of a change. Give a comparison (--compare FILE, or "
        "--base and --head) and/or coverage (--coverage-head, with --coverage-base and "
        "--git BASE...HEAD or --diff-file for the change).")
    side = parser.add_argument_group("comparison")
    side.add_argument("--compare", metavar="FILE", help="an existing compare JSON document "
                      "(`perfbot compare --format json`)")
    side.add_argument("--base", metavar="RUN|SHA|FILE", help="base side: run id, commit or results file; "
                      "or a branch: its newest finished run on the head's target")
    side.add_argument("--head", metavar="RUN|SHA|FILE", help="head side, as --base")
    side.add_argument("--db", metavar="URL", help="results database (SQLAlchemy URL; default "
                      "$PERFBOT_DB_URL, else db_url of [tool.perfbot], else .perfbot/results.db); also "
                      "the source of trend plots")
    side.add_argument("--no-history", action="store_true", help="no base-branch history (no trend plots)")
    side.add_argument("--manifest", metavar="PATH", help="with --base/--head: suite manifest whose rows' "
                      "threshold_pct apply where [tool.perfbot.thresholds] names none (default: the "
                      "model zoo's)")
    cov = parser.add_argument_group("coverage")
    cov.add_argument("--coverage-head", metavar="FILE", help="coverage report of the head "
                     "(Cobertura, Clover or JaCoCo XML, LCOV .info, coverage.py, gcovr or llvm-cov JSON, "
                     "or a Go coverage profile)")
    cov.add_argument("--coverage-base", metavar="FILE", help="coverage report of the base")
    change = cov.add_mutually_exclusive_group()
    change.add_argument("--git", metavar="BASE...HEAD", help="the change, as git computes it "
                        "(BASE...HEAD: since the merge-base, like diff-cover)")
    change.add_argument("--diff-file", "--diff", dest="diff_file", metavar="FILE",
                        help="the change as a unified diff file")
    cov.add_argument("--repo", metavar="DIR", default=".", help="git repository (default: .)")
    cov.add_argument("--pr", type=int, metavar="N", help="pull request number, for the headline")
    cov.add_argument("--pr-head", metavar="SHA", help="the PR's current head; reports made on "
                     "another commit get a warning")
    add_format(parser)
    parser.add_argument("--html", metavar="PATH", help="also write the HTML report here")
    parser.add_argument("--out", metavar="FILE|DIR", help="write the output here instead of stdout; "
                        "given a directory, each comment goes to its own file (performance.md, "
                        "accuracy.md, coverage.md; report.txt or report.json for the other formats)")
    parser.set_defaults(func=report_command)


def _check_arguments(args) -> None:
    from common.errors import UserError

    if args.compare and (args.base or args.head):
        raise UserError("give either --compare or --base/--head, not both")
    if bool(args.base) != bool(args.head):
        raise UserError("--base and --head go together")
    if (args.coverage_base or args.git or args.diff_file) and not args.coverage_head:
        raise UserError("--coverage-base, --git and --diff-file need --coverage-head")
    if not (args.compare or args.base or args.coverage_head):
        raise UserError("nothing to report: give --compare FILE, --base/--head, or --coverage-head")
    if args.pr is not None and args.pr < 1:
        raise UserError(f"--pr must be a positive pull request number, got {args.pr}")
    # A --pr-head that is not a SHA could never match, so the stale-head warning would go quiet.
    if args.pr_head is not None and not re.fullmatch(r"[0-9a-fA-F]{7,64}", args.pr_head):
        raise UserError(f"--pr-head must be a commit SHA (hex, 7 to 64 digits), got {args.pr_head[:80]!r}")


def _comparison(args):
    """The comparison (None: none asked for), from a compare file or from two runs."""
    from bot.compare.pair import compare_config, compare_specs, compared_file

    if args.compare:
        return compared_file(args.compare, args.db, not args.no_history)
    if not args.base:
        return None
    return compare_specs(args.base, args.head, args.db, not args.no_history,
                         compare_config(args.manifest), warn=warn)


def _coverage(args):
    if not args.coverage_head:
        return None
    from bot.coverage.change import coverage_of_change

    return coverage_of_change(args.coverage_head, args.coverage_base, args.git, args.diff_file, args.repo)


def _bodies(doc, coverage, args) -> dict[str, str]:
    from reports.markdown import comment_bodies

    return comment_bodies(doc, coverage, pr=args.pr, pr_head=args.pr_head)


def render(doc, coverage, args, color: bool) -> str:
    if args.format == "json":
        from reports.formats import as_json

        return as_json({"schema": "perfbot.report/1", "compare": doc,
                        "coverage": coverage.to_dict() if coverage is not None else None})
    if args.format == "markdown":
        return "\n".join(_bodies(doc, coverage, args).values())
    from reports.terminal import render_text

    return render_text(doc, coverage, pr=args.pr, color=color)


def _write(path: Path, text: str, what: str = "report") -> None:
    from bot.outfiles import write_output

    write_output(path, text, what)


def report_command(args) -> int:
    _check_arguments(args)
    comparison = _comparison(args)
    doc = comparison.doc if comparison is not None else None
    coverage = _coverage(args)
    if args.html:
        from bot.drift.history import history_with_steps
        from reports.html import render_html

        history = history_with_steps(comparison.history) if comparison is not None else None
        _write(Path(args.html), render_html(compare_doc=doc, coverage_result=coverage,
                                            history=history, pr=args.pr, pr_head=args.pr_head),
               "HTML report")
    out = Path(args.out) if args.out else None
    if out is not None and (out.is_dir() or args.out.endswith(("/", "\\"))):
        # One file per comment, as the posting step takes them (perfbot post --body DIR/KIND.md).
        if args.format == "markdown":
            for kind, body in _bodies(doc, coverage, args).items():
                _write(out / f"{kind}.md", body)
        else:
            _write(out / f"report.{'json' if args.format == 'json' else 'txt'}",
                   render(doc, coverage, args, color=False))
        return 0
    text = render(doc, coverage, args, color=out is None and sys.stdout.isatty())
    if out is not None:
        _write(out, text)
    else:
        sys.stdout.write(text)
    return 0
