"""Single-node and small-graph ONNX models the GPU tests and benchmarks check against ref.

Each case: (id, model builder) where the builder returns an ``onnx.ModelProto``; inputs are
drawn fresh (never zeros) by ``feeds_for``.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from compiler.onnx.testing import model_of

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def model(nodes, inputs, outputs, inits=(), opset=18):
    return model_of(helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits)), opset)


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


R = np.random.default_rng(1234)


def w(*shape, scale=0.2):
    return (R.standard_normal(shape) * scale).astype(np.float32)


def unary(op, shape=(2, 3, 4, 5), **attrs):
    return model([helper.make_node(op, ["x"], ["y"], **attrs)], [vi("x", shape)], [vi("y", None)])


def binary(op, a=(2, 3, 4), b=(3, 4), out_t=F, **attrs):
    return model([helper.make_node(op, ["a", "b"], ["y"], **attrs)], [vi("a", a), vi("b", b)],
                 [vi("y", None, out_t)])


def chain():
    n = [helper.make_node("Add", ["x", "b"], ["t0"]), helper.make_node("Mul", ["t0", "s"], ["t1"]),
         helper.make_node("Relu", ["t1"], ["t2"]), helper.make_node("Sigmoid", ["t2"], ["t3"]),
         helper.make_node("Sub", ["t3", "x"], ["y"]), helper.make_node("Tanh", ["t0"], ["z"])]
    return model(n, [vi("x", (4, 8, 16))], [vi("y", None), vi("z", None)],
                 [init("b", w(16)), init("s", np.float32(1.5))])


def conv(x=(2, 8, 14, 14), wshape=(16, 8, 3, 3), bias=True, **attrs):
    ins = ["x", "w"] + (["b"] if bias else [])
    inits = [init("w", w(*wshape))] + ([init("b", w(wshape[0]))] if bias else [])
    return model([helper.make_node("Conv", ins, ["y"], **attrs)], [vi("x", x)], [vi("y", None)], inits)


def conv_transpose(x=(2, 8, 6, 7), wshape=(8, 4, 4, 4), **attrs):
    inits = [init("w", w(*wshape)), init("b", w(wshape[1] * attrs.get("group", 1)))]
    return model([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)], [vi("x", x)],
                 [vi("y", None)], inits)
def pad_then_conv():
    """TensorFlow's SAME padding of a strided convolution as tf2onnx writes it: a Pad first."""
    nodes = [helper.make_node("Pad", ["x", "p"], ["xp"]),
             helper.make_node("Conv", ["xp", "w", "b"], ["y"], strides=[2, 2])]
    inits = [init("p", np.array([0, 0, 0, 0, 0, 0, 1, 1], np.int64)), init("w", w(16, 8, 3, 3)), init("b", w(16))]
    return model(nodes, [vi("x", (2, 8, 14, 14))], [vi("y", None)], inits)


def conv_bn_relu():
    c = 16
    n = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "g", "bb", "m", "v"], ["bn"]),
         helper.make_node("Relu", ["bn"], ["r"]),
         helper.make_node("Add", ["r", "x2"], ["y"])]
    inits = [init("w", w(c, 8, 3, 3)), init("g", 1 + w(c)), init("bb", w(c)), init("m", w(c)),
             init("v", np.abs(w(c)) + 0.5)]
    return model(n, [vi("x", (2, 8, 10, 10)), vi("x2", (2, c, 10, 10))], [vi("y", None)], inits)


def bn():
    c = 6
    n = [helper.make_node("BatchNormalization", ["x", "g", "bb", "m", "v"], ["y"], epsilon=1e-3)]
    inits = [init("g", 1 + w(c)), init("bb", w(c)), init("m", w(c)), init("v", np.abs(w(c)) + 0.5)]
    return model(n, [vi("x", (2, c, 5, 5))], [vi("y", None)], inits)


