"""Reading a model (path, bytes or ModelProto), its large weights straight into arrays for the
parser (``load_for_import``), and bringing it to opset 13 or newer."""
from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field
from functools import partial

import onnx
from google.protobuf.message import DecodeError
import numpy as np
from onnx import helper, numpy_helper, version_converter

from compiler.errors import ModelLoadError

from . import raw_weights

MIN_OPSET = 13


def load_structure(model_or_path) -> onnx.ModelProto:
    """The model without the raw data of its large initializers (their names, types and shapes
    kept; ``raw_weights``): for reading its graph (batch dimensions, parameter counts, FLOPs), not
    for running it. What the walk cannot take is decoded whole."""
    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path
    return _load(model_or_path, read_weights=False).model


@dataclass(frozen=True)
class LoadedModel:
    """A model for import: the decoded model, the folder its external data lives in, and its large
    initializers' values by name, read in place from the model's bytes (``raw_weights``); those
    initializers carry no data in ``model``."""
    model: onnx.ModelProto
    base_dir: str | None
    weights: dict = field(default_factory=dict)


def load_for_import(model_or_path) -> LoadedModel:
    """The model, the folder its external data lives in, and its large weights, for the parser:
    those are read straight into arrays of their own instead of being copied by protobuf and again
    by ``numpy_helper`` (``raw_weights``). A model that needs the version converter, or whose
    weights the walk cannot take, is decoded whole."""
    if isinstance(model_or_path, onnx.ModelProto):
        return LoadedModel(model_or_path, None)
    return _load(model_or_path, read_weights=True)


def _load(model_or_path, read_weights: bool) -> LoadedModel:
    """Model bytes or a model file, its large raw data taken out by ``raw_weights`` and, where
    ``read_weights``, read into arrays; decoded whole where the walk takes nothing or cannot."""
    if isinstance(model_or_path, (bytes, bytearray)):
        data = bytes(model_or_path)
        loaded = _without_raw_data(data, "model bytes", None, partial(_copy_span, data) if read_weights else None)
        return loaded or LoadedModel(_decode(data, "model bytes"), None)
    path = _checked_path(model_or_path)
    base_dir = os.path.dirname(os.path.abspath(path))
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size:
            # The walk reads the file's structure through a mapping; the weights are read into
            # their arrays from the file, and the mapping is gone before the model is used.
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                loaded = _without_raw_data(mapped, path, base_dir,
                                           partial(_read_span, f, path) if read_weights else None)
            if loaded is not None:
                return loaded
            f.seek(0)
        return LoadedModel(_decode(f.read(), path), base_dir)


def _without_raw_data(data, label: str, base_dir: str | None, read_span) -> LoadedModel | None:
    """The model of ``data`` less its large raw data, that data read by ``read_span`` (None: not
    read, the model is for its structure); None where ``raw_weights`` takes nothing out, or the
    weights are wanted and do not fit their tensors or the version converter must see them."""
    split = raw_weights.split_weights(data)
    if split is None:
        return None
    model = _decode(split[0], label)
    if read_span is None:
        return LoadedModel(model, base_dir)
    if default_opset(model) < MIN_OPSET:     # the version converter reads every tensor whole
        return None
    weights = _raw_arrays(split[1], model, read_span)
    return None if weights is None else LoadedModel(model, base_dir, weights)


def _checked_path(model_path) -> str:
    path = os.fspath(model_path)
    if os.path.isdir(path):
        raise ModelLoadError(f"cannot load {path}: it is a folder, not an .onnx file")
    if not os.path.isfile(path):
        raise ModelLoadError(f"cannot load {path}: no such file")
    return path


def _raw_arrays(spans, model: onnx.ModelProto, read_span) -> dict | None:
    """The spans' arrays by initializer name, each its own (aligned, writable, as ``numpy_helper``
    gives them), or None when a name repeats or a span's type or length does not fit its tensor
    (whole decoding then reports it as protobuf and onnx do)."""
    initializers = model.graph.initializer
    out = {}
    for span in spans:
        tensor = initializers[span.index]
        dtype = _PLAIN_TYPES.get(span.data_type)
        count = int(np.prod(tensor.dims, dtype=np.int64))
        if dtype is None or tensor.name in out or count * dtype.itemsize != span.length:
            return None
        value = np.empty(count, dtype=dtype)
        read_span(span, value.view(np.uint8))
        out[tensor.name] = value.reshape(tuple(tensor.dims))
    return out


def _read_span(f, path: str, span, into: np.ndarray) -> None:
    """``span`` of the open model file ``f`` read into ``into`` (bytes)."""
    f.seek(span.offset)
    if f.readinto(memoryview(into)) != span.length:
        raise ModelLoadError(f"cannot load {path}: the file changed while it was read")


def _copy_span(data: bytes, span, into: np.ndarray) -> None:
    into[:] = np.frombuffer(data, dtype=np.uint8, count=span.length, offset=span.offset)


