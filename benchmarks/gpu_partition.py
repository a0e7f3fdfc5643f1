"""A real model split across targets on the GPU machine: every Softmax of a suite row runs in a CPU
root nested in the GPU root (gpu → cpu → gpu), with offload_copy on and off, against the same row
compiled for the gpu target alone and against ONNX Runtime.

    source benchmarks/gpu_env.sh
    python3 benchmarks/gpu_partition.py [--row bert-mrpc-onnx] [--assign Softmax=gpu/cpu]

Each program runs three times (eager, recorded into CUDA graphs, replayed); the printed program of
each split is written to --out so each root's own parameters and copies can be read.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np


def _host(values) -> list:
    import cupy
    return [cupy.asnumpy(v) if isinstance(v, cupy.ndarray) else np.asarray(v) for v in values]


def _runs(program, feeds, device_feeds: bool) -> list:
    """Outputs of three runs: eager, recording, replay."""
    import cupy
    if device_feeds:
        feeds = {k: cupy.asarray(v) for k, v in feeds.items()}
    return [_host(program.run(feeds)) for _ in range(3)]


def _max_diff(a: list, b: list) -> float:
    return max(float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))) for x, y in zip(a, b))


def _structure(program) -> dict:
    """Per root: target, parameter count, copies in and out."""
    out = {}
    for name, target in program.roots.items():
        m = program.modules[name]
        ops = [i.op for i in m.instructions]
        out[name] = {"target": target, "params": len(m.parameters()),
                     "copies_to_device": ops.count("copy_to_device"),
                     "copies_from_device": ops.count("copy_from_device"),
                     "calls": ops.count("run_on_target")}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--row", default="bert-mrpc-onnx")
    ap.add_argument("--assign", default="Softmax=gpu/cpu")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args(argv)
    from bot.runner.accuracy import compare_outputs, reference_outputs
    from models.cache import build_model
    from models.inputs import make_feeds
    from models.manifest import load_manifest

    from compiler.onnx.parser import parse_onnx
    from gpu_suite import replay_state   # benchmarks/ is the script's own folder on sys.path
    row = {r.name: r for r in load_manifest().suite("default")}[args.row]
    path = build_model(row)
    feeds = make_feeds(row, path)
    op, place = args.assign.split("=")

    def parsed():
        return parse_onnx(str(path), batch_size=row.batch, dims={"batch": row.batch})
    single = _runs(parsed().compile("gpu"), feeds, False)
    reference = reference_outputs(path, feeds)
    results = [{"program": "gpu alone", "vs_ort": compare_outputs(single[-1], reference, row.rtol, row.atol).status,
                "eager_vs_replay": _max_diff(single[0], single[2])}]
    for offload in (True, False):
        t0 = time.perf_counter()
        program = parsed().compile(["gpu", "cpu"], offload_copy=offload, assign={op: place})
        compile_s = time.perf_counter() - t0
        with open(os.path.join(args.out, f"partition_offload_{str(offload).lower()}.txt"), "w") as f:
            f.write(program.to_text())
        outs = _runs(program, feeds, not offload)
        roots = program.compiled.context.roots
        results.append({
            "program": f"{args.assign}, offload_copy={offload}",
            "compile_s": round(compile_s, 2),
            "max_diff_vs_gpu_alone": max(_max_diff(o, single[k]) for k, o in enumerate(outs)),
            "vs_ort": compare_outputs(outs[-1], reference, row.rtol, row.atol).status,
            "graphs": {n: replay_state(r) for n, r in roots.items()},
            "roots": _structure(program)})
    with open(os.path.join(args.out, "gpu_partition.json"), "w") as f:
        json.dump({"row": row.name, "batch": row.batch, "results": results}, f, indent=1)
    for r in results:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
