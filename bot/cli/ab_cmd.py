"""``perfbot ab``: same-job A/B of two revisions (base vs head), interleaved on one machine."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bot.cli.options import add_devices
from bot.cli.run_cmd import add_measure_options, settings_from


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "ab", help="measure base and head revisions interleaved (ABBA) and compare them",
        description="Check out --base and --head as temporary git worktrees and measure each "
        "revision's own compiler in fresh worker processes (the measuring code is this "
        "perfbot's for both). For every row the sides take turns in ABBA order, one worker "
        "process per side and round, so that machine drift hits both alike and every round adds "
        "one independent sample per side. After --rounds rounds the comparison is checked after "
        "each further round and stops once it is settled (a significant change, or an interval "
        "inside the row's threshold) or --max-rounds is reached. Records a base run and a head "
        "run in the store and prints the comparison. Only committed code is measured. Fallback "
        "without A/B (stored baseline): `perfbot run --rounds N` on the head, then `perfbot "
        "compare --base <base branch> --head <that run>`.")
    parser.add_argument("--base", required=True, metavar="REV", help="base revision (branch, tag, SHA)")
    parser.add_argument("--head", default="HEAD", metavar="REV", help="head revision (default HEAD)")
    add_measure_options(parser, repeats=3, warmup=1)
    add_rounds_options(parser)
    add_devices(parser)
    parser.add_argument("--out-dir", metavar="DIR", help="write base-results.json, "
                        "head-results.json and compare.json here")
    parser.set_defaults(func=ab_command)


def ab_command(args) -> int:
    from bot.outfiles import write_output
    from bot.results_doc import dump_results, validate_compare
    from bot.runner.ab import AbRequest, run_ab
    from bot.cli.compare_cmd import render
    from bot.store import open_store

    settings = rounds_settings(args)
    if args.out_dir:
        from bot.outfiles import make_folder

        make_folder(args.out_dir)  # an unwritable --out-dir fails before, not after, measuring
    request = AbRequest(base=args.base, head=args.head, suite=args.suite, target=args.target,
                        quiet=args.quiet, settings=settings, devices=args.devices)
    announce = (lambda text: None) if args.quiet else (lambda text: print(f"perfbot: {text}", file=sys.stderr))
    with open_store(args.db) as store:
        outcome = run_ab(store, request, announce=announce)
    validate_compare(outcome.compare)  # the remeasured marks were added here: check the contract
    if args.out_dir:
        out = Path(args.out_dir)
        dump_results(outcome.base_doc, out / "base-results.json")
        dump_results(outcome.head_doc, out / "head-results.json")
        write_output(out / "compare.json",
                     json.dumps(outcome.compare, indent=2, ensure_ascii=False) + "\n", "comparison")
    sys.stdout.write(render(outcome.compare, args.format))  # exactly as `perfbot compare` shows it
    return 1 if args.strict and outcome.compare.get("verdict") != "recommended" else 0


def add_rounds_options(parser) -> None:
    """How many base/head rounds an A/B takes (``ab``, and each step of ``bisect``)."""
    parser.add_argument("--rounds", type=int, default=6, metavar="K",
                        help="rounds always taken per row; each is one worker process per side "
                        "(default 6: the rank test needs five a side to reach p < 0.01 at all)")
    parser.add_argument("--max-rounds", type=int, default=16, metavar="K",
                        help="rounds at most, for a row whose comparison has not settled (default 16)")
    parser.add_argument("--worker-per-round", action=argparse.BooleanOptionalAction, default=True,
                        help="measure each round in fresh worker processes, so that one process's "
                        "own speed is not taken for the revision's (default on; off is faster, "
                        "but then each side is one process and compare judges nothing)")


def rounds_settings(args):
    """The measuring Settings of an A/B from the command line (see ``add_rounds_options``)."""
    from compiler.errors import UserError

    if args.rounds < 1:
        raise UserError(f"--rounds must be at least 1, got {args.rounds}")
    if args.max_rounds < args.rounds:
        raise UserError(f"--max-rounds ({args.max_rounds}) must be at least --rounds ({args.rounds})")
    settings = settings_from(args)
    settings.rounds = args.rounds
    settings.max_rounds = args.max_rounds
    settings.worker_per_round = args.worker_per_round
    return settings
