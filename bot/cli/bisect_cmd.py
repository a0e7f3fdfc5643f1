"""``perfbot bisect``: the first commit between a good and a bad revision that slowed a row."""
from __future__ import annotations

import sys

from bot.cli.options import add_measure_options, add_rounds_options, add_threshold, rounds_settings, threshold_of


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "bisect", help="find the commit that slowed a row down (binary search of A/B runs)",
        description="Binary search over the first-parent commits after --good up to --bad. Each "
        "step is a `perfbot ab` of one commit against --good, measuring --row only, with the "
        "same rounds and statistics as `perfbot ab`; a commit is bad when that row is 🔴. --bad "
        "is measured first (no regression there: nothing to search). A step whose drop reaches "
        "the threshold without significance is measured again with twice the rounds; a commit "
        "whose row fails is skipped. Prints the first bad commit with its Diff and p and every "
        "step taken. Every A/B is recorded in the store like `perfbot ab`'s.")
    parser.add_argument("--good", required=True, metavar="REV", help="a revision without the slowdown")
    parser.add_argument("--bad", default="HEAD", metavar="REV", help="a revision with it (default HEAD)")
    parser.add_argument("--row", required=True, metavar="NAME", help="the suite row to measure")
    add_measure_options(parser, repeats=1, warmup=2, suite=False)
    add_rounds_options(parser)  # each step is an A/B with ab's rounds
    add_threshold(parser)       # and its threshold: a small slowdown is bisected below the default
    parser.set_defaults(func=bisect_command)


def bisect_command(args) -> int:
    from bot.runner.bisect import BisectRequest, run_bisect
    from bot.store import open_store
    from reports.bisect import render

    request = BisectRequest(good=args.good, bad=args.bad, row=args.row, target=args.target,
                            quiet=args.quiet, settings=rounds_settings(args), threshold_pct=threshold_of(args))
    announce = (lambda text: None) if args.quiet else (lambda text: print(f"perfbot: {text}", file=sys.stderr))
    with open_store(args.db) as store:
        outcome = run_bisect(store, request, announce=announce)
    sys.stdout.write(render(outcome.as_dict(), args.format))
    return 1 if args.strict and outcome.first_bad is None else 0