def matmul(a=(2, 5, 16), b=(16, 8)):
    return model([helper.make_node("MatMul", ["a", "w"], ["y"])], [vi("a", a)], [vi("y", None)],
                 [init("w", w(*b))])


def gemm():
    return model([helper.make_node("Gemm", ["a", "w", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)],
                 [vi("a", (4, 16))], [vi("y", None)], [init("w", w(8, 16)), init("c", w(8))])


def reduce(op, axes=(1,), keepdims=1):
    return model([helper.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims)], [vi("x", (3, 4, 5))],
                 [vi("y", None)], [init("axes", np.array(axes, np.int64))])


def pool(op, shape=(2, 3, 11, 11), **attrs):
    return model([helper.make_node(op, ["x"], ["y"], **attrs)], [vi("x", shape)], [vi("y", None)])


def layernorm():
    return model([helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-5)],
                 [vi("x", (2, 7, 32))], [vi("y", None)], [init("g", 1 + w(32)), init("b", w(32))])


def instnorm():
    return model([helper.make_node("InstanceNormalization", ["x", "g", "b"], ["y"])],
                 [vi("x", (2, 4, 6, 6))], [vi("y", None)], [init("g", 1 + w(4)), init("b", w(4))])


def movement(op, shape, extra_inits=(), inputs_extra=(), **attrs):
    names = ["x"] + [n for n, _ in extra_inits]
    return model([helper.make_node(op, names, ["y"], **attrs)], [vi("x", shape)], [vi("y", None)],
                 [init(n, v) for n, v in extra_inits])


def gather_runtime():
    return model([helper.make_node("Gather", ["e", "i"], ["y"], axis=0)], [vi("i", (2, 7), I64)],
                 [vi("y", None)], [init("e", w(50, 16))])


def concat():
    return model([helper.make_node("Concat", ["a", "b"], ["y"], axis=1)],
                 [vi("a", (2, 3, 4)), vi("b", (2, 5, 4))], [vi("y", None)])


def split():
    return model([helper.make_node("Split", ["x", "s"], ["y0", "y1"], axis=1)], [vi("x", (2, 6, 3))],
                 [vi("y0", None), vi("y1", None)], [init("s", np.array([2, 4], np.int64))])


def clip():
    return model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], [vi("x", (3, 4))], [vi("y", None)],
                 [init("lo", np.float32(-0.5)), init("hi", np.float32(0.7))])


def where():
    n = [helper.make_node("Greater", ["a", "b"], ["c"]), helper.make_node("Where", ["c", "a", "b"], ["y"])]
    return model(n, [vi("a", (3, 4)), vi("b", (3, 4))], [vi("y", None)])


def cast_chain():
    n = [helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT32),
         helper.make_node("Cast", ["i"], ["y"], to=TensorProto.FLOAT)]
    return model(n, [vi("x", (3, 4))], [vi("y", None)])


def einsum():
    return model([helper.make_node("Einsum", ["a", "b"], ["y"], equation="bij,bjk->bik")],
                 [vi("a", (2, 3, 4)), vi("b", (2, 4, 5))], [vi("y", None)])


def resize_nearest():
    return model([helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="nearest")],
                 [vi("x", (1, 2, 4, 4))], [vi("y", None)],
                 [init("sc", np.array([1, 1, 2, 2], np.float32))])


def lstm(hidden=8, inp=6, seq=5, batch=2, dirs=1):
    W, Rw, B = w(dirs, 4 * hidden, inp), w(dirs, 4 * hidden, hidden), w(dirs, 8 * hidden)
    direction = "bidirectional" if dirs == 2 else "forward"
    n = [helper.make_node("LSTM", ["x", "W", "R", "B", "", "h0", "c0"], ["y", "yh", "yc"], hidden_size=hidden,
                          direction=direction)]
    return model(n, [vi("x", (seq, batch, inp)), vi("h0", (dirs, batch, hidden)), vi("c0", (dirs, batch, hidden))],
                 [vi("y", None), vi("yh", None), vi("yc", None)], [init("W", W), init("R", Rw), init("B", B)])


