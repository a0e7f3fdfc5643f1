"""``perfbot compare``: noise-aware rate diff and accuracy verdict of two runs.

Exit status: 0 when the head is recommended to merge, 1 when it is not (a 🔴 regression, a ❌
error or missing row, or an accuracy FAILED/ERROR), 2 for a usage error.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from bot.cli.options import add_format


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
    parser.add_argument("--threshold", type=float, metavar="PCT",
                        help="default threshold in percent (overrides [tool.perfbot] threshold_pct)")
    parser.add_argument("--no-history", action="store_true",
                        help="ignore the base branch's recorded history (its noise band)")
    parser.add_argument("--manifest", metavar="PATH",
                        help="suite manifest whose rows' threshold_pct apply where [tool.perfbot.thresholds] "
                        "names no threshold (default: the model zoo's)")
    parser.set_defaults(func=compare_command)


def suite_thresholds(manifest: str | None) -> dict:
    """Per-row thresholds the suite manifest sets (``threshold_pct`` of its rows)."""
    from models.manifest import load_manifest

    from bot.compare.config import manifest_thresholds

    return manifest_thresholds(load_manifest(manifest or None).rows)


def load_pair(base_spec: str, head_spec: str, db: str | None, use_history: bool):
    """``(base, head, history, calibration)`` of two run specs (ids, commits, branches or results
    files). The store is opened only when a spec is not a file or history is wanted from a given
    database; a pair measured on different targets or methods is warned about (their rates are
    not comparable)."""
    from bot.compare import calibration_for, resolve_pair
    from bot.compare.measurement import incomparable
    from bot.store import open_store

    files = Path(base_spec).is_file() and Path(head_spec).is_file()
    # Two files and a --db only for their history: a database that is not there is a mistyped --db.
    store = open_store(db, create=not files) if not files or (use_history and db) else None
    try:
        base, head, history = resolve_pair(base_spec, head_spec, store, use_history)
        calibration = calibration_for(store, head)
    finally:
        if store is not None:
            store.close()
    mismatch = incomparable(base, head)
    if mismatch:
        print(f"perfbot: warning: {mismatch}", file=sys.stderr)
    return base, head, history, calibration


def render(doc: dict, fmt: str) -> str:
    from bot.compare.render import render_markdown, render_text

    if fmt == "json":
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    if fmt == "markdown":
        try:
            from reports.markdown import render_accuracy, render_performance
        except ImportError:
            return render_markdown(doc)
        # Both sections, as `perfbot report` writes them: the verdict also counts accuracy
        # failures, and a reader must see why a build with only ✅ rates is not recommended.
        return render_performance(doc) + "\n" + render_accuracy(doc)
    return render_text(doc)


def compare_command(args) -> int:
    from common.errors import UserError

    from bot.compare import CompareConfig, compare_results

    overrides = {}
    if args.threshold is not None:
        if not 0 < args.threshold < 100:
            raise UserError("--threshold must be between 0 and 100 percent")
        overrides["threshold_pct"] = args.threshold
    config = CompareConfig.from_pyproject(suite_thresholds=suite_thresholds(args.manifest), **overrides)
    base, head, history, calibration = load_pair(args.base, args.head, args.db, not args.no_history)
    doc = compare_results(base, head, config, history or None, calibration)
    text = render(doc, args.format)
    if args.out:
        from bot.outfiles import write_output

        write_output(args.out, text, "comparison")
    else:
        sys.stdout.write(text)
    return 0 if doc["verdict"] == "recommended" else 1
