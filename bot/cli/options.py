"""Options several commands share, and what their values become, defined once so that they read
the same everywhere. The one module that command modules (``*_cmd.py``) import from this package.
"""
from __future__ import annotations

import argparse
import sys

from common.errors import UserError

FORMATS = ("text", "markdown", "json")


def add_format(parser, help: str = "output format") -> None:
    """``--format text|markdown|json`` (DESIGN: every command that prints a result has it)."""
    parser.add_argument("--format", choices=FORMATS, default="text", help=help)


def warn(text: str) -> None:
    """A warning for the person at the terminal: stderr, never the report on stdout."""
    print(f"perfbot: warning: {text}", file=sys.stderr)


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


def settings_from(args):
    """The measuring Settings of a run from the command line (see ``add_measure_options``); a
    wrong value is refused in one line that names its option."""
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
    if args.rounds < 1:
        raise UserError(f"--rounds must be at least 1, got {args.rounds}")
    if args.max_rounds < args.rounds:
        raise UserError(f"--max-rounds ({args.max_rounds}) must be at least --rounds ({args.rounds})")
    settings = settings_from(args)
    settings.rounds = args.rounds
    settings.max_rounds = args.max_rounds
    settings.worker_per_round = args.worker_per_round
    return settings


def add_threshold(parser) -> None:
    """The default threshold of a comparison (``compare``, ``ab``, each step of ``bisect``)."""
    parser.add_argument("--threshold", type=float, metavar="PCT",
                        help="default threshold in percent (overrides [tool.perfbot] threshold_pct; "
                        "rows with a threshold of their own keep it)")


def threshold_of(args) -> float | None:
    """``--threshold``, checked: a percentage strictly between 0 and 100, or None."""
    if args.threshold is not None and not 0 < args.threshold < 100:
        raise UserError("--threshold must be between 0 and 100 percent")
    return args.threshold


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


def min_step(args) -> float:
    from bot.drift.changepoints import MIN_STEP_PCT

    if args.min_step is None:
        return MIN_STEP_PCT
    if not 0 < args.min_step < 100:
        raise UserError(f"--min-step must be between 0 and 100 percent, got {args.min_step:g}")
    return args.min_step


def add_devices(parser) -> None:
    """``--devices all|0,1,...`` (``run``, ``ab``, ``calibrate``, ``verify``): the GPUs to use,
    one worker per GPU; see ``bot.runner.devices``."""
    parser.add_argument("--devices", metavar="all|I,J,...",
                        help="GPUs of this host to spread the rows over, one row per GPU at a "
                        "time ('all', or CUDA indices such as 0,1; gpu target only; default: "
                        "one GPU, rows one after another)")


def add_time_limit(parser, rows_not_started: str) -> None:
    """``--time-limit S``: start no row once S seconds would pass before it finished."""
    parser.add_argument("--time-limit", type=float, metavar="S",
                        help="start no row once S seconds would pass before it finished (at the mean "
                        f"time of the rows so far); {rows_not_started}")


def time_limit_of(args) -> float | None:
    if args.time_limit is not None and not args.time_limit > 0:
        raise UserError(f"--time-limit must be a positive number of seconds, got {args.time_limit:g}")
    return args.time_limit
