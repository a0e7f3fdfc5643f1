"""The gpu target's lowered programs of a suite, without a GPU: every row compiled on the emulated
target (its passes and lowering, NumPy in place of CuPy) and listed step by step (the step's
path or op, and its result's type), so that a change to the passes can be checked to leave the
suite's programs as they were.

    python benchmarks/lowered_steps.py --suite default --out before.json      # on the base
    python benchmarks/lowered_steps.py --suite default --out after.json       # on the change
    python benchmarks/lowered_steps.py --compare before.json after.json

``--compare`` prints the rows whose steps differ, with their step counts, and exits 1 if any do.
Equal steps mean equal kernels in the same order; what the emulated target cannot see is a choice
made on the device itself (a convolution path timed at compile).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def lowered(row) -> list[list[str]]:
    """[path or op, result type] of every step of the row's gpu roots, roots in name order."""
    import compiler
    from compiler.targets.gpu.options import GpuOptions
    from models.cache import build_model
    program = compiler.parse_onnx(str(build_model(row)), batch_size=row.batch, dims={"batch": row.batch, **row.dims})
    program.compile("gpu", fp16=row.mode == "fp16", offload_copy=False, gpu_options=GpuOptions(emulate=True))
    steps = []
    for _name, exe in sorted(program.compiled.context.roots.items()):
        body = getattr(exe, "body", None)
        if body is not None:
            steps += [[getattr(fn, "path", None) or ins.op, str(ins.shape)] for ins, fn, _inputs, _dead in body.steps]
    return steps


def suite_steps(suite: str, manifest: str | None = None) -> dict:
    from models.manifest import load_manifest
    rows = load_manifest(manifest).select(suite)
    return {row.name: lowered(row) for row in rows}


def compare(before: dict, after: dict) -> list[str]:
    """One line for each row whose steps differ, or that only one side has."""
    lines = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a != b:
            lines.append(f"{name}: {'-' if a is None else len(a)} -> {'-' if b is None else len(b)} steps")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default="default")
    ap.add_argument("--manifest", default=None)
    ap.add_argument("--out")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args(argv)
    if args.compare:
        with open(args.compare[0]) as f, open(args.compare[1]) as g:
            lines = compare(json.load(f), json.load(g))
        print("\n".join(lines) if lines else "every row lowers to the same steps")
        return 1 if lines else 0
    steps = suite_steps(args.suite, args.manifest)
    text = json.dumps(steps)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    for name, listed in steps.items():
        print(f"{name:36} {len(listed):5d} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
