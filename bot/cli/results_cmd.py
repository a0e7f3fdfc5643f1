"""``perfbot results``: move runs between the store and results files, merge shards, list."""
from __future__ import annotations

import json
import sys

from bot.cli.options import add_format


def _db_option(parser) -> None:
    parser.add_argument("--db", metavar="URL", help="results database, any SQLAlchemy URL "
                        "(default $PERFBOT_DB_URL, else db_url of [tool.perfbot], else sqlite file "
                        ".perfbot/results.db)")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "results", help="export, import, merge, validate and list results",
        description="Move runs between the results store and versioned JSON results files "
        "(perfbot.results/1), merge shard runs, check files, list recorded runs.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    export = actions.add_parser("export", help="write one run as a results file")
    export.add_argument("run_id", metavar="RUN_ID")
    export.add_argument("--out", metavar="FILE", help="the file (default: stdout)")
    _db_option(export)
    export.set_defaults(func=export_command)

    load = actions.add_parser("import", help="store results files (validated) as runs")
    load.add_argument("files", nargs="+", metavar="FILE")
    _db_option(load)
    add_format(load)
    load.set_defaults(func=import_command)

    merge = actions.add_parser("merge", help="merge shard runs into one run")
    merge.add_argument("run_ids", nargs="*", metavar="RUN_ID")
    merge.add_argument("--commit", metavar="SHA", help="merge every unmerged shard run of this commit")
    merge.add_argument("--id", dest="new_id", metavar="RUN_ID", help="id of the merged run")
    _db_option(merge)
    add_format(merge)
    merge.set_defaults(func=merge_command)

    check = actions.add_parser("validate", help="check results files against the schema")
    check.add_argument("files", nargs="+", metavar="FILE")
    add_format(check)
    check.set_defaults(func=validate_command)

    listing = actions.add_parser("list", help="recorded runs, newest first")
    listing.add_argument("--branch")
    listing.add_argument("--commit", metavar="SHA")
    listing.add_argument("--target", choices=("gpu", "cpu", "ref"))
    listing.add_argument("--limit", type=int, default=50)
    _db_option(listing)
    add_format(listing)
    listing.set_defaults(func=list_command)


def _emit(fmt: str, data, text_lines: list[str]) -> None:
    if fmt == "json":
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        for line in text_lines:
            print(line)


def export_command(args) -> int:
    from bot.results_doc import dump_results
    from bot.store import open_store

    with open_store(args.db, create=False) as store:
        doc = store.get_run(args.run_id)
    text = dump_results(doc, args.out)
    if not args.out:
        sys.stdout.write(text)
    else:
        print(f"exported run {args.run_id} ({len(doc['rows'])} rows) to {args.out}", file=sys.stderr)
    return 0


def import_command(args) -> int:
    from common.errors import UserError

    from bot.results_doc import load_results
    from bot.store import open_store

    imported, failed = [], []
    with open_store(args.db) as store:
        for path in args.files:
            try:
                imported.append({"file": path, "run_id": store.import_document(load_results(path))})
            except UserError as exc:
                failed.append({"file": path, "error": str(exc)})
                print(f"perfbot: error: {exc}", file=sys.stderr)
    _emit(args.format, {"imported": imported, "failed": failed},
          [f"imported {i['file']} as run {i['run_id']}" for i in imported])
    if failed:
        raise UserError(f"{len(failed)} of {len(args.files)} file(s) not imported")
    return 0


def merge_command(args) -> int:
    from common.errors import UserError

    from bot.store import open_store
    from bot.store.shards import shard_runs_of

    if bool(args.run_ids) == bool(args.commit):
        raise UserError("give either shard RUN_IDs or --commit SHA to merge")
    with open_store(args.db) as store:
        run_ids = shard_runs_of(store, args.commit) if args.commit else args.run_ids
        merged = store.merge_runs(run_ids, {"id": args.new_id} if args.new_id else None)
        count = store.count_rows(merged)
    _emit(args.format, {"run_id": merged, "merged": run_ids, "rows": count},
          [f"merged {len(run_ids)} run(s) into {merged} ({count} rows)"])
    return 0


def validate_command(args) -> int:
    from common.errors import UserError

    from bot.results_doc import load_results

    results = []
    for path in args.files:
        try:
            doc = load_results(path)
            results.append({"file": path, "valid": True, "rows": len(doc["rows"])})
        except UserError as exc:
            results.append({"file": path, "valid": False, "error": str(exc)})
    _emit(args.format, results,
          [f"{r['file']}: ok ({r['rows']} rows)" if r["valid"] else f"{r['file']}: INVALID: {r['error']}"
           for r in results])
    bad = sum(not r["valid"] for r in results)
    if bad:
        raise UserError(f"{bad} of {len(results)} file(s) invalid")
    return 0


def list_command(args) -> int:
    from common.errors import UserError
    from bot.store import open_store
    from reports.run_list import run_list_markdown, run_list_table

    if args.limit < 1:
        raise UserError(f"--limit must be at least 1, got {args.limit}")

    with open_store(args.db, create=False) as store:
        runs = store.find_runs(commit=args.commit, branch=args.branch, target=args.target,
                               limit=args.limit)
        for run in runs:
            run["rows"] = store.count_rows(run["id"])
    if args.format == "json":
        _emit("json", runs, [])
        return 0
    header = ["id", "commit", "branch", "target", "suite", "shard", "rows", "started", "ended"]
    table = [[r["commit"][:12] if k == "commit" else ("" if r.get(k) is None else str(r[k]))
              for k in header] for r in runs]
    if args.format == "markdown":
        _emit("markdown", None, run_list_markdown(header, table))
        return 0
    from rich.console import Console

    Console(width=160).print(run_list_table(header, table))
    return 0
