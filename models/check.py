"""``perfbot models check``: is a row's file valid, runnable and faithful?

For each row: onnx.checker full check (with shape inference), an ONNX Runtime run at batch 1 on
seeded inputs with every output finite and within the fp16-safe range, the parameter count
within 1 % of the published one, and conditioning: the outputs of ONNX Runtime with all graph
optimizations and with none must agree ten times more tightly than the fp32 tolerance — a model
that amplifies rounding differences would fail accuracy checks for no fault of the compiler.
``activations=True`` also checks every intermediate float tensor (memory-hungry on big models;
meant for small rows and one-off audits).
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
from models.manifest import DEFAULT_TOLERANCE, Row
from models.stats import count_parameters

PARAM_TOLERANCE = 0.01
FP32_RTOL, FP32_ATOL = DEFAULT_TOLERANCE["fp32"]
SPREAD_HEADROOM = 0.1
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
    ort_spread: float | None = None      # max |ORT optimized - ORT unoptimized| over outputs
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _ort_session(path: Path, optimize: bool = True):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    if not optimize:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def audited_values(model: onnx.ModelProto) -> set[str]:
    """Intermediate values whose range matters for fp16.

    Left out: values computed from graph inputs and constants alone (e.g. BERT's additive
    -10000 attention mask, which exporters emit on purpose) and Softmax inputs (softmax is
    shift-invariant, so masked logits near -1e4 are harmless there).
    """
    initializers = {t.name for t in model.graph.initializer}
    weighted = set(initializers)  # then every value computed from a weight
    softmax_inputs = set()
    for node in model.graph.node:  # ONNX requires topological order
        if any(i in weighted for i in node.input):
            weighted.update(node.output)
        if node.op_type in ("Softmax", "LogSoftmax"):
            softmax_inputs.add(node.input[0])
    return weighted - softmax_inputs - initializers


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


def _runtime_standard_ops() -> frozenset:
    """Operators ONNX Runtime registers in the standard domain, which ONNX itself does not have
    (onnxruntime-genai's models carry SimplifiedLayerNormalization there): the compiler expands
    them as it does ONNX Runtime's contrib operators."""
    from compiler.onnx.contrib import EXPANSIONS
    return frozenset(op for domain, op in EXPANSIONS if domain == "")


# what the full check raises: a node or graph against ONNX, or shapes that contradict the declared ones
_REFUSALS = (onnx.checker.ValidationError, onnx.shape_inference.InferenceError)


def checker_problem(path: Path) -> str | None:
    """onnx.checker's full check of ``path``, or the first line of what it refuses. The check of
    a model carrying ONNX Runtime's standard-domain operators runs on a copy (next to it, sharing
    its external data) with those nodes in ONNX Runtime's own domain, where the checker does not
    look for their schema: the rest of the model is still checked."""
    try:
        onnx.checker.check_model(str(path), full_check=True)
        return None
    except _REFUSALS as exc:
        refused = str(exc).splitlines()[0]
    model = onnx.load(str(path), load_external_data=False)
    extras = _runtime_standard_ops()
    from compiler.onnx.load import all_nodes
    moved = [n for n in all_nodes(model.graph) if n.domain in ("", "ai.onnx") and n.op_type in extras]
    if not moved:
        return refused
    for node in moved:
        node.domain = "com.microsoft"
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))
    fd, tmp = tempfile.mkstemp(suffix=".onnx", prefix=".checker.", dir=path.parent)
    os.close(fd)
    try:
        onnx.save_model(model, tmp)
        onnx.checker.check_model(tmp, full_check=True)
        return None
    except _REFUSALS as exc:
        return str(exc).splitlines()[0]
    finally:
        Path(tmp).unlink(missing_ok=True)


def run_ort(path: Path, feeds: dict, activations: bool = False) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Graph outputs, and (with ``activations``) all float intermediates too."""
    if not activations:
        return _ort_session(path).run(None, feeds), []
    n_out = len(onnx.load(str(path), load_external_data=False).graph.output)
    tmp = _with_all_outputs(path)
    try:
        values = _ort_session(tmp).run(None, feeds)
    finally:
        tmp.unlink(missing_ok=True)
    return values[:n_out], values[n_out:]


def _spread(res: CheckResult, optimized: list, plain: list) -> None:
    pairs = [(a, b) for a, b in zip(optimized, plain) if np.issubdtype(a.dtype, np.floating) and a.size]
    if not pairs:
        return
    res.ort_spread = float(max(np.abs(a.astype(np.float64) - b).max() for a, b in pairs))
    scale = max(float(np.abs(a).max()) for a, _ in pairs)
    limit = SPREAD_HEADROOM * (FP32_ATOL + FP32_RTOL * scale)
    if res.ort_spread > limit:
        res.problems.append(f"ill-conditioned: ONNX Runtime optimized vs unoptimized differ by "
                            f"{res.ort_spread:.2g} (> {limit:.2g}, a tenth of the fp32 tolerance)")


def check_row(row: Row, cache_dir=None, activations: bool = False) -> CheckResult:
    res = CheckResult(row.name, published=row.params)
    start = time.perf_counter()
    try:
        path = build_model(row, cache_dir)
        problem = checker_problem(path)
        res.checker_ok = problem is None
        if problem:
            res.problems.append(f"onnx.checker: {problem}")
        res.params = count_parameters(onnx.load(str(path), load_external_data=False))
        if row.params:
            res.params_ok = abs(res.params - row.params) <= PARAM_TOLERANCE * row.params
            if not res.params_ok:
                res.problems.append(f"{res.params:,} parameters, published {row.params:,} (more than 1 % apart)")
        feeds = make_feeds(row, path, batch=1, seed=row.seed)
        outputs, inner = run_ort(path, feeds, activations)
        res.ran = True
        _spread(res, outputs, _ort_session(path, optimize=False).run(None, feeds))
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
