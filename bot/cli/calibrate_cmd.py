"""``perfbot calibrate``: each row's A/A noise and detectable change on this machine."""
from __future__ import annotations

import sys

from bot.cli.options import add_devices, add_measure_options, add_time_limit, settings_from, time_limit_of


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "calibrate", help="measure each row's A/A noise and the smallest slowdown ab catches here",
        description="For every row, run an A/A comparison of this code against itself (one fresh "
        "worker process per side and round, ABBA, as `perfbot ab` measures), and from the "
        "spread of the processes work out the row's detectable change: the smallest slowdown an "
        "ab of --ab-rounds rounds flags with 95 %% power at its 1 %% false-alarm level. With "
        "--verify, an A/B whose head is slowed by exactly that much (every sample runs the "
        "program that share more often than it counts) checks that it is caught. Recorded as a calibration run; "
        "`compare`, `ab` and `report` show each row's detectable change from the newest one.")
    add_measure_options(parser, repeats=3, warmup=1)
    add_devices(parser)
    parser.add_argument("--rounds", type=int, default=8, metavar="K",
                        help="A/A rounds per row (default 8: 16 processes)")
    parser.add_argument("--ab-rounds", type=int, default=6, metavar="K",
                        help="the ab size the detectable change is given for (default 6, ab's --rounds)")
    parser.add_argument("--verify", action="store_true",
                        help="also run an A/B with the detectable change injected into the head")
    add_time_limit(parser, "the rows not started are recorded as not calibrated, with the reason, "
                   "instead of the rows done being lost when a job's own limit kills it")
    parser.set_defaults(func=calibrate_command)


def calibrate_command(args) -> int:
    from common.errors import UserError

    from bot.runner.calibrate import CalibrateRequest, run_calibrate
    from bot.store import open_store
    from reports.calibration import render_calibration

    if args.rounds < 3:
        raise UserError(f"--rounds must be at least 3 (a spread needs processes), got {args.rounds}")
    if args.ab_rounds < 5:
        raise UserError(f"--ab-rounds must be at least 5 (fewer never reach p < 0.01), got {args.ab_rounds}")
    settings = settings_from(args)
    settings.rounds = args.rounds
    request = CalibrateRequest(suite=args.suite, target=args.target, ab_rounds=args.ab_rounds,
                               verify=args.verify, quiet=args.quiet, settings=settings,
                               devices=args.devices, time_limit_s=time_limit_of(args))
    announce = (lambda text: None) if args.quiet else (lambda text: print(f"perfbot: {text}", file=sys.stderr))
    with open_store(args.db) as store:
        run_id = run_calibrate(store, request, announce=announce)
        doc = store.get_run(run_id)
    sys.stdout.write(render_calibration(doc, args.format))
    return 0