def gru(hidden=8, inp=6, seq=5, batch=2, lbr=1, dirs=1):
    W, Rw, B = w(dirs, 3 * hidden, inp), w(dirs, 3 * hidden, hidden), w(dirs, 6 * hidden)
    direction = "bidirectional" if dirs == 2 else "forward"
    n = [helper.make_node("GRU", ["x", "W", "R", "B", "", "h0"], ["y", "yh"], hidden_size=hidden,
                          linear_before_reset=lbr, direction=direction)]
    return model(n, [vi("x", (seq, batch, inp)), vi("h0", (dirs, batch, hidden))],
                 [vi("y", None), vi("yh", None)], [init("W", W), init("R", Rw), init("B", B)])


def audio_front():
    """Whisper's audio front end: two 1-D convolutions (the second strided), each followed by a
    GELU by Erf, then time-major (N, T, C) for the transformer."""
    def gelu(x, y):
        return [helper.make_node("Div", [x, "sqrt2"], [f"{y}t"]), helper.make_node("Erf", [f"{y}t"], [f"{y}e"]),
                helper.make_node("Add", [f"{y}e", "one"], [f"{y}e1"]),
                helper.make_node("Mul", [x, f"{y}e1"], [f"{y}g"]), helper.make_node("Mul", [f"{y}g", "half"], [y])]
    n = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1]), *gelu("c1", "a1"),
         helper.make_node("Conv", ["a1", "w2", "b2"], ["c2"], pads=[1, 1], strides=[2]), *gelu("c2", "a2"),
         helper.make_node("Transpose", ["a2"], ["y"], perm=[0, 2, 1])]
    inits = [init("w1", w(16, 6, 3)), init("b1", w(16)), init("w2", w(16, 16, 3)), init("b2", w(16)),
             init("sqrt2", np.float32(1.4142135)), init("one", np.float32(1)), init("half", np.float32(0.5))]
    return model(n, [vi("x", (2, 6, 40))], [vi("y", None)], inits)


def attention():
    """A BERT-like block: MatMul, Softmax, LayerNorm, Gelu-by-Erf; used for partition tests."""
    d = 16
    n = [helper.make_node("MatMul", ["x", "wq"], ["q"]), helper.make_node("MatMul", ["x", "wk"], ["k"]),
         helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
         helper.make_node("MatMul", ["q", "kt"], ["s"]), helper.make_node("Mul", ["s", "sc"], ["s2"]),
         helper.make_node("Softmax", ["s2"], ["p"], axis=-1), helper.make_node("MatMul", ["p", "x"], ["o"]),
         helper.make_node("Add", ["o", "x"], ["r"]),
         helper.make_node("LayerNormalization", ["r", "g", "b"], ["ln"], axis=-1),
         helper.make_node("Div", ["ln", "sqrt2"], ["t"]), helper.make_node("Erf", ["t"], ["e"]),
         helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["ln", "e1"], ["g1"]),
         helper.make_node("Mul", ["g1", "half"], ["y"])]
    inits = [init("wq", w(d, d)), init("wk", w(d, d)), init("sc", np.float32(0.25)), init("g", 1 + w(d)),
             init("b", w(d)), init("sqrt2", np.float32(1.4142135)), init("one", np.float32(1)),
             init("half", np.float32(0.5))]
    return model(n, [vi("x", (2, 6, d))], [vi("y", None)], inits)


