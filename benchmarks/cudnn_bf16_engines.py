"""Which cuDNN engines take a split-bf16 convolution (bf16 X and W, fp32 accumulation and output)
in each epilogue form, and which of them are precompiled (no runtime compilation: no 0.5-1 s of
driver compilation on a cold machine). Run on the GPU machine in a fresh process with an empty
CUDA_CACHE_PATH, so build times are cold:

    CUDA_CACHE_PATH=$(mktemp -d) python3 benchmarks/cudnn_bf16_engines.py
    python3 benchmarks/cudnn_bf16_engines.py --shapes 1:64:64:224,1:64:128:112 --forms 2,4 --plans 8

Per form: the engine configurations the heuristics (modes A, B, fallback) offer, how many carry the
RUNTIME_COMPILATION note, then the first precompiled one built and timed against the heuristic's
first choice (same inputs; max abs difference of the two outputs). With --plans N, the first N
plans of each form are built and timed and the fastest reported (``best``).
"""
from __future__ import annotations

import os
import time

os.environ["PERFBOT_GPU_PLAN_CACHE"] = "0"

FORMS = [(), ("bias",), ("bias", "relu"), ("add", "bias", "relu"), ("bias", "add", "relu")]


def graph_for(cudnn, convk, spec, form, handle):
    """A pygraph of ``spec`` (bf16 inputs, fp32 output) with the epilogue ``form``."""
    g, tensors = convk.frontend_graph(spec, handle, form)
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.B, cudnn.heur_mode.FALLBACK])
    return g, "B" in tensors, "R" in tensors


def buffers(cupy, convk, spec, has_b, has_r):
    rng = cupy.random.default_rng(0)

    def bf16(lens):
        return (rng.standard_normal(lens, dtype=cupy.float32).view(cupy.uint32) >> 16).astype(cupy.uint16)
    bufs = {convk.UID["X"]: bf16(convk._storage(spec.x_shape, True)),
            convk.UID["W"]: bf16(convk._storage(spec.w_shape, True)),
            convk.UID["Y"]: cupy.zeros(convk._storage(spec.out_shape, True), dtype=cupy.float32)}
    if has_b:
        bufs[convk.UID["B"]] = rng.standard_normal(spec.w_shape[0], dtype=cupy.float32)
    if has_r:
        bufs[convk.UID["R"]] = rng.standard_normal(convk._storage(spec.out_shape, True), dtype=cupy.float32)
    return bufs


def run_plan(cupy, g, index, bufs, handle, y_uid):
    """Build plan ``index`` (seconds), run it 20 times (median ms), return its output."""
    start = time.perf_counter()
    g.build_plan_at_index(index)
    built = time.perf_counter() - start
    ws = cupy.empty(max(int(g.get_workspace_size_plan_at_index(index)), 1), dtype=cupy.uint8)
    pack = {u: a.data.ptr for u, a in bufs.items()}
    g.execute_plan_at_index(pack, ws.data.ptr, index, handle=handle)
    times = []
    for _ in range(20):
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record()
        g.execute_plan_at_index(pack, ws.data.ptr, index, handle=handle)
        b.record()
        b.synchronize()
        times.append(cupy.cuda.get_elapsed_time(a, b))
    times.sort()
    return built, times[len(times) // 2], bufs[y_uid].copy()


def main(argv=None) -> None:
    import argparse

    import cupy
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="64:128:128:28,64:64:64:56,64:256:256:14,1:64:64:56",
                    help="N:C_IN:C_OUT:HW of 3x3 stride-1 convolutions, comma-separated")
    ap.add_argument("--forms", default=",".join(str(i) for i in range(len(FORMS))),
                    help=f"indices into {FORMS}")
    ap.add_argument("--plans", type=int, default=0, help="also time the first N plans of each form")
    args = ap.parse_args(argv)
    shapes = [tuple(int(v) for v in item.split(":")) for item in args.shapes.split(",")]
    forms = [FORMS[int(i)] for i in args.forms.split(",")]

    from compiler.targets.gpu.kernels import conv as convk
    from compiler.targets.gpu.kernels.split_bf16 import width
    cudnn = convk.cudnn_module()
    handle = convk._handle()
    note = cudnn.behavior_note.RUNTIME_COMPILATION
    rows = []
    for n, c, k, hw in shapes:
        ksz, pad = 3, 1
        c3 = width(c)       # the split channels [hi | hi | lo], padded as the compiler pads them
        spec = convk.ConvSpec((n, c3, hw, hw), (k, c3, ksz, ksz), (pad, pad), (pad, pad), (1, 1), (1, 1),
                              1, "float32", nhwc=True, inputs="bfloat16")
        for form in forms:
            label = f"n{n} c{c}->{k} {hw}x{hw} conv{''.join('+' + s for s in form)}"
            try:
                g, has_b, has_r = graph_for(cudnn, convk, spec, form, handle)
            except Exception as exc:  # noqa: BLE001 - cuDNN refuses the form: say so
                print(f"{label}: refused ({str(exc)[:120]})")
                continue
            count = g.get_execution_plan_count()
            notes = [g.get_behavior_notes_for_plan_at_index(i) for i in range(count)]
            pre = [i for i in range(count) if note not in notes[i]]
            names = [g.get_plan_name_at_index(i) for i in range(count)]
            print(f"{label}: {count} plans, precompiled {[names[i] for i in pre][:6]}, "
                  f"first {names[0] if count else '-'} ({'runtime' if count and note in notes[0] else 'pre'})")
            bufs = buffers(cupy, convk, spec, has_b, has_r)
            result = {"form": label, "plans": count, "precompiled": len(pre)}
            for which, idx in (("pre", pre[0] if pre else None), ("first", 0 if count else None)):
                if idx is None:
                    continue
                try:
                    built, ms, out = run_plan(cupy, g, idx, bufs, handle, convk.UID["Y"])
                except Exception as exc:  # noqa: BLE001
                    print(f"  {which} plan {names[idx]}: failed ({str(exc)[:120]})")
                    continue
                result[which] = (names[idx], built, ms, out)
            if "pre" in result and "first" in result:
                result["diff"] = float(cupy.abs(result["pre"][3] - result["first"][3]).max())
            timed = []
            for idx in range(1, min(args.plans, count) if "first" in result else 0):
                try:
                    built, ms, out = run_plan(cupy, g, idx, bufs, handle, convk.UID["Y"])
                except Exception:  # noqa: BLE001 - a plan that does not build or run
                    continue
                timed.append((ms, names[idx], built, float(cupy.abs(out - result["first"][3]).max())))
            if timed:
                best = min(timed)
                print(f"  best of {len(timed) + 1}: {best[1]} {best[0]:.4f} ms (built in {best[2]:.2f} s, "
                      f"max diff to the first {best[3]:.1e})")
                if best[0] < result["first"][2]:
                    result["first"] = (best[1], best[2], best[0], None)
                    result["form"] += " (best)"
            rows.append(result)
    print()
    print(f"{'form':44} {'plans':>5} {'pre':>4} {'pre build s':>11} {'pre ms':>7} {'1st build s':>11} "
          f"{'1st ms':>7} {'diff':>8}")
    for r in rows:
        pre, first = r.get("pre"), r.get("first")
        print(f"{r['form']:44} {r['plans']:5d} {r['precompiled']:4d} "
              f"{pre[1] if pre else float('nan'):11.3f} {pre[2] if pre else float('nan'):7.3f} "
              f"{first[1] if first else float('nan'):11.3f} {first[2] if first else float('nan'):7.3f} "
              f"{r.get('diff', float('nan')):8.1e}")


if __name__ == "__main__":
    main()
