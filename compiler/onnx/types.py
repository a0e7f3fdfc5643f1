"""ONNX element types, tensors and attributes as the IR sees them (NumPy dtype names, arrays,
plain Python values)."""
from __future__ import annotations

import ml_dtypes  # noqa: F401  (registers bfloat16 & co. with NumPy)
import numpy as np
import onnx
from onnx import helper, numpy_helper

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
    dtype_name(tensor.data_type)  # refuse types we cannot compute with
    if base_dir is not None and onnx.external_data_helper.uses_external_data(tensor):
        onnx.external_data_helper.load_external_data_for_tensor(tensor, base_dir)
    return np.array(numpy_helper.to_array(tensor))


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
