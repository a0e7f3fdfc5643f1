"""The op registry: the benchmark models' operators are all there, and compute results are
arrays even for 0-d inputs."""
from __future__ import annotations

import numpy as np

from compiler.ops.registry import get_op, registered_ops

BENCHMARK_OPS = """Conv ConvTranspose BatchNormalization InstanceNormalization LayerNormalization Relu LeakyRelu
PRelu Elu Sigmoid HardSigmoid HardSwish Tanh Clip Erf Gelu Exp Log Sqrt Pow Neg Abs Reciprocal Add Sub Mul
Div Sum Min Max Mean Where Equal Less Greater Not And Or Cast MaxPool AveragePool GlobalAveragePool
GlobalMaxPool Gemm MatMul Einsum Flatten Reshape Transpose Concat Split Slice Gather GatherElements Squeeze
Unsqueeze Shape Size Constant ConstantOfShape Expand Tile Range Pad Resize Upsample DepthToSpace
SpaceToDepth Softmax LogSoftmax ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd ReduceL2 ArgMax TopK
Identity Dropout LSTM GRU RNN Trilu If Loop get_tuple_elem""".split()


def test_every_benchmark_operator_is_registered():
    missing = sorted(set(BENCHMARK_OPS) - set(registered_ops()))
    assert not missing


def test_zero_dimensional_results_are_arrays():
    x = np.array(0.5, np.float32)
    for name in ("Exp", "Relu", "IsNaN", "Sigmoid"):
        out = get_op(name).compute({}, x)
        assert isinstance(out, np.ndarray) and out.shape == ()
    assert isinstance(get_op("Gather").compute({"axis": 0}, np.arange(3), np.array(1)), np.ndarray)


def test_pointwise_ops_keep_the_broadcast_shape():
    from compiler.ir import Shape
    a, b = Shape("float32", (2, 1, 4)), Shape("float32", (3, 1))
    for name in ("Add", "Mul", "Max", "Where"):
        op = get_op(name)
        assert op.pointwise
        inputs = [Shape("bool", (3, 1)), a, b] if name == "Where" else [a, b]
        assert op.shape({}, inputs, [None] * len(inputs)).lens == (2, 3, 4)
