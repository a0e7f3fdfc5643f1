"""The cpu target against ONNX Runtime (CPU provider) on ResNet-50 batch 1 and BERT-base seq 128
batch 1, plus parse + compile time, or any suite's rows. Run: ``python benchmarks/cpu_vs_ort.py [--repeats N]
[--suite smoke | --rows NAME,...] [--onnx FILE.onnx,...] [--torchvision resnet18,...]
[--no-ort-spin] [--json]`` (``--torchvision`` needs torch and torchvision).

Goals: cpu latency ≤ 3× ONNX Runtime's; parse_onnx + compile of ResNet-50 ≤ 1 s. Models come
from the model zoo (``models.cache.build_model``), built once into its cache. Both engines use the
machine's default thread count, or ``--threads N`` for both (the cpu target's own threads:
``PERFBOT_CPU_THREADS``, see ``compiler/targets/cpu/threads.py``). The two engines are timed
interleaved (one run each, in turn) so that other load on the machine hits both alike; each
number is the median of ``--repeats`` runs after warm-up, with the best run beside it.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

# Run as a script from the checkout: the compiler and the model zoo are imported from there.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROWS = ("torchvision-resnet50_1", "bert-mrpc-tf")


def interleaved_ms(fns, repeats: int, warmup: int = 2) -> list[list[float]]:
    """Milliseconds of each function's runs, the functions taking turns."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, out in zip(fns, samples):
            start = time.perf_counter()
            fn()
            out.append((time.perf_counter() - start) * 1e3)
    return samples


def row_case(row_name: str) -> tuple:
    """(name, model path, feeds, parse options) of a manifest row, built into the model cache."""
    from models.cache import build_model
    from models.inputs import make_feeds
    from models.manifest import load_manifest

    row = load_manifest().get(row_name)
    path = str(build_model(row))
    return row_name, path, make_feeds(row, path), {"batch_size": row.batch}


def file_case(path: str) -> tuple:
    """The same for an exported file beside its ``NAME.inputs.npz`` (``tests/fixtures/torch_exports``):
    the batch and each named symbolic dimension are bound to what the inputs give."""
    import numpy as np
    import onnx

    with np.load(path[:-len(".onnx")] + ".inputs.npz") as data:
        feeds = {k: data[k] for k in data.files}
    dims = {}
    for value in onnx.load(path, load_external_data=False).graph.input:
        for k, d in enumerate(value.type.tensor_type.shape.dim):
            if d.dim_param and value.name in feeds:
                dims[d.dim_param] = int(feeds[value.name].shape[k])
    batch = next(iter(feeds.values())).shape[0]
    return os.path.basename(path), path, feeds, {"batch_size": batch, "dims": dims}


def torchvision_file(name: str, folder: str) -> str:
    """``folder/NAME_legacy17.onnx`` of a torchvision zoo model (``torchvision_zoo.py``: random
    weights, batch 1, TorchScript exporter at opset 17) beside its inputs, exported once."""
    import numpy as np

    path = os.path.join(folder, f"{name}_legacy17.onnx")
    if not os.path.exists(path):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import torchvision_zoo
        from export_check import export_quietly

        os.makedirs(folder, exist_ok=True)
        args = torchvision_zoo.inputs(name)
        export_quietly(torchvision_zoo.build(name), args, "legacy17", path, input_names=["input"])
        np.savez(path[:-len(".onnx")] + ".inputs.npz", input=args[0].numpy())
    return path


def measure(case: tuple, repeats: int, threads: int | None, spin: bool = True) -> dict:
    import numpy as np
    import onnxruntime as ort

    import compiler

    row_name, path, feeds, parse = case
    start = time.perf_counter()
    program = compiler.parse_onnx(path, **parse)
    parsed = time.perf_counter()
    program.compile("cpu")
    compiled = time.perf_counter()
    ours = program.run(feeds)
    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = options.inter_op_num_threads = threads
    if not spin:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    want = {i.name for i in session.get_inputs()}
    ort_feeds = {k: v for k, v in feeds.items() if k in want}
    reference = session.run(names, ort_feeds)
    max_abs = max(float(np.max(np.abs(a.astype(np.float64) - b))) for a, b in zip(ours, reference))
    ours_ms, ort_ms = interleaved_ms([lambda: program.run(feeds),
                                      lambda: session.run(names, ort_feeds)], repeats)
    cpu, ref = statistics.median(ours_ms), statistics.median(ort_ms)
    return {"model": row_name, "batch": parse["batch_size"], "threads": threads or "default",
            "parse_s": round(parsed - start, 3), "compile_s": round(compiled - parsed, 3),
            "cpu_ms": round(cpu, 2), "ort_ms": round(ref, 2), "ratio": round(cpu / ref, 2),
            "cpu_best_ms": round(min(ours_ms), 2), "ort_best_ms": round(min(ort_ms), 2),
            "best_ratio": round(min(ours_ms) / min(ort_ms), 2), "max_abs_err": max_abs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--suite", help="measure this suite's rows instead of --rows")
    parser.add_argument("--onnx", default="", help="exported files (beside NAME.inputs.npz) to measure too")
    parser.add_argument("--threads", type=int, help="threads for both engines (default: theirs)")
    parser.add_argument("--torchvision", default="",
                        help="torchvision zoo models (one-input ones) to export and measure too")
    parser.add_argument("--export-dir", default=".perfbot/torchvision", help="where --torchvision files go")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-ort-spin", action="store_true",
                        help="ONNX Runtime's threads sleep between runs instead of spinning (on a "
                             "machine with few cores its spinning threads take the cores the cpu "
                             "target's next run needs)")
    args = parser.parse_args()
    if args.threads and "numpy" not in sys.modules:
        # BLAS reads its thread count when it loads: set it before NumPy is imported.
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(args.threads)
        os.environ.setdefault("PERFBOT_CPU_THREADS", str(args.threads))
    if args.suite:
        from models.manifest import load_manifest
        names = [r.name for r in load_manifest().suite(args.suite)]
    else:
        names = args.rows.split(",") if args.rows else []
    files = [f for f in args.onnx.split(",") if f]
    files += [torchvision_file(n, args.export_dir) for n in args.torchvision.split(",") if n]
    cases = [row_case(r) for r in names if r] + [file_case(f) for f in files]
    results = [measure(c, args.repeats, args.threads, not args.no_ort_spin) for c in cases]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print("| model | batch | threads | parse s | compile s | cpu ms (best) | ORT ms (best) | cpu/ORT (best) | max abs err |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['model']} | {r['batch']} | {r['threads']} | {r['parse_s']} | {r['compile_s']} | "
              f"{r['cpu_ms']} ({r['cpu_best_ms']}) | {r['ort_ms']} ({r['ort_best_ms']}) | "
              f"{r['ratio']}× ({r['best_ratio']}×) | {r['max_abs_err']:.2g} |")


if __name__ == "__main__":
    main()
