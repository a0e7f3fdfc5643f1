"""ONNX element types, tensors and attributes as the IR sees them (NumPy dtype names, arrays,
plain Python values)."""
from __future__ import annotations

import os

import ml_dtypes  # noqa: F401  (registers bfloat16 & co. with NumPy)
import numpy as np
import onnx
from onnx import helper, numpy_helper

from compiler.errors import ModelLoadError

# Element types the IR computes with; other ONNX types (strings, float8, int4, ...) are refused.
SUPPORTED_DTYPES = ("float64", "float32", "float16", "bfloat16", "int8", "int16", "int32", "int64",
                    "uint8", "uint16", "uint32", "uint64", "bool")


def dtype_name(elem_type: int) -> str:
    """NumPy dtype name of an ONNX ``TensorProto`` element type; ValueError when we lack it."""
    try:
        name = np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).name
    except (KeyError, TypeError, ValueError):
        name = str(elem_type)
    if name not in SUPPORTED_DTYPES:
        label = onnx.TensorProto.DataType.Name(elem_type) if elem_type in onnx.TensorProto.DataType.values() else elem_type
        raise ValueError(f"element type {label} is not supported")
    return name


def onnx_elem_type(dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def tensor_value(tensor: onnx.TensorProto, base_dir: str | None = None) -> np.ndarray:
    dtype = dtype_name(tensor.data_type)  # refuses types we cannot compute with
    if onnx.external_data_helper.uses_external_data(tensor):
        if base_dir is None:
            raise ModelLoadError(f"tensor {tensor.name!r} keeps its data in an external file; load the model from its path")
        return _external_value(tensor, dtype, base_dir)
    # to_array already gives an array of its own (read-only: literals are constants), so no
    # second copy of large weights.
    return numpy_helper.to_array(tensor)


def attribute_value(attr: onnx.AttributeProto):
    """A node attribute as a plain value: ints, floats, str, lists, ndarray or a GraphProto."""
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, onnx.TensorProto):
        return tensor_value(value)
    if isinstance(value, (list, tuple)):
        items = [v.decode("utf-8") if isinstance(v, bytes) else v for v in value]
        if items and isinstance(items[0], onnx.TensorProto):
            return [tensor_value(t) for t in items]
        return list(items)
    return value


_mapped: dict[str, np.memmap] = {}


def _external_value(tensor: onnx.TensorProto, dtype: str, base_dir: str) -> np.ndarray:
    """A tensor stored in an external data file, as a read-only view of the memory-mapped file
    (each file is mapped once; onnx's own loader re-reads the file for every tensor)."""
    info = {e.key: e.value for e in tensor.external_data}
    path = os.path.join(base_dir, info["location"])
    if not os.path.isfile(path):
        raise ModelLoadError(f"tensor {tensor.name!r}: external data file {info['location']} is missing")
    stat = os.stat(path)
    key = f"{path}:{stat.st_mtime_ns}:{stat.st_size}"  # a rewritten file is mapped afresh
    if key not in _mapped:
        _mapped[key] = np.memmap(path, dtype=np.uint8, mode="r")
    data = _mapped[key]
    offset = int(info.get("offset", 0))
    count = int(np.prod(tensor.dims, dtype=np.int64))
    length = int(info.get("length", count * np.dtype(dtype).itemsize))
    if offset + length > data.size:
        raise ModelLoadError(f"tensor {tensor.name!r}: external data runs past the end of {info['location']} "
                             "(truncated file?)")
    return np.frombuffer(data, dtype=np.dtype(dtype).newbyteorder("<"), count=count, offset=offset).reshape(tuple(tensor.dims))
