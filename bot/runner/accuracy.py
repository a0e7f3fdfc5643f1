"""Accuracy: our compiled program's outputs against ONNX Runtime's (CPU) on the same feeds.

Every output is compared element-wise with the row's tolerance, the ``numpy.isclose`` rule
``|ours - ref| <= atol + rtol * |ref|``. The worst element is the one that exceeds its allowance
by the largest factor, so a small absolute miss on a near-zero value and a large miss on a large
value are ranked fairly.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from common.errors import UserError

# Used when a manifest row leaves its tolerance out (the fp16 allowance covers half precision's
# 11-bit mantissa through a deep network).
DEFAULT_TOLERANCE = {"fp32": (1e-3, 1e-3), "fp16": (4e-2, 4e-2)}


@dataclass
class AccuracyResult:
    """The ``accuracy`` object of a results row, plus a problem that makes the row an error."""

    status: str
    rtol: float
    atol: float
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    worst_output: str | None = None
    worst_index: list[int] | None = None
    nonfinite: bool = False
    problem: str | None = None  # one line; set when the outputs cannot be trusted at all
    notes: list[str] = field(default_factory=list)

    def as_row(self) -> dict:
        return {"status": self.status, "rtol": self.rtol, "atol": self.atol,
                "max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err,
                "worst_output": self.worst_output, "worst_index": self.worst_index,
                "nonfinite": self.nonfinite}


class ReferenceRunError(UserError):
    """ONNX Runtime cannot load or run the model, so there is no reference to compare with."""


def _ort_errors() -> tuple[type[BaseException], ...]:
    # ONNX Runtime's errors derive from Exception directly; these are the ones a model can cause.
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    names = ("Fail", "InvalidArgument", "NoSuchFile", "NoModel", "InvalidProtobuf", "InvalidGraph",
             "NotImplemented", "RuntimeException", "EngineError")
    return tuple(getattr(state, name) for name in names if hasattr(state, name))


def reference_outputs(model_path: str | Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run the model with ONNX Runtime's CPU provider; outputs by name, in graph order."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # warnings about unused initialisers are noise here
    # MatMulNBits at accuracy_level 4 (onnxruntime-genai's int4 CPU models) lets ONNX Runtime
    # quantize the activations to int8, about 1e-2 from the exact product; the reference is the
    # exact product, which this key asks for (keys ONNX Runtime does not know are ignored).
    options.add_session_config_entry("mlas.qnbit.force_fp32", "1")
    try:
        session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        wanted = {i.name for i in session.get_inputs()}
        feeds = {k: v for k, v in feeds.items() if k in wanted}
        names = [o.name for o in session.get_outputs()]
        values = session.run(names, feeds)
        if _leaves_elements_unspecified(model_path):
            values = _masked_where_unwritten(session, feeds, names, values)
    except _ort_errors() as exc:
        reason = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", " ".join(str(exc).split()))
        # drop the C++ source location and function signature ORT puts before its message
        reason = re.sub(r"/\S+\.(?:h|cc|cpp):\d+ .*?\) (?=[A-Z])", " ", reason)
        raise ReferenceRunError(f"ONNX Runtime, the reference, cannot run {Path(model_path).name}: "
                                f"{reason[:300]}") from None
    return dict(zip(names, values))


def _leaves_elements_unspecified(model_path) -> bool:
    """Whether the model has an operator whose outputs ONNX Runtime leaves partly unwritten: a
    GroupQueryAttention with a window-sized cache leaves the present's rows past the ones it
    holds as its memory was (the operator says they are unspecified)."""
    import mmap

    import onnx
    # The attribute's name lies in the file as written: a model without it (nearly every one) is
    # not decoded again, whole weights included, beside the session that already read it.
    with open(model_path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data.find(b"sliding_window_cache") < 0:
            return False
    # The graph's own nodes, read with onnx alone: this runs in a worker whose compiler is the
    # measured revision's, which may predate any helper the compiler has for walking a graph.
    model = onnx.load(str(model_path), load_external_data=False)
    return any(node.op_type == "GroupQueryAttention"
               and any(a.name == "sliding_window_cache" and a.i for a in node.attribute)
               for node in model.graph.node)


def _masked_where_unwritten(session, feeds: dict, names: list, values: list) -> list:
    """``values`` with the elements ONNX Runtime does not write masked (numpy.ma): the run again
    twice into output buffers filled with 0 and with 1; where the two differ, nothing wrote."""
    import onnxruntime as ort
    runs = []
    for fill in (0, 1):
        binding = session.io_binding()
        for name, value in feeds.items():
            binding.bind_cpu_input(name, value)
        buffers = [np.full(v.shape, fill, v.dtype) for v in values]
        for name, buffer in zip(names, buffers):
            binding.bind_ortvalue_output(name, ort.OrtValue.ortvalue_from_numpy(buffer))
        session.run_with_iobinding(binding)
        runs.append(buffers)
    return [np.ma.masked_array(v, mask=z != o) if (z != o).any() else v
            for v, z, o in zip(values, *runs)]


def compare_outputs(ours: list, reference: dict[str, np.ndarray], rtol: float, atol: float) -> AccuracyResult:
    """Compare every output; PASSED only if every element of every output is within tolerance."""
    result = AccuracyResult("PASSED", rtol, atol, 0.0, 0.0)
    if len(ours) != len(reference):
        result.status = "FAILED"
        result.problem = f"the program returned {len(ours)} outputs, ONNX Runtime {len(reference)}"
        return result
    worst_ratio = -1.0
    for name, mine, ref in zip(reference, ours, reference.values()):
        unwritten = np.ma.getmaskarray(ref) if np.ma.isMaskedArray(ref) else None
        a, b = np.asarray(mine), np.asarray(ref)
        if a.shape != b.shape:
            result.status = "FAILED"
            result.worst_output, result.worst_index = name, None
            result.problem = f"output {name!r} has shape {list(a.shape)}, ONNX Runtime gives {list(b.shape)}"
            return result
        if a.dtype.kind not in "biufc" or b.dtype.kind not in "biufc" or a.size == 0:
            continue  # strings and empty tensors: nothing numeric to compare
        a, b = a.astype(np.float64), b.astype(np.float64)
        if unwritten is not None:    # ONNX Runtime wrote nothing there: nothing to compare with
            b = np.where(unwritten, a, b)
            result.notes.append(f"{int(unwritten.sum())} elements of {name!r} are left unspecified by the "
                                f"operator and not compared")
        ratio, abs_err, rel_err, bad_ours = _errors(a, b, rtol, atol)
        if bad_ours.any():
            result.nonfinite = True
            where = [int(i) for i in np.unravel_index(int(np.argmax(bad_ours)), a.shape)]
            kind = "NaN" if np.isnan(a[tuple(where)]) else "Inf"
            also = "" if np.isfinite(b[tuple(where)]) else " (so does ONNX Runtime's)"
            result.problem = result.problem or f"output {name!r} has {kind} at index {where}{also}"
        if not np.isfinite(b).all():
            result.notes.append(f"ONNX Runtime's output {name!r} has NaN/Inf")
        result.max_abs_err = max(result.max_abs_err, float(abs_err.max()))
        result.max_rel_err = max(result.max_rel_err, float(rel_err.max()))
        flat = int(np.argmax(ratio))
        if ratio.flat[flat] > worst_ratio:
            worst_ratio = float(ratio.flat[flat])
            result.worst_output = name
            result.worst_index = [int(i) for i in np.unravel_index(flat, a.shape)]
    if worst_ratio > 1.0 or result.nonfinite:
        result.status = "FAILED"
    return result


def _errors(a: np.ndarray, b: np.ndarray, rtol: float, atol: float):
    """Per-element allowance ratio, absolute and relative error, and our NaN/Inf.

    A non-finite value equal on both sides adds no error (the numbers say how close the rest is),
    but any NaN/Inf of ours still fails the row: its results cannot be used. Any other non-finite
    mismatch is an infinite miss. The relative error is taken only where |ref| > atol: closer to
    zero the absolute tolerance is what judges the element.
    """
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    finite = np.isfinite(a) & np.isfinite(b)
    allowance = atol + rtol * np.where(np.isfinite(b), np.abs(b), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):  # inf - inf: masked out just below
        abs_err = np.where(finite, np.abs(a - b), np.where(same, 0.0, np.inf))
        ratio = np.where(allowance > 0, abs_err / allowance, np.where(abs_err > 0, np.inf, 0.0))
        rel_err = np.where(finite & (np.abs(b) > atol), abs_err / np.abs(b), 0.0)
    bad_ours = ~np.isfinite(a)
    # Infinite errors are recorded as the largest finite double: the document holds no Inf.
    big = np.finfo(np.float64).max
    return ratio, np.minimum(abs_err, big), np.minimum(rel_err, big), bad_ours
