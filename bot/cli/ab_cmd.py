"""``perfbot ab``: same-job A/B of two revisions (base vs head), interleaved on one machine."""
from __future__ import annotations

import sys
from pathlib import Path

from bot.cli.options import (add_devices, add_measure_options, add_rounds_options, add_threshold,
                             add_time_limit, rounds_settings, threshold_of, time_limit_of)


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
    add_threshold(parser)
    add_time_limit(parser, "the rows not started are reported as not measured (❌, so the verdict is "
                   "'not recommended') instead of the whole A/B being lost when a CI job's own limit kills it")
    parser.add_argument("--out-dir", metavar="DIR", help="write base-results.json, "
                        "head-results.json and compare.json here")
    parser.set_defaults(func=ab_command)


def ab_command(args) -> int:
    from bot.outfiles import write_output
    from bot.results_doc import dump_results
    from bot.runner.ab import AbRequest, run_ab
    from bot.store import open_store
    from reports.compare_table import render_compare
    from reports.formats import as_json

    settings = rounds_settings(args)
    time_limit = time_limit_of(args)
    if args.out_dir:
        from bot.outfiles import make_folder

        make_folder(args.out_dir)  # an unwritable --out-dir fails before, not after, measuring
    request = AbRequest(base=args.base, head=args.head, suite=args.suite, target=args.target,
                        quiet=args.quiet, settings=settings, devices=args.devices,
                        time_limit_s=time_limit, threshold_pct=threshold_of(args))
    announce = (lambda text: None) if args.quiet else (lambda text: print(f"perfbot: {text}", file=sys.stderr))
    with open_store(args.db) as store:
        outcome = run_ab(store, request, announce=announce)
    if args.out_dir:
        out = Path(args.out_dir)
        dump_results(outcome.base_doc, out / "base-results.json")
        dump_results(outcome.head_doc, out / "head-results.json")
        write_output(out / "compare.json", as_json(outcome.compare), "comparison")
    sys.stdout.write(render_compare(outcome.compare, args.format))  # exactly as `perfbot compare` shows it
    return 1 if args.strict and outcome.compare.get("verdict") != "recommended" else 0