CASES = {
    "chain": chain, "attention": attention,
    "relu": lambda: unary("Relu"), "sigmoid": lambda: unary("Sigmoid"), "tanh": lambda: unary("Tanh"),
    "exp": lambda: unary("Exp"), "erf": lambda: unary("Erf"), "neg": lambda: unary("Neg"),
    "abs": lambda: unary("Abs"), "leakyrelu": lambda: unary("LeakyRelu", alpha=0.1),
    "elu": lambda: unary("Elu"), "hardsigmoid": lambda: unary("HardSigmoid"),
    "hardswish": lambda: unary("HardSwish"), "softplus": lambda: unary("Softplus"),
    "add": lambda: binary("Add"), "sub": lambda: binary("Sub"), "mul": lambda: binary("Mul"),
    "div": lambda: binary("Div"), "max": lambda: binary("Max"), "min": lambda: binary("Min"),
    "equal": lambda: binary("Less", out_t=TensorProto.BOOL), "prelu": lambda: binary("PRelu", b=(3, 1)),
    "clip": clip, "where": where, "cast": cast_chain,
    "conv3x3": lambda: conv(pads=[1, 1, 1, 1]), "conv7x7s2": lambda: conv((2, 3, 23, 23), (8, 3, 7, 7), strides=[2, 2], pads=[3, 3, 3, 3]),
    "conv1x1": lambda: conv(wshape=(16, 8, 1, 1), bias=False),
    "conv_grouped": lambda: conv(wshape=(16, 2, 3, 3), group=4, pads=[1, 1, 1, 1]),
    "conv_depthwise": lambda: conv(wshape=(8, 1, 3, 3), group=8, pads=[1, 1, 1, 1], strides=[2, 2]),
    "conv_dilated_asym": lambda: conv(dilations=[2, 2], pads=[2, 1, 2, 1]),
    "conv1d": lambda: conv((2, 8, 30), (16, 8, 3), pads=[1, 1]),
    "conv1d_strided_dilated": lambda: conv((2, 8, 41), (12, 8, 5), strides=[2], dilations=[2], pads=[4, 3]),
    "conv1d_depthwise": lambda: conv((2, 16, 33), (16, 1, 7), group=16, pads=[3, 3]),
    "conv1d_grouped": lambda: conv((2, 16, 20), (32, 4, 3), bias=False, group=4, pads=[1, 1]),
    "conv1d_waveform": lambda: conv((2, 1, 400), (32, 1, 10), bias=False, strides=[5]),
    "audio_front": audio_front,
    "conv3d": lambda: conv((2, 8, 5, 9, 9), (16, 8, 3, 3, 3), pads=[1] * 6),
    "conv3d_stem": lambda: conv((2, 3, 6, 20, 20), (16, 3, 3, 7, 7), bias=False, strides=[1, 2, 2],
                                pads=[1, 3, 3, 1, 3, 3]),
    "conv_transpose": lambda: conv_transpose(strides=[2, 2], pads=[1, 1, 1, 1]),
    "conv_transpose1d": lambda: conv_transpose((2, 16, 20), (16, 8, 16), strides=[8], pads=[4, 4]),
    "conv_transpose_dilated": lambda: conv_transpose(strides=[2, 2], dilations=[2, 1], pads=[1, 0, 1, 0]),
    "pad_then_conv": pad_then_conv,
    "conv_bn_relu_add": conv_bn_relu, "batchnorm": bn,
    "matmul": matmul, "matmul_batched": lambda: matmul((3, 4, 16), (3, 16, 8)), "gemm": gemm,
    "einsum": einsum,
    "reduce_mean": lambda: reduce("ReduceMean"), "reduce_sum": lambda: reduce("ReduceSum", (0, 2)),
    "reduce_max": lambda: reduce("ReduceMax", (2,), 0),
    "maxpool": lambda: pool("MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    "maxpool_ceil": lambda: pool("MaxPool", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    "maxpool1d": lambda: pool("MaxPool", shape=(2, 8, 33), kernel_shape=[3], strides=[2], pads=[1, 1]),
    "avgpool3d": lambda: pool("AveragePool", shape=(2, 4, 5, 9, 9), kernel_shape=[3, 3, 3], strides=[2, 2, 2],
                              pads=[1] * 6, ceil_mode=1),
    "avgpool": lambda: pool("AveragePool", kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]),
    "avgpool_incl": lambda: pool("AveragePool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1),
    "globalavgpool": lambda: pool("GlobalAveragePool"),
    "softmax": lambda: unary("Softmax", axis=-1), "logsoftmax": lambda: unary("LogSoftmax", axis=1),
    "layernorm": layernorm, "instancenorm": instnorm,
    "transpose": lambda: movement("Transpose", (2, 3, 4, 5), perm=[0, 2, 3, 1]),
    "slice": lambda: movement("Slice", (6, 8), [("st", np.array([1, 0], np.int64)), ("en", np.array([5, 8], np.int64)),
                                                 ("ax", np.array([0, 1], np.int64)), ("sp", np.array([2, 3], np.int64))]),
    "pad_const": lambda: movement("Pad", (2, 3, 4, 4), [("p", np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)),
                                                         ("v", np.float32(0.75))]),
    "pad_reflect": lambda: movement("Pad", (2, 3, 4, 4), [("p", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))], mode="reflect"),
    "pad_edge": lambda: movement("Pad", (2, 3, 5, 4), [("p", np.array([0, 0, 2, 0, 0, 0, 1, 3], np.int64))], mode="edge"),
    "pad_crop_axes": lambda: movement("Pad", (2, 6, 5, 5), [("p", np.array([-1, 1, 2, -2], np.int64)),
                                                            ("v", np.float32(-1.5)), ("a", np.array([2, 3], np.int64))]),
    "reshape": lambda: movement("Reshape", (2, 3, 4), [("s", np.array([6, -1], np.int64))]),
    "expand": lambda: movement("Expand", (3, 1), [("s", np.array([2, 3, 4], np.int64))]),
    "tile": lambda: movement("Tile", (2, 3), [("r", np.array([2, 2], np.int64))]),
    "depthtospace": lambda: movement("DepthToSpace", (1, 8, 2, 3), blocksize=2),
    "gather": gather_runtime, "concat": concat, "split": split, "resize_nearest": resize_nearest,
    "lstm": lstm, "gru": gru, "gru_lbr0": lambda: gru(lbr=0),
    "lstm_bidirectional": lambda: lstm(dirs=2), "gru_bidirectional": lambda: gru(dirs=2),
}