# ONNX element types whose raw data is a little-endian NumPy array as it lies (``numpy_helper``
# reads the others, bfloat16 and the 4- and 8-bit floats among them, through conversions).
_PLAIN_TYPES = {getattr(onnx.TensorProto, name): np.dtype(np_name).newbyteorder("<") for name, np_name in (
    ("FLOAT", "float32"), ("DOUBLE", "float64"), ("FLOAT16", "float16"), ("INT8", "int8"), ("UINT8", "uint8"),
    ("INT16", "int16"), ("UINT16", "uint16"), ("INT32", "int32"), ("UINT32", "uint32"), ("INT64", "int64"),
    ("UINT64", "uint64"), ("BOOL", "bool"))}


def _decode(data: bytes, label: str) -> onnx.ModelProto:
    if not data:
        raise ModelLoadError(f"cannot load {label}: the file is empty")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeWarning, ValueError) as e:
        raise ModelLoadError(f"cannot load {label}: not a valid ONNX protobuf ({one_line(e)}); "
                             "the file may be truncated or corrupt") from None
    if not model.HasField("graph") or not model.opset_import:
        raise ModelLoadError(f"cannot load {label}: no graph or no opset import; the file may be "
                             "truncated or not an ONNX model")
    return model


def default_opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)


def inline_functions(model: onnx.ModelProto) -> onnx.ModelProto:
    """Expand calls of model-local functions (``FunctionProto``) into their nodes.

    Exporters wrap submodules in local functions (PyTorch's ``export_modules_as_functions``,
    onnxscript, the dynamo exporter unoptimised); the import sees only standard operators."""
    if not model.functions:
        return model
    from onnx import inliner
    try:
        return inliner.inline_local_functions(model)
    except Exception as e:  # the inliner raises C++ errors of several kinds for bad functions
        raise ModelLoadError(f"cannot inline the model's local functions: {one_line(e)}") from None


def upgrade(model: onnx.ModelProto) -> onnx.ModelProto:
    """Convert models older than opset 13 with onnx's version converter; when the converter
    cannot, keep the original (our import understands the older attribute forms too)."""
    if default_opset(model) >= MIN_OPSET:
        return model
    if any(n.op_type == "Scan" for n in model.graph.node):
        # The converter's Scan 8→9 adapter drops the batch axis from the graph inputs' types
        # but not from their data; our Scan reads the opset-8 form itself.
        return model
    try:
        converted = version_converter.convert_version(model, MIN_OPSET)
    except Exception:  # the converter raises assorted errors for ops it lacks adapters for
        return model
    _keep_resize_coordinates(model, converted)
    return converted


def _keep_resize_coordinates(original: onnx.ModelProto, converted: onnx.ModelProto) -> None:
    """Upsample (opsets 7-9) and Resize-10 map output pixels to input pixels asymmetrically
    (x_in = x_out / scale) and take the nearest pixel by truncation; the converter's Resize-11
    leaves the defaults (half_pixel, round_prefer_floor), which shift linear results. Give the
    converted nodes (found by their output names) the old rules explicitly."""
    old = {}
    for node in all_nodes(original.graph):
        if node.op_type == "Upsample" or (node.op_type == "Resize" and not _has_attr(
                node, "coordinate_transformation_mode")):
            old[node.output[0]] = node.op_type
    if not old:
        return
    resizes = [n for n in all_nodes(converted.graph) if n.op_type == "Resize" and n.output[0] in old]
    constants = _constants(converted.graph, {n.input[2] for n in resizes if len(n.input) > 2})
    for node in resizes:
        if _has_attr(node, "coordinate_transformation_mode"):
            continue
        node.attribute.append(helper.make_attribute("coordinate_transformation_mode", "asymmetric"))
        if not _has_attr(node, "nearest_mode"):
            # Truncation is floor when enlarging (Upsample only enlarges); Resize-10 rounds up
            # when shrinking (ONNX Runtime's rule for opsets before 11).
            scales = constants.get(node.input[2]) if len(node.input) > 2 else None
            if old[node.output[0]] == "Upsample" or (scales is not None and np.all(scales >= 1)):
                node.attribute.append(helper.make_attribute("nearest_mode", "floor"))
            elif scales is not None and np.all(scales <= 1):
                node.attribute.append(helper.make_attribute("nearest_mode", "ceil"))


def _constants(graph, names: set[str]) -> dict:
    """Values of the initializers and (tensor-valued) Constant nodes named ``names``; the others,
    model weights among them, are not decoded."""
    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer if t.name in names}
    for node in graph.node:
        if node.op_type == "Constant" and node.output[0] in names and node.attribute \
                and node.attribute[0].name == "value":
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return values


def _has_attr(node, name: str) -> bool:
    return any(a.name == name for a in node.attribute)


def all_nodes(graph):
    """Every node of ``graph`` and, depth first, of the subgraphs in its attributes."""
    for node in graph.node:
        yield node
        for sub in subgraphs(node):
            yield from all_nodes(sub)


def subgraphs(node):
    """The graphs ``node``'s attributes hold (an If's branches, a Loop's body)."""
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.g
        elif a.type == onnx.AttributeProto.GRAPHS:
            yield from a.graphs


def one_line(e: Exception) -> str:
    """An exception's message on one line (messages quoting other tools span several)."""
    return " ".join(str(e).split()) or type(e).__name__
