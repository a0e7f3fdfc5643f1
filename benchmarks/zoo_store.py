"""A zoo exported on one machine and run on another: transformers_zoo.py --export-only DIR writes
each ONNX file with its feeds and ONNX Runtime's outputs (``<stem>.npz``: ``in:<name>`` and
``out:<i>`` arrays) and lists them in DIR/manifest.json; --from DIR runs the listed files on any
target against the stored outputs, needing neither torch nor transformers nor ONNX Runtime.

The manifest names files relative to DIR; a name that would leave DIR (absolute, ``..``, a link
pointing out) is refused, so a directory brought from elsewhere reads only its own files.
"""
from __future__ import annotations

import json
import os

import numpy as np

MANIFEST = "manifest.json"


class StoreError(ValueError):
    """The stored directory or its manifest is wrong."""


def inside(root: str, name: str) -> str:
    """``root``/``name``, refused unless it resolves (links followed) inside ``root``."""
    if not isinstance(name, str) or not name or os.path.isabs(name) or "\\" in name:
        raise StoreError(f"{name!r}: not a plain file name relative to the stored directory")
    base = os.path.realpath(root)
    path = os.path.realpath(os.path.join(base, name))
    if os.path.commonpath([base, path]) != base or path == base:
        raise StoreError(f"{name!r} leaves the stored directory")
    return path


def save_case(root: str, name: str, exporter: str, onnx_file: str, feeds: dict, want: list) -> dict:
    """Store ``feeds`` and ``want`` beside ``onnx_file`` (already in ``root``) and list the case."""
    stem = os.path.splitext(os.path.basename(onnx_file))[0]
    arrays = {f"in:{k}": np.asarray(v) for k, v in feeds.items()}
    arrays.update({f"out:{i}": np.asarray(w) for i, w in enumerate(want)})
    np.savez_compressed(os.path.join(root, f"{stem}.npz"), **arrays)
    entry = {"name": name, "exporter": exporter, "onnx": os.path.basename(onnx_file), "data": f"{stem}.npz"}
    cases = [c for c in _manifest(root) if (c["name"], c["exporter"]) != (name, exporter)]
    with open(os.path.join(root, MANIFEST), "w") as f:
        json.dump(cases + [entry], f, indent=1)
    return entry


def _manifest(root: str) -> list:
    path = os.path.join(root, MANIFEST)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        cases = json.load(f)
    if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
        raise StoreError(f"{path}: not a list of cases")
    return cases


def load_cases(root: str, names=None) -> list:
    """[(name, exporter, onnx path, feeds, outputs)] of the cases stored in ``root`` (only
    ``names`` when given), every file checked to lie inside ``root``."""
    if not os.path.isfile(os.path.join(root, MANIFEST)):
        raise StoreError(f"{root}: no {MANIFEST} (make one with --export-only)")
    cases = []
    for c in _manifest(root):
        if names and c.get("name") not in names:
            continue
        onnx_path, data_path = inside(root, c.get("onnx")), inside(root, c.get("data"))
        with np.load(data_path, allow_pickle=False) as data:
            feeds = {k[3:]: data[k] for k in data.files if k.startswith("in:")}
            outs = sorted((int(k[4:]), data[k]) for k in data.files if k.startswith("out:"))
        cases.append((c["name"], c["exporter"], onnx_path, feeds, [w for _, w in outs]))
    return cases


def run_stored(root: str, targets: list, modes: list, names=None, log=print) -> list:
    """Every stored case on every target in every mode: [(name, "exporter mode", row)]."""
    from bot.runner.worker import symbolic_dims
    from export_check import against_targets
    rows = []
    for name, exporter, path, feeds, want in load_cases(root, names):
        dims = symbolic_dims(path, feeds)  # unknown lengths bound to the stored feeds' (a batch of 2)
        for mode in modes:
            row = against_targets(path, feeds, want, targets, mode=mode, dims=dims)
            rows.append((name, f"{exporter} {mode}", row))
            log(name, exporter, mode, row)
    return rows
