"""Rows without a PyTorch counterpart (``peers.py`` has none for them) against the H200's roofline:
our replayed rate on device buffers beside the rate the roofline allows, batch / max(FLOPs /
795 TFLOP/s, bytes / 4.2 TB/s) (cuBLAS fp16 GEMM and device copy, as measured on this GPU; FLOPs
of the products and the least bytes moved, ``models.stats``). fp32 rows are held to the same fp16
peak: what the hardware offers, not what fp32 arithmetic can reach.

    source benchmarks/gpu_env.sh; python3 benchmarks/roofline.py [--rows a,b] [--out DIR]
    python3 benchmarks/roofline.py --table LOG     # the table again from a log's measured rates
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

PEAK_FLOPS = 795e12
PEAK_BYTES = 4.2e12


def rows_without_peers() -> list[str]:
    from models.manifest import load_manifest
    from peers import ROWS
    return [r.name for r in load_manifest().suite("default") if r.name not in ROWS]


def row_work(row) -> tuple[int, int]:
    """(FLOPs, least bytes) of one inference batch of ``row``, from shapes alone."""
    import onnx

    from models.cache import build_graph
    from models.stats import count_flops, minimum_bytes
    weights = ()
    if row.builder:
        graph = build_graph(row)
        model, weights = graph.shape_only_model(), graph.weights
    else:
        model = onnx.load(str(row.path), load_external_data=False)
    return count_flops(model) * row.batch, minimum_bytes(model, row.batch, row.mode == "fp16", weights)


def roofline_columns(row, rate: float) -> dict:
    """The roofline's figures for ``row`` beside a measured ``rate`` (inferences per second)."""
    flops, moved = row_work(row)
    bound = max(flops / PEAK_FLOPS, moved / PEAK_BYTES)
    return {"gflop": round(flops / 1e9, 3), "mbytes": round(moved / 1e6, 3),
            "bound_by": "compute" if flops / PEAK_FLOPS >= moved / PEAK_BYTES else "memory",
            "roofline_rate": round(row.batch / bound, 1), "of_roofline": round(rate / (row.batch / bound), 4),
            "tflops": round(flops * rate / row.batch / 1e12, 1)}


def measure(row, seconds: float) -> dict:
    from gpu_row_probe import device_args, device_rate
    from models.cache import build_model
    from models.inputs import make_feeds

    from compiler.onnx.parser import parse_onnx
    path = build_model(row)
    feeds = make_feeds(row, path)
    program = parse_onnx(str(path), batch_size=row.batch, dims={"batch": row.batch})
    t0 = time.perf_counter()
    program.compile("gpu", fp16=row.mode == "fp16", offload_copy=False)
    compile_s = time.perf_counter() - t0
    median, _outs = device_rate(program, device_args(program, feeds), seconds)
    rate = row.batch / median
    return {"row": row.name, "batch": row.batch, "mode": row.mode, "rate": round(rate, 1),
            **roofline_columns(row, rate), "compile_s": round(compile_s, 2)}


def print_table(results: list) -> None:
    cols = ["batch", "mode", "gflop", "mbytes", "bound_by", "rate", "roofline_rate", "of_roofline", "tflops"]
    print(f"{'row':28s} " + " ".join(f"{c:>13s}" for c in cols))
    for r in results:
        if "problem" in r:
            print(f"{r['row']:28s} {r['problem']}")
        else:
            print(f"{r['row']:28s} " + " ".join(f"{r.get(c, '-')!s:>13.13s}" for c in cols))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="")
    ap.add_argument("--seconds", type=float, default=0.5)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--table", default="", help="a roofline log: recompute its rows' roofline columns")
    args = ap.parse_args(argv)
    if args.table:
        from models.manifest import load_manifest
        rows = {r.name: r for r in load_manifest().suite("default")}
        logged = [json.loads(line) for line in open(args.table) if line.startswith("{")]
        print_table([{**r, **roofline_columns(rows[r["row"]], r["rate"])} for r in logged if "rate" in r])
        return 0
    from gpu_row_probe import each_row
    names = args.rows or ",".join(rows_without_peers())
    results = []
    for result in each_row(names, lambda row: measure(row, args.seconds), os.path.join(args.out, "roofline.log")):
        print(json.dumps(result), flush=True)
        results.append(result)
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
