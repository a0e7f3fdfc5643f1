"""Rows without a PyTorch counterpart (``peers.py`` has none for them) against the H200's roofline:
our replayed rate on device buffers beside the rate the roofline allows, batch / max(FLOPs /
795 TFLOP/s, bytes / 4.2 TB/s) (cuBLAS fp16 GEMM and device copy, as measured on this GPU; FLOPs of
the products and the least bytes moved, ``compiler.ir.work``). fp32 rows are held to the same
fp16 peak: what the hardware offers, not what fp32 arithmetic can reach.

    source benchmarks/gpu_env.sh; python3 benchmarks/roofline.py [--rows a,b] [--out DIR]
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


def measure(row, seconds: float) -> dict:
    from gpu_row_probe import device_args, device_rate
    from models.cache import build_model
    from models.inputs import make_feeds

    from compiler.ir.work import program_work
    from compiler.onnx.parser import parse_onnx
    path = build_model(row)
    feeds = make_feeds(row, path)
    program = parse_onnx(str(path), batch_size=row.batch, dims={"batch": row.batch})
    fp16 = row.mode == "fp16"
    work = program_work(program, fp16=fp16)
    t0 = time.perf_counter()
    program.compile("gpu", fp16=fp16, offload_copy=False)
    compile_s = time.perf_counter() - t0
    median, _outs = device_rate(program, device_args(program, feeds), seconds)
    bound = work.bound_seconds(PEAK_FLOPS, PEAK_BYTES)
    return {"row": row.name, "batch": row.batch, "mode": row.mode, "gflop": round(work.flops / 1e9, 3),
            "mbytes": round(work.bytes / 1e6, 3), "bound_by": work.bound(PEAK_FLOPS, PEAK_BYTES),
            "rate": round(row.batch / median, 1), "roofline_rate": round(row.batch / bound, 1),
            "of_roofline": round(bound / median, 4), "tflops": round(work.flops / median / 1e12, 1),
            "compile_s": round(compile_s, 2)}


def main(argv=None) -> int:
    from gpu_row_probe import each_row
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="")
    ap.add_argument("--seconds", type=float, default=0.5)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args(argv)
    names = args.rows or ",".join(rows_without_peers())
    results = []
    for result in each_row(names, lambda row: measure(row, args.seconds), os.path.join(args.out, "roofline.log")):
        print(json.dumps(result), flush=True)
        results.append(result)
    cols = ["batch", "mode", "gflop", "mbytes", "bound_by", "rate", "roofline_rate", "of_roofline", "tflops",
            "compile_s"]
    print(f"{'row':28s} " + " ".join(f"{c:>13s}" for c in cols))
    for r in results:
        print(f"{r['row']:28s} " + " ".join(f"{r.get(c, r.get('problem', '-') if c == 'rate' else '-')!s:>13.13s}"
                                           for c in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
