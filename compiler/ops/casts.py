"""Type conversion and other single-input element-wise ops whose result type or count differs
from their input's: Cast, CastLike, Clip, IsNaN, IsInf, Identity, Dropout (inference)."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import UnaryOp, fold_inputs, result, run_values, scalar_or_none, tuple_shape, widen
from .registry import Op, register_op


def _onnx_dtype(node, elem_type) -> str:
    from compiler.onnx.types import dtype_name
    try:
        return dtype_name(int(elem_type))
    except ValueError as e:
        node.unsupported(str(e))


def convert(x: np.ndarray, dtype: str) -> np.ndarray:
    """NumPy's conversion, except bool (any non-zero is true) and bfloat16 (through float32)."""
    if dtype == "bool":
        return x != 0
    if x.dtype.name == "bfloat16" and dtype != "float32":
        x = x.astype(np.float32)
    return x.astype(dtype)


@register_op
class Cast(Op):
    name = "Cast"
    pointwise = True

    def from_onnx(self, node):
        return {"to": _onnx_dtype(node, node.attrs["to"])}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0].with_dtype(attrs["to"])

    def compute(self, attrs, x):
        return convert(x, attrs["to"])


@register_op
class CastLike(Op):
    """Cast to the type of the second input. Its values are not read, so only its type is kept
    (``to``): a constant cast like a run-time value folds on import."""

    name = "CastLike"
    pointwise = True

    def from_onnx(self, node):
        return {"to": node.input(1).shape.dtype}, node.present_inputs()[:1]

    def shape(self, attrs, inputs, literals):
        return inputs[0].with_dtype(attrs["to"])

    def compute(self, attrs, x):
        return convert(x, attrs["to"])


@register_op
class Clip(UnaryOp):
    name = "Clip"

    def from_onnx(self, node):
        if "min" in node.attrs or "max" in node.attrs:
            return {"min": node.attrs.get("min"), "max": node.attrs.get("max")}, node.present_inputs()
        return fold_inputs(node, 1, ["min", "max"], convert=scalar_or_none)

    def compute(self, attrs, x, *bounds):
        v = run_values(attrs, (x, *bounds), 1, ["min", "max"], convert=scalar_or_none)
        out = widen(x)
        if v["min"] is not None:
            out = np.maximum(out, np.asarray(v["min"]).astype(out.dtype))
        if v["max"] is not None:
            out = np.minimum(out, np.asarray(v["max"]).astype(out.dtype))
        return result(out, x.dtype)


@register_op
class IsNaN(Op):
    name = "IsNaN"
    pointwise = True

    def shape(self, attrs, inputs, literals):
        return inputs[0].with_dtype("bool")

    def compute(self, attrs, x):
        return np.isnan(widen(x))


@register_op
class IsInf(Op):
    name = "IsInf"
    pointwise = True

    def from_onnx(self, node):
        return {"detect_negative": int(node.attrs.get("detect_negative", 1)),
                "detect_positive": int(node.attrs.get("detect_positive", 1))}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0].with_dtype("bool")

    def compute(self, attrs, x):
        x = widen(x)
        return (np.isposinf(x) & bool(attrs["detect_positive"])) | (
            np.isneginf(x) & bool(attrs["detect_negative"]))


@register_op
class Identity(UnaryOp):
    name = "Identity"

    def compute(self, attrs, x):
        return x


@register_op
class Dropout(Op):
    """The identity at inference (and an all-true mask when asked for); in training mode with a
    non-zero ratio, a random mask from ``seed``."""

    name = "Dropout"

    def from_onnx(self, node):
        if node.opset < 12:
            attrs, inputs = {"ratio": float(node.attrs.get("ratio", 0.5)), "training_mode": None}, [node.input(0)]
        else:
            attrs, inputs = fold_inputs(node, 1, ["ratio", "training_mode"], convert=scalar_or_none)
        attrs["mask"] = node.num_outputs > 1
        attrs["seed"] = node.attrs.get("seed")
        return attrs, inputs

    def shape(self, attrs, inputs, literals):
        if attrs["mask"]:
            return tuple_shape(inputs[0], inputs[0].with_dtype("bool"))
        return inputs[0]

    def compute(self, attrs, x, *args):
        v = run_values(attrs, (x, *args), 1, ["ratio", "training_mode"], convert=scalar_or_none)
        ratio = 0.5 if v["ratio"] is None else float(v["ratio"])
        if not v["training_mode"] or ratio == 0:
            y, mask = x, np.ones(x.shape, dtype=bool)
        else:
            # The legacy generator, so that a given seed reproduces onnx's reference masks.
            mask = np.random.RandomState(attrs["seed"]).uniform(0.0, 1.0, x.shape) >= ratio
            y = result(widen(x) * mask / (1 - ratio), x.dtype)
        return (y, mask) if attrs["mask"] else y


@register_op
class GetTupleElem(Op):
    """Element ``index`` of a multi-result instruction (Split, TopK, LSTM, run_on_target)."""

    name = "get_tuple_elem"

    def shape(self, attrs, inputs, literals):
        return inputs[0][attrs["index"]]

    def compute(self, attrs, values):
        return values[attrs["index"]]


@register_op
class BitCast(Op):
    """Reinterpret the bytes as another type of the same width."""

    name = "BitCast"

    def from_onnx(self, node):
        return {"to": _onnx_dtype(node, node.attrs["to"])}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        if np.dtype(attrs["to"]).itemsize != np.dtype(inputs[0].dtype).itemsize:
            raise ValueError(f"BitCast from {inputs[0].dtype} to {attrs['to']}: widths differ")
        return inputs[0].with_dtype(attrs["to"])

    def compute(self, attrs, x):
        return x.copy().view(attrs["to"])


@register_op
class ImageDecoder(Op):
    """Decode an encoded image (bytes as uint8) to (height, width, channels) uint8 with Pillow."""

    name = "ImageDecoder"
    foldable = False

    def from_onnx(self, node):
        return {"pixel_format": node.attrs.get("pixel_format", "RGB")}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return Shape("uint8", (None, None, 1 if attrs["pixel_format"] == "Grayscale" else 3))

    def compute(self, attrs, encoded):
        import io

        from PIL import Image  # Pillow comes with matplotlib; only this op needs it
        image = Image.open(io.BytesIO(encoded.tobytes()))
        fmt = attrs["pixel_format"]
        if fmt == "Grayscale":
            return np.asarray(image.convert("L"))[:, :, None]
        rgb = np.asarray(image.convert("RGB"))
        return rgb[:, :, ::-1] if fmt == "BGR" else rgb
