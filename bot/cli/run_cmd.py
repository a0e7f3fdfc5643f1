"""``perfbot run``: measure a suite into the results store."""
from __future__ import annotations

import sys

from bot.cli.options import add_devices, add_measure_options, settings_from


RUN_DEFAULTS = {"repeats": 10, "warmup": 3}
# Measurement flags a resumed run takes from its record (see suite.RESUMED_SETTINGS).
RESUMED_FLAGS = ("repeats", "warmup", "seed", "rounds", "min_sample_s")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "run", help="measure a suite: rate, compile time, peak memory, accuracy vs ONNX Runtime",
        description="Measure every row of a suite, each in its own worker process with a time "
        "limit, and record the rows in the results store as they finish. A crash, hang, "
        "out-of-memory or unsupported operator makes that row an error and the suite goes on. "
        "To judge a pull request against a stored baseline instead of `perfbot ab`: "
        "`perfbot run` on the head, then `perfbot compare --base <base branch> --head <this "
        "run>` (a branch means its latest finished run).")
    add_measure_options(parser, **RUN_DEFAULTS)
    add_devices(parser)
    parser.add_argument("--rounds", type=int, metavar="K",
                        help="measure each row K times, each in a fresh worker process, so that "
                        "the run holds K independent samples per row; a stored baseline that "
                        "compare can judge against needs at least 5 (default 1)")
    # Unset unless given, so that --resume can tell a flag the user gave from a default.
    parser.set_defaults(**dict.fromkeys(RESUMED_FLAGS))
    parser.add_argument("--commit", help="commit recorded for the run (default: git HEAD here)")
    parser.add_argument("--branch", help="branch recorded for the run (default: the current one)")
    parser.add_argument("--shard", metavar="I/N", help="measure rows I, I+N, I+2N, ... (1-based)")
    parser.add_argument("--resume", metavar="RUN_ID",
                        help="finish an interrupted run: its suite, target, shard, manifest, "
                        "--repeats, --warmup and --seed are reused (giving another is refused) "
                        "and rows already recorded are not measured again")
    parser.add_argument("--retry-errors", action="store_true",
                        help="with --resume: measure the rows recorded as errors again too")
    parser.add_argument("--out", metavar="FILE", help="also write the results document (JSON) here")
    parser.add_argument("--profile", action="store_true",
                        help="after each row's last measurement, time every instruction of its "
                        "program and store that profile with the row, so that a compare against "
                        "this run can show where a flagged row's time went (as `perfbot ab` does)")
    parser.set_defaults(func=run_command)


def run_command(args) -> int:
    from bot.results_doc import dump_results
    from bot.runner.suite import RunRequest, parse_shard, run_suite
    from bot.store import open_store
    from reports.run_table import render_markdown, render_text

    parse_shard(args.shard)  # a malformed shard is refused before anything is recorded
    if args.retry_errors and not args.resume:
        from common.errors import UserError

        raise UserError("--retry-errors goes with --resume RUN_ID")
    if args.out:
        from bot.outfiles import check_output

        check_output(args.out, "results file")  # an unwritable --out fails before, not after, the run
    given = {flag: getattr(args, flag) for flag in RESUMED_FLAGS if getattr(args, flag) is not None}
    if args.manifest:
        given["manifest"] = args.manifest
    for flag, value in {**RUN_DEFAULTS, "seed": 0, "rounds": 1, "min_sample_s": 0.05}.items():
        setattr(args, flag, given.get(flag, value))
    settings = settings_from(args)
    settings.profile = args.profile
    request = RunRequest(suite=args.suite, target=args.target, shard=args.shard,
                         commit=args.commit, branch=args.branch, resume=args.resume,
                         quiet=args.quiet, settings=settings, given=given,
                         retry_errors=args.retry_errors, devices=args.devices)
    announce = (lambda text: None) if args.quiet else (lambda text: print(f"perfbot: {text}", file=sys.stderr))
    with open_store(args.db) as store:
        run_id = run_suite(store, request, announce=announce)
        doc = store.get_run(run_id)
    if args.out:
        dump_results(doc, args.out)
    if args.format == "json":
        sys.stdout.write(dump_results(doc))
    else:
        sys.stdout.write(render_markdown(doc) if args.format == "markdown" else render_text(doc))
    bad = any(r["status"] == "error" or (r.get("accuracy") or {}).get("status") == "FAILED"
              for r in doc["rows"])
    return 1 if args.strict and bad else 0
