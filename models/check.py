"""``perfbot models check``: is a row's file valid, runnable and faithful?

For each row: onnx.checker full check (with shape inference), an ONNX Runtime run at batch 1 on
seeded inputs with every output finite and within the fp16-safe range, and the parameter count
within 1 % of the published one. ``activations=True`` also checks every intermediate float
tensor (memory-hungry on big models; meant for small rows and one-off audits).
"""
from __future__ import annotations

import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import onnx

from models.cache import build_model
from models.inputs import make_feeds
from models.manifest import Row
from models.stats import count_parameters

PARAM_TOLERANCE = 0.01
# fp16 tops out at 65504; values well below keep fp16 compilation meaningful.
FP16_SAFE_ABS = 1e3


@dataclass
class CheckResult:
    name: str
    ok: bool = False
    params: int | None = None
    published: int | None = None
    params_ok: bool | None = None
    checker_ok: bool = False
    ran: bool = False
    out_min: float | None = None
    out_max: float | None = None
    max_abs_activation: float | None = None
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _ort_session(path: Path):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def audited_values(model: onnx.ModelProto) -> set[str]:
    """Intermediate values whose range matters for fp16.

    Left out: values computed from graph inputs and constants alone (e.g. BERT's additive
    -10000 attention mask, which exporters emit on purpose) and Softmax inputs (softmax is
    shift-invariant, so masked logits near -1e4 are harmless there).
    """
    weighted = {t.name for t in model.graph.initializer}
    softmax_inputs = set()
    for node in model.graph.node:  # ONNX requires topological order
        if any(i in weighted for i in node.input):
            weighted.update(node.output)
        if node.op_type in ("Softmax", "LogSoftmax"):
            softmax_inputs.add(node.input[0])
    return weighted - softmax_inputs - {t.name for t in model.graph.initializer}


def _with_all_outputs(path: Path) -> Path:
    """A copy of the model (next to it, sharing its external data) exposing audited values."""
    model = onnx.load(str(path), load_external_data=False)
    inferred = onnx.shape_inference.infer_shapes(model)
    have = {o.name for o in model.graph.output}
    audited = audited_values(model)
    for vi in inferred.graph.value_info:
        if vi.type.tensor_type.elem_type == onnx.TensorProto.FLOAT and vi.name not in have \
                and vi.name in audited:
            model.graph.output.append(onnx.helper.make_tensor_value_info(vi.name, onnx.TensorProto.FLOAT, None))
    fd, tmp = tempfile.mkstemp(suffix=".onnx", prefix=".activations.", dir=path.parent)
    os.close(fd)
    onnx.save_model(model, tmp)
    return Path(tmp)


def run_ort(path: Path, feeds: dict, activations: bool = False) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Graph outputs, and (with ``activations``) all float intermediates too."""
    n_out = len(onnx.load(str(path), load_external_data=False).graph.output)
    if not activations:
        return _ort_session(path).run(None, feeds), []
    tmp = _with_all_outputs(path)
    try:
        values = _ort_session(tmp).run(None, feeds)
    finally:
        tmp.unlink(missing_ok=True)
    return values[:n_out], values[n_out:]


def check_row(row: Row, cache_dir=None, activations: bool = False) -> CheckResult:
    res = CheckResult(row.name, published=row.params)
    start = time.perf_counter()
    try:
        path = build_model(row, cache_dir)
        try:
            onnx.checker.check_model(str(path), full_check=True)
            res.checker_ok = True
        except onnx.checker.ValidationError as exc:
            res.problems.append(f"onnx.checker: {str(exc).splitlines()[0]}")
        res.params = count_parameters(onnx.load(str(path), load_external_data=False))
        if row.params:
            res.params_ok = abs(res.params - row.params) <= PARAM_TOLERANCE * row.params
            if not res.params_ok:
                res.problems.append(f"{res.params:,} parameters, published {row.params:,} (more than 1 % apart)")
        outputs, inner = run_ort(path, make_feeds(row, path, batch=1, seed=row.seed), activations)
        res.ran = True
        floats = [o for o in outputs if np.issubdtype(o.dtype, np.floating)]
        if floats:
            res.out_min = float(min(o.min() for o in floats))
            res.out_max = float(max(o.max() for o in floats))
        for kind, values in (("output", floats), ("activation", inner)):
            for v in values:
                if not np.all(np.isfinite(v)):
                    res.problems.append(f"non-finite {kind} values")
                    break
        everything = [v for v in floats + inner if v.size]
        if everything:
            res.max_abs_activation = float(max(np.abs(v).max() for v in everything))
            if res.max_abs_activation > FP16_SAFE_ABS:
                res.problems.append(f"|value| up to {res.max_abs_activation:.3g} (> {FP16_SAFE_ABS:g}, not fp16-safe)")
    except Exception as exc:  # one broken row must not stop the suite; the message says what broke
        res.problems.append(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    res.seconds = time.perf_counter() - start
    res.ok = res.checker_ok and res.ran and res.params_ok is not False and not res.problems
    return res
