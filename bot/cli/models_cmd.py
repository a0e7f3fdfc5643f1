"""``perfbot models list|build|check``: the benchmark zoo from the command line."""
from __future__ import annotations

import json
import sys
import time

from bot.cli.options import add_format
from bot.zoo import row_size, zoo_rows
from reports.table import simple_table


def register(subparsers) -> None:
    """``models list|build|check``; each takes row names or ``--suite``."""
    parser = subparsers.add_parser("models", help="list, build and check the benchmark models")
    sub = parser.add_subparsers(dest="models_command", metavar="ACTION")
    sub.required = True

    def common(p, formats: bool = True):
        p.add_argument("names", nargs="?", help="row name(s), comma-separated")
        p.add_argument("--suite", help="a suite of the manifest (default, smoke, ...); without it the "
                                          "'default' suite, or every row of a manifest that has none")
        p.add_argument("--manifest", help="manifest file (default: the packaged models/suite.toml)")
        p.add_argument("--cache-dir", help="where built models are cached (default: user cache dir, "
                                           "or $PERFBOT_CACHE_DIR/models)")
        if formats:
            add_format(p)

    p = sub.add_parser("list", help="rows with batch, mode, parameters and GFLOPs per inference")
    common(p)
    p.set_defaults(func=cmd_list)
    p = sub.add_parser("build", help="build (or find cached) model files")
    common(p)
    p.add_argument("--out", help="also write each model to this folder as <row>.onnx")
    p.set_defaults(func=cmd_build)
    p = sub.add_parser("check", help="onnx.checker, an ONNX Runtime run at batch 1, parameter count")
    common(p)
    p.add_argument("--activations", action="store_true",
                   help="also require every intermediate value to be finite and fp16-safe (memory-hungry)")
    p.set_defaults(func=cmd_check)


# -- list ------------------------------------------------------------------------------------
def cmd_list(args) -> int:
    records = []
    for row in zoo_rows(args.manifest, args.names, args.suite):
        params, gflops = row_size(row)
        records.append({"name": row.name, "batch": row.batch, "mode": row.mode, "source": row.source,
                        "parameters": params, "published_parameters": row.params,
                        "gflops_per_inference": round(gflops, 3)})
    if args.format == "json":
        print(json.dumps(records, indent=2))
        return 0
    headers = ["Model", "Batch", "Mode", "Builder/path", "Parameters", "GFLOPs/inference"]
    print(simple_table(headers, [[r["name"], r["batch"], r["mode"], r["source"], f"{r['parameters']:,}",
                                  f"{r['gflops_per_inference']:.3f}"] for r in records], args.format))
    return 0


# -- build -----------------------------------------------------------------------------------
def cmd_build(args) -> int:
    from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    from bot.outfiles import check_model_cache, make_folder
    from models.cache import build_model, export_model
    rows = zoo_rows(args.manifest, args.names, args.suite)
    # before building: a bad folder is one line, not a traceback
    if args.out:
        make_folder(args.out, "--out folder")
    check_model_cache(args.cache_dir)
    columns = [TextColumn("{task.description:<32}"), BarColumn(), DownloadColumn(), TimeElapsedColumn(),
               TimeRemainingColumn()]
    built = []
    with Progress(*columns, transient=False, console=_stderr_console()) as progress:
        for row in rows:
            task = progress.add_task(row.name, total=None)

            def step(done: int, total: int, task=task) -> None:
                progress.update(task, completed=done, total=total)

            path = export_model(row, args.out, args.cache_dir, step) if args.out else \
                build_model(row, args.cache_dir, step)
            size = path.stat().st_size + (path.with_name(path.name + ".data").stat().st_size
                                          if path.with_name(path.name + ".data").exists() else 0)
            progress.update(task, completed=size, total=size)
            built.append((row.name, path))
    if args.format == "json":
        print(json.dumps([{"name": name, "path": str(path)} for name, path in built], indent=2))
    else:
        print(simple_table(["Model", "File"], [[name, str(path)] for name, path in built], args.format))
    return 0


def _stderr_console():
    from rich.console import Console
    return Console(file=sys.stderr)


# -- check -----------------------------------------------------------------------------------
def cmd_check(args) -> int:
    from bot.outfiles import check_model_cache
    from models.check import check_row
    rows = zoo_rows(args.manifest, args.names, args.suite)
    check_model_cache(args.cache_dir)
    results = []
    start = time.perf_counter()
    for row in rows:
        if args.format == "text":
            print(f"checking {row.name} ...", file=sys.stderr, flush=True)
        results.append(check_row(row, args.cache_dir, activations=args.activations))
    elapsed = time.perf_counter() - start
    failed = [r for r in results if not r.ok]
    if args.format == "json":
        print(json.dumps({"ok": not failed, "seconds": round(elapsed, 1),
                          "rows": [r.as_dict() for r in results]}, indent=2))
    else:
        rng = lambda r: "—" if r.out_min is None else f"[{r.out_min:.3g}, {r.out_max:.3g}]"  # noqa: E731
        table = [["✅" if r.ok else "❌", r.name, f"{r.params:,}" if r.params is not None else "—",
                  f"{r.published:,}" if r.published else "—", rng(r),
                  f"{r.max_abs_activation:.3g}" if r.max_abs_activation is not None else "—",
                  f"{r.ort_spread:.1e}" if r.ort_spread is not None else "—",
                  f"{r.seconds:.1f}", "; ".join(r.problems)] for r in results]
        print(simple_table(["", "Model", "Parameters", "Published", "Output range", "Max |value|", "ORT spread", "Seconds",
                      "Problems"], table, args.format))
        print(f"\n{len(results) - len(failed)}/{len(results)} passed in {elapsed:.1f} s")
    return 1 if failed else 0
