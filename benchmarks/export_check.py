"""What the export zoos (torchvision_zoo.py, transformers_zoo.py) share: exporting a module with
either of PyTorch's exporters, running the file through the compiler's targets against ONNX
Runtime, and the table they print. Not part of CI (needs torch)."""
from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import time
import traceback
import warnings

import numpy as np

TOLERANCE = 1e-4


def scaled_error(got, want) -> float:
    """max |got - want| / max |want|; inf when the shapes differ."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return float("inf")
    if got.size == 0:
        return 0.0
    scale = max(float(np.max(np.abs(want.astype(np.float64)))), 1e-30)
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) / scale


def absolute_error(got, want) -> float:
    """max |got - want|; inf when the shapes differ."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return float("inf")
    return float(np.max(np.abs(got - want))) if got.size else 0.0


def export_quietly(module, args: tuple, exporter: str, path: str, input_names=None) -> None:
    """``legacyNN``: the TorchScript exporter at opset NN; ``dynamo``: the dynamo exporter."""
    import torch
    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        if exporter.startswith("legacy"):
            torch.onnx.export(module, args, path, dynamo=False, opset_version=int(exporter[6:]),
                              input_names=input_names)
        else:
            torch.onnx.export(module, args, dynamo=True, input_names=input_names).save(path)


def within(got: list, want: list, mode: str, floor: float = 0.0) -> bool:
    """fp32: every output's scaled error within TOLERANCE, or its absolute error within ``floor``
    (for outputs that all lie near zero); fp16: every element within the suite's fp16 tolerance,
    |got - want| <= atol + rtol |want| (models/manifest.py)."""
    if mode == "fp32":
        return all(scaled_error(g, w) <= TOLERANCE or absolute_error(g, w) <= floor for g, w in zip(got, want))
    from models.manifest import DEFAULT_TOLERANCE
    rtol, atol = DEFAULT_TOLERANCE[mode]
    return all(np.shape(g) == np.shape(w) and np.allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                                          rtol=rtol, atol=atol) for g, w in zip(got, want))


def ort_run(path: str, feeds: dict, optimized: bool = True, threads: int = 0) -> list:
    """ONNX Runtime's outputs on its CPU provider: with its graph optimizations, or with them off
    (``optimized`` False: how far its own result moves says how exact a comparison can be);
    ``threads``, its intra-op threads (0: its default)."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    if not optimized:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"]).run(None, feeds)


def against_targets(path: str, feeds: dict, want: list, targets: list[str], mode: str = "fp32",
                    dims: dict | None = None, floor: float = 0.0) -> dict:
    """Parse (binding ``dims``), compile (``mode`` fp16: with the fp16 option) and run ``path`` on
    each target: its error against ``want`` (scaled, and absolute as ``<target>_abs``) and its
    parse + compile seconds; status PASS when every target is within the mode's tolerance
    (``within``, with its absolute ``floor``)."""
    import compiler
    row: dict = {"error": ""}
    passed = []
    for target in targets:
        try:
            start = time.perf_counter()
            program = compiler.parse_onnx(path, dims=dims)
            program.compile(target, fp16=mode == "fp16")
            row[f"{target}_compile_s"] = time.perf_counter() - start
            got = program.run(feeds)
            row[target] = max((scaled_error(g, w) for g, w in zip(got, want)), default=0.0)
            row[f"{target}_abs"] = max((absolute_error(g, w) for g, w in zip(got, want)), default=0.0)
            passed.append(within(got, want, mode, floor))
        except Exception as exc:  # noqa: BLE001 - the table reports every failure
            row["error"] += f"{target}: {type(exc).__name__}: {str(exc).splitlines()[0][:150]}; "
            passed.append(False)
            if os.environ.get("TRACE"):
                traceback.print_exc()
    row["status"] = "PASS" if all(passed) else "FAIL"
    return row


def failure_row(status: str, exc: Exception) -> dict:
    text = str(exc).strip()
    first = text.splitlines()[0][:120] if text else ""
    return {"status": status, "error": f"{type(exc).__name__}: {first}"}


def print_table(rows: list, targets: list[str], width: int) -> None:
    """One line per (model, exporter, row), the last thing a zoo prints."""
    print(f"{'model':{width}} {'exporter':13} " + " ".join(f"{t + ' err':>9} {t + ' s':>6}" for t in targets)
          + " status")
    for name, exporter, row in rows:
        cells = " ".join(f"{row[t]:9.2e} {row.get(t + '_compile_s', 0):6.2f}" if row.get(t) is not None
                         else f"{'-':>9} {'-':>6}" for t in targets)
        print(f"{name:{width}} {exporter:13} {cells} {row['status']} {row.get('error', '')}")


def finish(rows: list, targets: list[str], width: int, header: str = "") -> int:
    """A zoo's last words: ``header`` (versions, how the error reads), the table, and its exit
    status, 1 when a row that ran failed."""
    if header:
        print(header)
    print_table(rows, targets, width)
    return 1 if any(r["status"] == "FAIL" for _, _, r in rows) else 0


def zoo_arguments(argv, doc: str, out: str, models: list[str], exporters: tuple[str, ...], stored: bool = False):
    """(arguments, models, exporters, targets) of a zoo's command line; ``stored``: with the
    export-here, run-there options (zoo_store.py)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--only", default="", help="MODEL,... (default: all)")
    parser.add_argument("--exporters", default=",".join(exporters))
    parser.add_argument("--targets", default="cpu")
    parser.add_argument("--out", default=out)
    parser.add_argument("--reuse", action="store_true", help="check files already in --out")
    if stored:
        _stored_arguments(parser)
    args = parser.parse_args(argv)
    args.export_only = getattr(args, "export_only", "")
    args.from_dir = getattr(args, "from_dir", "")
    if not args.from_dir:
        os.makedirs(args.export_only or args.out, exist_ok=True)
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    split = lambda text: [x for x in text.split(",") if x]  # noqa: E731
    return args, split(args.only) or models, split(args.exporters), split(args.targets)


def _stored_arguments(parser) -> None:
    parser.add_argument("--export-only", metavar="DIR", default="",
                        help="export the files, their feeds and ONNX Runtime's outputs into DIR; run nothing")
    parser.add_argument("--from", dest="from_dir", metavar="DIR", default="",
                        help="run the files an --export-only stored in DIR against its stored outputs")
    parser.add_argument("--modes", default="fp32", help="fp32,fp16 (--from only)")
