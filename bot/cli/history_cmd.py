"""``perfbot history ROW``: a row's stored rates on a branch, with the runs where it stepped."""
from __future__ import annotations

import sys

from bot.cli.options import add_format


def add_branch_options(parser) -> None:
    """Which stored runs a drift look reads (``history`` and ``drift``)."""
    parser.add_argument("--branch", default="main", help="the branch whose runs to read (default main)")
    parser.add_argument("--target", choices=("gpu", "cpu", "ref"),
                        help="default: the target of the branch's newest run")
    parser.add_argument("--limit", type=int, default=100, metavar="N",
                        help="the newest N finished runs (default 100)")
    parser.add_argument("--min-step", type=float, default=None, metavar="PCT",
                        help="smallest step reported as a change point, percent (default 2)")
    parser.add_argument("--db", metavar="URL", help="results database, any SQLAlchemy URL "
                        "(default $PERFBOT_DB_URL, else db_url of [tool.perfbot], else sqlite file "
                        ".perfbot/results.db)")
    add_format(parser)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "history", help="a row's stored rates on a branch, change points marked",
        description="List the rate of ROW in every finished run of --branch (oldest first) and "
        "mark the runs where the rate stepped: change points found by binary segmentation with a "
        "kernel two-sample cost (ruptures), kept when the medians either side differ by at least "
        "--min-step percent. ROW is a row name (every batch and mode of it) or NAME/BATCH/MODE.")
    parser.add_argument("row", metavar="ROW")
    add_branch_options(parser)
    parser.set_defaults(func=history_command)


def min_step(args) -> float:
    from common.errors import UserError
    from bot.drift.changepoints import MIN_STEP_PCT

    if args.min_step is None:
        return MIN_STEP_PCT
    if not 0 < args.min_step < 100:
        raise UserError(f"--min-step must be between 0 and 100 percent, got {args.min_step:g}")
    return args.min_step


def history_command(args) -> int:
    from common.errors import UserError
    from bot.drift.branch import load_branch
    from bot.drift.render import history_doc, render_history
    from bot.store import open_store

    step = min_step(args)
    with open_store(args.db) as store:
        history = load_branch(store, args.branch, args.target, args.limit)
    keys = history.matching(args.row)
    if not keys:
        raise UserError(f"no finished run of branch {args.branch!r}"
                        f"{' on ' + history.target if history.target else ''} has row {args.row!r}")
    sys.stdout.write(render_history(history_doc(history, keys, step), args.format))
    return 0