_built: dict = {}


def build(name: str) -> bytes:
    """The serialized model of case ``name`` (built once, so every compile sees one set of
    weights)."""
    if name not in _built:
        _built[name] = CASES[name]().SerializeToString()
    return _built[name]


def feeds_for(program, seed: int = 0) -> dict:
    """Fresh random inputs for every parameter of ``program`` (never zeros)."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in program.main.parameters():
        s = p.shape
        if s.dtype.startswith("int"):
            out[p.name] = rng.integers(0, 7, size=s.lens).astype(s.dtype)
        elif s.dtype == "bool":
            out[p.name] = rng.random(s.lens) > 0.5
        else:
            out[p.name] = rng.standard_normal(s.lens).astype(s.dtype)
    return out


def resize_linear():
    return model([helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="linear",
                                   coordinate_transformation_mode="half_pixel")],
                 [vi("x", (1, 3, 8, 6))], [vi("y", None)],
                 [init("sc", np.array([1, 1, 0.5, 0.5], np.float32))])


def resize_linear_up():
    return model([helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="linear",
                                   coordinate_transformation_mode="align_corners")],
                 [vi("x", (1, 2, 4, 5))], [vi("y", None)],
                 [init("sc", np.array([1, 1, 2, 1.5], np.float32))])


CASES.update({"resize_linear": resize_linear, "resize_linear_up": resize_linear_up,
              "spacetodepth": lambda: movement("SpaceToDepth", (1, 2, 4, 6), blocksize=2),
              "instancenorm_groups": instnorm})


def conv_add_relu(relu_only=False):
    """The ResNet tail: relu(bn(conv(x)) + identity), and the plain conv+bn+relu."""
    c = 8
    n = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "g", "bb", "m", "v"], ["bn"])]
    if relu_only:
        n.append(helper.make_node("Relu", ["bn"], ["y"]))
    else:
        n += [helper.make_node("Add", ["bn", "x"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    inits = [init("w", w(c, c, 3, 3)), init("g", 1 + w(c)), init("bb", w(c)), init("m", w(c)),
             init("v", np.abs(w(c)) + 0.5)]
    return model(n, [vi("x", (2, c, 9, 9))], [vi("y", None)], inits)


def conv_chain_pool_concat():
    """Channels-last through pool, concat, global pool and flatten."""
    n = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["a"], ["r"]),
         helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
         helper.make_node("Conv", ["p", "w2"], ["b"]), helper.make_node("Concat", ["p", "b"], ["cat"], axis=1),
         helper.make_node("AveragePool", ["cat"], ["ap"], kernel_shape=[2, 2], strides=[1, 1]),
         helper.make_node("GlobalAveragePool", ["ap"], ["g"]), helper.make_node("Flatten", ["g"], ["y"])]
    return model(n, [vi("x", (2, 4, 12, 12))], [vi("y", None)], [init("w1", w(8, 4, 3, 3)), init("w2", w(6, 8, 1, 1))])


def dense_block():
    """DenseNet's pattern: channels-last concatenations feeding batch-norm + ReLU + convolution."""
    c, g = 8, 4
    n = [helper.make_node("Conv", ["x", "w0"], ["f0"], pads=[1, 1, 1, 1])]
    inits = [init("w0", w(c, 3, 3, 3))]
    feats, width = ["f0"], c
    for k in range(3):
        n += [helper.make_node("Concat", list(feats), [f"cat{k}"], axis=1) if k else
              helper.make_node("Identity", ["f0"], [f"cat{k}"]),
              helper.make_node("BatchNormalization", [f"cat{k}", f"g{k}", f"b{k}", f"m{k}", f"v{k}"], [f"bn{k}"]),
              helper.make_node("Relu", [f"bn{k}"], [f"r{k}"]),
              helper.make_node("Conv", [f"r{k}", f"w{k + 1}"], [f"f{k + 1}"], pads=[1, 1, 1, 1])]
        inits += [init(f"g{k}", 1 + w(width)), init(f"b{k}", w(width)), init(f"m{k}", w(width)),
                  init(f"v{k}", np.abs(w(width)) + 0.5), init(f"w{k + 1}", w(g, width, 3, 3))]
        feats.append(f"f{k + 1}")
        width += g
    n.append(helper.make_node("Concat", feats, ["y"], axis=1))
    return model(n, [vi("x", (2, 3, 9, 9))], [vi("y", None)], inits)


def residual_block():
    """conv(relu(conv(a) + a)) with a = relu(conv(x)): the residual and the block's tail inside the
    graph (in fp16 mode both fp16, away from the casts at its edges), so the add fuses into the
    second convolution."""
    c = 8
    n = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c1"], ["a"]),
         helper.make_node("Conv", ["a", "w2"], ["c2"], pads=[1, 1, 1, 1]),
         helper.make_node("Add", ["c2", "a"], ["s"]), helper.make_node("Relu", ["s"], ["r"]),
         helper.make_node("Conv", ["r", "w3"], ["y"])]
    inits = [init("w1", w(c, c, 3, 3)), init("w2", w(c, c, 3, 3)), init("w3", w(c, c, 1, 1))]
    return model(n, [vi("x", (2, c, 9, 9))], [vi("y", None)], inits)


CASES.update({"residual_block": residual_block, "conv_add_relu": conv_add_relu, "conv_relu": lambda: conv_add_relu(True),
              "conv_chain_pool_concat": conv_chain_pool_concat, "dense_block": dense_block})
