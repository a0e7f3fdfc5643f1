"""``perfbot compare``: noise-aware rate diff and accuracy verdict of two runs.

Exit status: 0 when the head is recommended to merge, 1 when it is not (a 🔴 regression, a ❌
error or missing row, or an accuracy FAILED/ERROR), 2 for a usage error.
"""
from __future__ import annotations

import sys

from bot.cli.options import add_format, add_threshold, threshold_of, warn


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "compare", help="compare two runs: rate diff per row (✅ 🔴 🔆 ❌), accuracy, verdict",
        description="Compare a head run with a base run. A row is 🔴 only when its slowdown "
        "reaches its threshold and is significant given both sides' samples and the base "
        "branch's history of the row. Exit status: 0 recommended to merge, 1 not recommended, "
        "2 usage error.")
    parser.add_argument("--base", required=True, metavar="RUN|SHA|FILE",
                        help="a run id, a commit (prefix; its newest run) or a results JSON file; "
                        "or a branch: its newest finished run on the head's target (stored baseline)")
    parser.add_argument("--head", required=True, metavar="RUN|SHA|FILE", help="as --base")
    parser.add_argument("--db", metavar="URL", help="results database, any SQLAlchemy URL "
                        "(default $PERFBOT_DB_URL, else db_url of [tool.perfbot], else sqlite file "
                        ".perfbot/results.db)")
    add_format(parser)
    parser.add_argument("--out", metavar="FILE", help="write the output here instead of stdout")
    add_threshold(parser)
    parser.add_argument("--no-history", action="store_true",
                        help="ignore the base branch's recorded history (its noise band)")
    parser.add_argument("--manifest", metavar="PATH",
                        help="suite manifest whose rows' threshold_pct apply where [tool.perfbot.thresholds] "
                        "names no threshold (default: the model zoo's)")
    parser.set_defaults(func=compare_command)


def compare_command(args) -> int:
    from bot.compare.pair import compare_config, compare_specs
    from reports.compare_table import render_compare

    config = compare_config(args.manifest, threshold=threshold_of(args))
    doc = compare_specs(args.base, args.head, args.db, not args.no_history, config, warn=warn).doc
    text = render_compare(doc, args.format)
    if args.out:
        from bot.outfiles import write_output

        write_output(args.out, text, "comparison")
    else:
        sys.stdout.write(text)
    return 0 if doc["verdict"] == "recommended" else 1
