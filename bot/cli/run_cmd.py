"""``perfbot run``: measure a suite into the results store."""
from __future__ import annotations

import argparse
import sys

from bot.cli.options import add_devices, add_format


def add_measure_options(parser: argparse.ArgumentParser, repeats: int, warmup: int,
                        suite: bool = True) -> None:
    """Options shared by ``run``, ``ab`` and (without --suite) ``bisect``."""
    if suite:
        parser.add_argument("--suite", help="smoke, default, or row names separated by commas "
                            "(default: smoke)")
    parser.add_argument("--target", choices=("gpu", "cpu", "ref"),
                        help="default: gpu when CuPy sees a usable CUDA device, else cpu")
    parser.add_argument("--repeats", type=int, default=repeats, metavar="N",
                        help=f"timed runs per row (per side and round in ab; default {repeats})")
    parser.add_argument("--warmup", type=int, default=warmup, metavar="N",
                        help=f"untimed samples at least before the timed ones; the warm-up goes "
                        f"on until consecutive samples agree within 1 %% (default {warmup})")
    parser.add_argument("--min-sample-s", type=float, default=0.05, metavar="S",
                        help="a sample is the mean of as many back-to-back runs as last at least "
                        "this long (default 0.05)")
    parser.add_argument("--timeout", type=float, default=600.0, metavar="S",
                        help="time limit of each step of a row (build, compile, one measurement "
                        "round, accuracy) before its worker is killed and the row marked error "
                        "(default 600)")
    parser.add_argument("--manifest", metavar="PATH", help="suite manifest (default: the model zoo's)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated inputs (default 0)")
    parser.add_argument("--db", metavar="URL", help="results database, any SQLAlchemy URL "
                        "(default $PERFBOT_DB_URL, else db_url of [tool.perfbot], else sqlite file "
                        ".perfbot/results.db)")
    add_format(parser, "output format (stdout)")
    parser.add_argument("--quiet", action="store_true", help="no progress display on stderr")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 when a row errors or fails accuracy (ab: when the verdict is "
                        "not recommended)")


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
    parser.set_defaults(func=run_command)


def settings_from(args):
    from compiler.errors import UserError
    from bot.runner.sides import Settings
    from bot.selection import check_manifest_path

    check_manifest_path(args.manifest)
    # One line naming the option that is wrong (a nan timeout is not positive either).
    if args.repeats < 1:
        raise UserError(f"--repeats must be at least 1, got {args.repeats}")
    if args.warmup < 0:
        raise UserError(f"--warmup must be at least 0, got {args.warmup}")
    if not args.timeout > 0:
        raise UserError(f"--timeout must be a positive number of seconds, got {args.timeout:g}")
    if args.seed < 0:  # NumPy's generators take no negative seed: every row would fail
        raise UserError(f"--seed must be at least 0, got {args.seed}")
    if not 0 < args.min_sample_s <= 60:
        raise UserError(f"--min-sample-s must be more than 0 and at most 60 seconds, got {args.min_sample_s:g}")
    rounds = getattr(args, "rounds", 1)
    if rounds < 1:
        raise UserError(f"--rounds must be at least 1, got {rounds}")
    return Settings(target=args.target or "cpu", repeats=args.repeats, warmup=args.warmup,
                    timeout=args.timeout, seed=args.seed, manifest=args.manifest,
                    min_sample_s=args.min_sample_s, rounds=rounds, worker_per_round=rounds > 1)


def run_command(args) -> int:
    from bot.results_doc import dump_results
    from bot.runner.render import render_markdown, render_text
    from bot.runner.suite import RunRequest, parse_shard, run_suite
    from bot.store import open_store

    parse_shard(args.shard)  # a malformed shard is refused before anything is recorded
    if args.retry_errors and not args.resume:
        from compiler.errors import UserError

        raise UserError("--retry-errors goes with --resume RUN_ID")
    if args.out:
        from bot.outfiles import check_output

        check_output(args.out, "results file")  # an unwritable --out fails before, not after, the run
    given = {flag: getattr(args, flag) for flag in RESUMED_FLAGS if getattr(args, flag) is not None}
    if args.manifest:
        given["manifest"] = args.manifest
    for flag, value in {**RUN_DEFAULTS, "seed": 0, "rounds": 1, "min_sample_s": 0.05}.items():
        setattr(args, flag, given.get(flag, value))
    request = RunRequest(suite=args.suite, target=args.target, shard=args.shard,
                         commit=args.commit, branch=args.branch, resume=args.resume,
                         quiet=args.quiet, settings=settings_from(args), given=given,
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
