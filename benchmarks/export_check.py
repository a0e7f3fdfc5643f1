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


def against_targets(path: str, feeds: dict, want: list, targets: list[str]) -> dict:
    """Parse, compile and run ``path`` on each target: its error against ``want`` and its parse +
    compile seconds; status PASS when every target is within TOLERANCE."""
    import compiler
    row: dict = {"error": ""}
    for target in targets:
        try:
            start = time.perf_counter()
            program = compiler.parse_onnx(path)
            program.compile(target)
            row[f"{target}_compile_s"] = time.perf_counter() - start
            got = program.run(feeds)
            row[target] = max((scaled_error(g, w) for g, w in zip(got, want)), default=0.0)
        except Exception as exc:  # noqa: BLE001 - the table reports every failure
            row["error"] += f"{target}: {type(exc).__name__}: {str(exc).splitlines()[0][:150]}; "
            if os.environ.get("TRACE"):
                traceback.print_exc()
    row["status"] = "PASS" if all(row.get(t) is not None and row[t] <= TOLERANCE for t in targets) else "FAIL"
    return row


def failure_row(status: str, exc: Exception) -> dict:
    text = str(exc).strip()
    first = text.splitlines()[0][:120] if text else ""
    return {"status": status, "error": f"{type(exc).__name__}: {first}"}


def print_table(rows: list, targets: list[str], width: int) -> None:
    """One line per (model, exporter, row), the last thing a zoo prints."""
    print(f"{'model':{width}} {'exporter':9} " + " ".join(f"{t + ' err':>9} {t + ' s':>6}" for t in targets)
          + " status")
    for name, exporter, row in rows:
        cells = " ".join(f"{row[t]:9.2e} {row.get(t + '_compile_s', 0):6.2f}" if row.get(t) is not None
                         else f"{'-':>9} {'-':>6}" for t in targets)
        print(f"{name:{width}} {exporter:9} {cells} {row['status']} {row.get('error', '')}")


def zoo_arguments(argv, doc: str, out: str, models: list[str], exporters: tuple[str, ...]):
    """(arguments, models, exporters, targets) of a zoo's command line."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--only", default="", help="MODEL,... (default: all)")
    parser.add_argument("--exporters", default=",".join(exporters))
    parser.add_argument("--targets", default="cpu")
    parser.add_argument("--out", default=out)
    parser.add_argument("--reuse", action="store_true", help="check files already in --out")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    split = lambda text: [x for x in text.split(",") if x]  # noqa: E731
    return args, split(args.only) or models, split(args.exporters), split(args.targets)
