"""``perfbot history ROW``: a row's stored rates on a branch, with the runs where it stepped."""
from __future__ import annotations

import sys

from bot.cli.options import add_branch_options, min_step


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


def history_command(args) -> int:
    from common.errors import UserError
    from bot.drift.branch import load_branch
    from bot.drift.history import history_doc
    from bot.store import open_store
    from reports.drift import render_history

    step = min_step(args)
    with open_store(args.db) as store:
        history = load_branch(store, args.branch, args.target, args.limit)
    keys = history.matching(args.row)
    if not keys:
        raise UserError(f"no finished run of branch {args.branch!r}"
                        f"{' on ' + history.target if history.target else ''} has row {args.row!r}")
    sys.stdout.write(render_history(history_doc(history, keys, step), args.format))
    return 0
