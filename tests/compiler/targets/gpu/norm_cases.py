"""ONNX graphs of the normalisations the gpu target recognises, as exporters write them, with their
near misses (shared by the pass tests and the gpu tests)."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from tests.compiler.targets.gpu.cases import init, model, vi


def group_norm_chain(shape=(2, 64, 9, 7), groups=32, silu=True, inst_scale=1.0, gamma_shape=None,
                     extra_output=None, conv=False, dtype="float32"):
    """PyTorch's opset-17 GroupNorm: Reshape -> InstanceNormalization(ones, zeros) -> Reshape ->
    Mul gamma -> Add beta [-> x * Sigmoid(x)]; ``conv`` puts a 1x1 convolution first (a
    channels-last input on the gpu target)."""
    t = TensorProto.FLOAT if dtype == "float32" else TensorProto.FLOAT16
    rng = np.random.default_rng(3)
    n, c = shape[:2]
    gamma_shape = gamma_shape or (c,) + (1,) * (len(shape) - 2)
    inits = [init("split", np.array([0, groups, -1], np.int64)), init("back", np.array(shape, np.int64)),
             init("ones", np.full(groups, inst_scale, dtype)), init("zeros", np.zeros(groups, dtype)),
             init("gamma", (1 + 0.3 * rng.standard_normal(gamma_shape)).astype(dtype)),
             init("beta", rng.standard_normal(gamma_shape).astype(dtype))]
    nodes = []
    if conv:
        inits.append(init("w", (rng.standard_normal((c, c, 1, 1)) / np.sqrt(c)).astype(dtype)))
        nodes.append(helper.make_node("Conv", ["x", "w"], ["x1"]))
    nodes += [helper.make_node("Reshape", ["x1" if conv else "x", "split"], ["r"]),
              helper.make_node("InstanceNormalization", ["r", "ones", "zeros"], ["i"], epsilon=1e-5),
              helper.make_node("Reshape", ["i", "back"], ["b"]),
              helper.make_node("Mul", ["b", "gamma"], ["m"]),
              helper.make_node("Add", ["m", "beta"], ["a" if silu else "y"])]
    if silu:
        nodes += [helper.make_node("Sigmoid", ["a"], ["s"]), helper.make_node("Mul", ["a", "s"], ["y"])]
    outputs = [vi("y", None, t)] + ([vi(extra_output, None, t)] if extra_output else [])
    return model(nodes, [vi("x", shape, t)], outputs, inits)


def group_normalization(shape=(2, 64, 9, 7), groups=32, per_group=False, dtype="float32", opset=18):
    """The GroupNormalization op (opset 18: scale and bias per group; 21: per channel)."""
    t = TensorProto.FLOAT if dtype == "float32" else TensorProto.FLOAT16
    rng = np.random.default_rng(4)
    k = groups if per_group else shape[1]
    inits = [init("g", (1 + 0.3 * rng.standard_normal(k)).astype(dtype)),
             init("b", rng.standard_normal(k).astype(dtype))]
    node = helper.make_node("GroupNormalization", ["x", "g", "b"], ["y"], num_groups=groups, epsilon=1e-5)
    return model([node], [vi("x", shape, t)], [vi("y", None, t)], inits, opset=opset)


def check_on_gpu(onnx_model, path: str, count: int, shape, dtype: str, tol: float, fp16: bool = False):
    """Compile ``onnx_model`` for the gpu target (``count`` steps on kernel ``path``) and compare
    it with the reference on fresh random inputs, three times: eager, recorded into CUDA graphs,
    replayed."""
    import compiler
    program = compiler.parse_onnx(onnx_model).compile("gpu", fp16=fp16)
    reference = compiler.parse_onnx(onnx_model).compile("ref")
    steps = program.compiled.context.roots["main"].body.steps
    assert [getattr(fn, "path", "") for _i, fn, _a, _d in steps].count(path) == count
    rng = np.random.default_rng(11)
    for _ in range(3):
        feeds = {"x": (rng.standard_normal(shape) * 2 + 0.5).astype(dtype)}
        for got, want in zip(program.run(feeds), reference.run(feeds)):
            np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=tol, atol=tol)


def rms_chain(shape=(2, 7, 96), form="reciprocal", weight=True, axis=-1, eps_after_root=False, power=2.0,
              extra_output=None, dtype="float32"):
    """Llama's RMSNorm as exported: Pow(x, 2) -> ReduceMean -> Add(eps) -> Sqrt -> Reciprocal ->
    Mul(x, .) [-> Mul(weight)]; ``form`` "div_one" spells the reciprocal Div(1, .), "div" divides
    x by the root; the other arguments make near misses."""
    t = TensorProto.FLOAT if dtype == "float32" else TensorProto.FLOAT16
    rng = np.random.default_rng(7)
    inits = [init("two", np.array(power, dtype)), init("eps", np.array(1e-6, dtype)), init("one", np.array(1.0, dtype)),
             init("axes", np.array([axis], np.int64)),
             init("w", (1 + 0.3 * rng.standard_normal(shape[-1])).astype(dtype))]
    nodes = [helper.make_node("Pow", ["x", "two"], ["p"]),
             helper.make_node("ReduceMean", ["p", "axes"], ["m"], keepdims=1)]
    if eps_after_root:
        nodes += [helper.make_node("Sqrt", ["m"], ["a"]), helper.make_node("Add", ["a", "eps"], ["s"])]
    else:
        nodes += [helper.make_node("Add", ["m", "eps"], ["a"]), helper.make_node("Sqrt", ["a"], ["s"])]
    if form == "div":
        nodes.append(helper.make_node("Div", ["x", "s"], ["n"]))
    else:
        nodes.append(helper.make_node("Reciprocal", ["s"], ["r"]) if form == "reciprocal"
                     else helper.make_node("Div", ["one", "s"], ["r"]))
        nodes.append(helper.make_node("Mul", ["x", "r"], ["n"]))
    out = "n"
    if weight:
        nodes.append(helper.make_node("Mul", ["w", "n"], ["y"]))
        out = "y"
    outputs = [vi(out, None, t)] + ([vi(extra_output, None, t)] if extra_output else [])
    return model(nodes, [vi("x", shape, t)], outputs, inits)


def rms_normalization(shape=(2, 7, 96), dtype="float32"):
    """The opset-23 RMSNormalization op over the last axis."""
    t = TensorProto.FLOAT if dtype == "float32" else TensorProto.FLOAT16
    w = (1 + 0.3 * np.random.default_rng(8).standard_normal(shape[-1])).astype(dtype)
    node = helper.make_node("RMSNormalization", ["x", "w"], ["y"], axis=-1, epsilon=1e-6)
    return model([node], [vi("x", shape, t)], [vi("y", None, t)], [init("w", w)], opset=23)


def check_in_emulation(onnx_model, feeds, tol: float):
    """Compile ``onnx_model`` for the gpu target with NumPy standing in for CuPy (the passes'
    rewrites, no kernel) and compare it with the reference on ``feeds``."""
    import compiler
    from compiler.targets.gpu.options import GpuOptions
    want = compiler.parse_onnx(onnx_model).compile("ref").run(feeds)
    got = compiler.parse_onnx(onnx_model).compile("gpu", gpu_options=GpuOptions(emulate=True)).run(feeds)
    for g, r in zip(got, want):
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol)


def residual_norm(shape=(2, 9, 96), norm="LayerNormalization", with_sum=True, bias=True, b_shape=None,
                  axis=-1, dtype="float32"):
    """A transformer block's end: s = Add(x, r(x)) -> norm(s); with ``with_sum`` s also goes on
    (here: s * 2 is a second output). ``b_shape`` broadcasts the Add's second operand."""
    t = TensorProto.FLOAT if dtype == "float32" else TensorProto.FLOAT16
    rng = np.random.default_rng(9)
    inits = [init("r", rng.standard_normal(b_shape or shape).astype(dtype)),
             init("g", (1 + 0.3 * rng.standard_normal(shape[-1])).astype(dtype)),
             init("bb", rng.standard_normal(shape[-1]).astype(dtype)), init("two", np.array(2.0, dtype))]
    nodes = [helper.make_node("Add", ["x", "r"], ["s"])]
    params = ["s", "g"] + (["bb"] if bias and norm == "LayerNormalization" else [])
    nodes.append(helper.make_node(norm, params, ["y"], axis=axis, epsilon=1e-5))
    outputs = [vi("y", None, t)]
    if with_sum:
        nodes.append(helper.make_node("Mul", ["s", "two"], ["z"]))
        outputs.append(vi("z", None, t))
    return model(nodes, [vi("x", shape, t)], outputs, inits, opset=23 if norm == "RMSNormalization" else 18)
