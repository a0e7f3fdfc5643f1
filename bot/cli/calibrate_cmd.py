"""``perfbot calibrate``: each row's A/A noise and detectable change on this machine."""
from __future__ import annotations

import json
import sys

from bot.cli.options import add_devices
from bot.cli.run_cmd import add_measure_options, settings_from


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
    parser.set_defaults(func=calibrate_command)


def calibrate_command(args) -> int:
    from compiler.errors import UserError

    from bot.runner.calibrate import CalibrateRequest, run_calibrate
    from bot.store import open_store

    if args.rounds < 3:
        raise UserError(f"--rounds must be at least 3 (a spread needs processes), got {args.rounds}")
    if args.ab_rounds < 5:
        raise UserError(f"--ab-rounds must be at least 5 (fewer never reach p < 0.01), got {args.ab_rounds}")
    settings = settings_from(args)
    settings.rounds = args.rounds
    request = CalibrateRequest(suite=args.suite, target=args.target, ab_rounds=args.ab_rounds,
                               verify=args.verify, quiet=args.quiet, settings=settings,
                               devices=args.devices)
    announce = (lambda text: None) if args.quiet else (lambda text: print(f"perfbot: {text}", file=sys.stderr))
    with open_store(args.db) as store:
        run_id = run_calibrate(store, request, announce=announce)
        doc = store.get_run(run_id)
    sys.stdout.write(render(doc, args.format))
    return 0


def render(doc: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    from reports.escape import md, terminal_text

    clean = md if fmt == "markdown" else terminal_text
    lines = ["| Row | Batch | Mode | Rate | Spread | Detectable | A/A diff | Verified |",
             "|---|---:|---|---:|---:|---:|---:|---|"]
    for row in doc["rows"]:
        cal = row.get("calibration") or {}
        verify = cal.get("verify") or {}
        checked = ("—" if not verify else "error" if "error" in verify else
                   f"{'caught' if verify['caught'] else 'missed'} ({verify['diff_pct']:+.2f}%, p={verify['p_value']:.2g})")
        figure = lambda v, spec: "—" if v is None else format(v, spec)  # noqa: E731
        lines.append(f"| {clean(row['name'])} | {row['batch']} | {row['mode']} | "
                     f"{figure(row.get('rate'), ',.1f')} | {figure(cal.get('spread_pct'), '.2f')}% | "
                     f"{'±' + figure(row.get('detectable_pct'), '.1f') + '%' if row.get('detectable_pct') is not None else '—'} | "
                     f"{figure(cal.get('aa_diff_pct'), '+.2f')}% | {checked} |"
                     + (f" {clean(row.get('error') or '')}" if row["status"] == "error" else ""))
    return "\n".join(lines) + "\n"
