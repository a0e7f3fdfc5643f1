"""onnx's own node test cases (``onnx.backend.test``, built in memory from the installed onnx) run
through ``compiler.onnx_backend`` on the target named by PERFBOT_BACKEND_TARGET (``ref`` by
default).

Each case either passes or is listed in conformance_expected_failures.toml with its reason (an
element type outside the supported set, a sequence/optional value, an operator the compiler does
not implement, ...). A listed case runs as a strict expected failure: one that passes fails the
run (except unseeded random ops, which may match by chance), and so does an unlisted case that
fails.
"""
from __future__ import annotations

import tomllib
import warnings
from pathlib import Path

import onnx
import onnx.backend.test
import pytest
from onnx.backend.test.loader import load_model_tests

from compiler.onnx_backend import PerfbotBackend, default_target

# The operators the benchmark models need (the compiler issue's list); their cases are the
# "listed-op cases": every op of the case's graph is one of these.
LISTED_OPS = frozenset("""
Conv ConvTranspose BatchNormalization InstanceNormalization LayerNormalization Relu LeakyRelu PRelu Elu
Sigmoid HardSigmoid HardSwish Tanh Clip Erf Gelu Exp Log Sqrt Pow Neg Abs Reciprocal Add Sub Mul Div
Sum Min Max Mean Where Equal Less Greater Not And Or Cast MaxPool AveragePool GlobalAveragePool
GlobalMaxPool Gemm MatMul Einsum Flatten Reshape Transpose Concat Split Slice Gather GatherElements
Squeeze Unsqueeze Shape Size Constant ConstantOfShape Expand Tile Range Pad Resize Upsample
DepthToSpace SpaceToDepth Softmax LogSoftmax ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd
ReduceL2 ArgMax TopK Identity Dropout LSTM GRU RNN Trilu If Loop""".split())

# Every case expected to fail, with its reason, from a list kept beside this file. It is not
# worked out from the registry under test: an operator that goes missing must fail its cases.
EXPECTED_FAILURES_FILE = Path(__file__).with_name("conformance_expected_failures.toml")
TYPE_REASON = "element type outside float64/32/16, bfloat16, (u)int8-64 and bool"


def _expected_failures() -> dict[str, tuple[str, bool]]:
    """case name -> (reason, strict); strict is false only for cases that may pass by chance."""
    groups = tomllib.loads(EXPECTED_FAILURES_FILE.read_text())["expected_failures"]
    return {case: (g["reason"], g.get("strict", True)) for g in groups for case in g["cases"]}


EXPECTED_FAILURES = _expected_failures()


def _graphs(graph: onnx.GraphProto):
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(attr.g)
            for g in attr.graphs:
                yield from _graphs(g)


def op_types(model: onnx.ModelProto) -> set[str]:
    return {n.op_type for g in _graphs(model.graph) for n in g.node}


def _node_cases() -> dict[str, onnx.ModelProto]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {t.name: t.model for t in load_model_tests(kind="node")}


NODE_CASES = _node_cases()
DEVICE = "cuda" if default_target() == "gpu" else "cpu"


def _build_test_class():
    backend_test = onnx.backend.test.BackendTest(PerfbotBackend, __name__)
    cls = backend_test.test_cases["OnnxBackendNodeModelTest"]
    for attr in [a for a in vars(cls) if a.startswith("test_")]:
        case = attr.rsplit("_", 1)[0]
        if not attr.endswith("_" + DEVICE) or case not in NODE_CASES:
            delattr(cls, attr)
            continue
        if case in EXPECTED_FAILURES:
            reason, strict = EXPECTED_FAILURES[case]
            setattr(cls, attr, pytest.mark.xfail(reason=reason, strict=strict)(getattr(cls, attr)))
    return cls


OnnxBackendNodeModelTest = _build_test_class()
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def test_listed_op_failures_stay_within_budget():
    """Cases of the listed ops fail only for unsupported element types, plus at most 5 % for
    other reasons."""
    listed = {n: m for n, m in NODE_CASES.items() if op_types(m) <= LISTED_OPS}
    other = [n for n in listed if n in EXPECTED_FAILURES and EXPECTED_FAILURES[n][0] != TYPE_REASON]
    assert len(other) <= 0.05 * len(listed), other


def test_every_expected_failure_names_a_case():
    """An entry left behind by a renamed or dropped onnx case is taken out of the list."""
    assert sorted(set(EXPECTED_FAILURES) - set(NODE_CASES)) == []
