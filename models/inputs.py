"""Seeded inputs for a row: one array per graph input, drawn as the manifest says."""
from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from models.manifest import InputSpec, ManifestError, Row

DEFAULT_FLOAT = InputSpec("normal")


def graph_inputs(model_path: str | Path) -> list[onnx.ValueInfoProto]:
    """Inputs that need feeds (initializers listed as inputs by old exporters are not)."""
    model = onnx.load(str(model_path), load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in inits]


def _shape(vi: onnx.ValueInfoProto, batch: int, row: Row) -> tuple[int, ...]:
    """Concrete lengths, bound as the compiler's parser binds them (``compiler.onnx.parser``):
    the row's ``dims`` by input and axis (``"x:2"``) or by name, else the batch for a dimension
    named "batch" or a symbolic first dimension. A length of -1 or a name with no letter or digit
    (Paddle's ``?``, written for every unknown axis) is unknown, not shared."""
    from compiler.onnx.parser import dim_key, unknown_length
    dims = []
    for axis, d in enumerate(vi.type.tensor_type.shape.dim):
        key = dim_key(vi.name, axis, d, row.dims)
        if not unknown_length(d):
            dims.append(d.dim_value)
        elif key in row.dims:
            dims.append(row.dims[key])
        elif d.dim_param == "batch" or axis == 0:
            dims.append(batch)
        else:
            raise ManifestError(f"row {row.name!r}: input {vi.name!r} has a symbolic dimension "
                                f"{key!r}; give its size in the manifest row, e.g. "
                                f"dims = {{ {key!r} = N }}".replace("'", '"'))
    return tuple(dims)


def make_feeds(row: Row, model_path: str | Path, batch: int | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    """Feeds for every graph input; the same (row, batch, seed) always gives the same arrays."""
    batch = row.batch if batch is None else batch
    feeds = {}
    for vi in graph_inputs(model_path):
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type))
        shape = _shape(vi, batch, row)
        spec = row.inputs.get(vi.name)
        if spec is None:
            if dtype.kind == "b":  # a mask: which way round it reads is the model's, not ours
                raise ManifestError(f"row {row.name!r}: boolean input {vi.name!r} needs a range in the "
                                    f"manifest: inputs.{vi.name} = {{ dist = \"int\", low = 0, high = 2 }} "
                                    f"for random bits, high = 1 for all false")
            if dtype.kind != "f":
                raise ManifestError(f"row {row.name!r}: integer input {vi.name!r} needs a range in the "
                                    f"manifest, e.g. inputs.{vi.name} = {{ dist = \"int\", low = 0, high = N }}")
            spec = DEFAULT_FLOAT
        # Each input has its own stream: feeds do not change when another input is added.
        rng = np.random.default_rng([seed, zlib.crc32(vi.name.encode())])
        feeds[vi.name] = draw(rng, spec, shape, dtype)
    return feeds


def draw(rng: np.random.Generator, spec: InputSpec, shape, dtype: np.dtype) -> np.ndarray:
    if spec.dist == "int":
        return rng.integers(int(spec.low), int(spec.high), size=shape).astype(dtype)
    if spec.dist == "uniform":
        values = rng.uniform(spec.low, spec.high, size=shape)
    else:
        values = rng.normal(spec.mean, spec.std, size=shape)
    return values.astype(dtype)
