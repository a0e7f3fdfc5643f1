"""Built model files, cached under the user's cache directory and keyed by what determines them.

Key = builder name, builder version, seed and a hash of the row's options, so rows that differ
only in batch or mode (``resnet50`` and ``resnet50_fp16``) share one file, and a changed builder
never serves a stale one. ``PERFBOT_CACHE_DIR`` overrides the location. A model is built in a
temporary folder next to its final place and renamed into it, so a reader never sees half a file
(the .onnx and its external .data appear together).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import platformdirs

from models.builders import BUILDERS
from models.graph import Graph
from models.manifest import ManifestError, Row, check_model_file

MODEL_FILE = "model.onnx"
# Changes shared by every builder (weight scaling, calibration) bump this; builder-specific ones
# bump the builder's VERSION.
ZOO_VERSION = 2


def cache_root(cache_dir: str | Path | None = None) -> Path:
    if cache_dir:
        return Path(cache_dir)
    env = os.environ.get("PERFBOT_CACHE_DIR")
    return Path(env) / "models" if env else Path(platformdirs.user_cache_dir("perfbot")) / "models"


def cache_key(row: Row) -> str:
    builder = BUILDERS[row.builder]
    options = hashlib.sha256(json.dumps(row.options, sort_keys=True).encode()).hexdigest()[:12]
    return f"{builder.name}-v{ZOO_VERSION}.{builder.version}-seed{row.seed}-{options}"


def build_graph(row: Row) -> Graph:
    """The row's graph with lazy weights (cheap: no weights are generated)."""
    if not row.builder:
        raise ManifestError(f"row {row.name!r} is an external file, not a builder row")
    return BUILDERS[row.builder](**row.options)


def cached_path(row: Row, cache_dir: str | Path | None = None) -> Path:
    if row.path:
        return row.path
    return cache_root(cache_dir) / cache_key(row) / MODEL_FILE


def build_model(row: Row, cache_dir: str | Path | None = None,
                progress: Callable[[int, int], None] | None = None) -> Path:
    """Path of the row's fp32 .onnx file, building it first if it is not cached.

    ``progress(done_bytes, total_bytes)`` is called while weights are written.
    """
    if row.path:
        check_model_file(row.path, f"row {row.name!r}")
        return row.path
    final = cached_path(row, cache_dir)
    if final.is_file():
        return final
    final.parent.parent.mkdir(parents=True, exist_ok=True)
    graph = build_graph(row)
    total, done = graph.weight_bytes(), 0

    def step(nbytes: int) -> None:
        nonlocal done
        done += nbytes
        if progress:
            progress(done, total)

    tmp = Path(tempfile.mkdtemp(prefix=f".{final.parent.name}.", dir=final.parent.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp's 0700 would make a shared cache unreadable to others
    try:
        graph.save(tmp / MODEL_FILE, seed=row.seed, progress=step)
        try:
            os.rename(tmp, final.parent)
        except OSError:
            if not final.is_file():  # not a concurrent builder winning the race: a real failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def export_model(row: Row, out_dir: str | Path, cache_dir: str | Path | None = None,
                 progress: Callable[[int, int], None] | None = None) -> Path:
    """Copy the row's model into ``out_dir`` as ``<row name>.onnx`` (+ its external data)."""
    src = build_model(row, cache_dir, progress)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    dest = out_dir / f"{row.name}.onnx"
    data = src.with_name(src.name + ".data")
    if data.is_file():
        # The .onnx names its data file, so an external-data model is re-saved with the new name.
        import onnx
        model = onnx.load(str(src))
        onnx.save_model(model, str(dest), save_as_external_data=True, all_tensors_to_one_file=True,
                        location=dest.name + ".data", size_threshold=0)
    else:
        shutil.copyfile(src, dest)
    return dest
