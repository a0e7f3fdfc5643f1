"""Window layouts and window attention as vision transformers export them (torchvision's Swin
and MaxViT), for the rearrangement and attention tests on the cpu, emulated and real gpu
targets. Inputs come from ``feeds_for``: fresh random values, never zeros."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from compiler.onnx.testing import model_of

F = TensorProto.FLOAT


def init_of(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def i64_of(name, values):
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def feeds_for(onnx_model, seed=5):
    rng = np.random.default_rng(seed)
    return {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in onnx_model.graph.input}


def roll_nodes(src, axis, shift, n, tag):
    """torch.roll of ``src`` by ``shift`` along ``axis`` of length ``n``, as its exporter writes it."""
    cut = (-shift) % n
    inits = [i64_of(f"{tag}_s0", [cut]), i64_of(f"{tag}_e0", [n]), i64_of(f"{tag}_s1", [0]), i64_of(f"{tag}_e1", [cut]),
             i64_of(f"{tag}_ax", [axis])]
    nodes = [helper.make_node("Slice", [src, f"{tag}_s0", f"{tag}_e0", f"{tag}_ax"], [f"{tag}_a"]),
             helper.make_node("Slice", [src, f"{tag}_s1", f"{tag}_e1", f"{tag}_ax"], [f"{tag}_b"]),
             helper.make_node("Concat", [f"{tag}_a", f"{tag}_b"], [tag], axis=axis)]
    return nodes, inits


def rolled_windows(b=2, size=8, window=4, c=6, second_source=False, middle_output=False):
    """x (b, size, size, c) -> Relu -> roll by -window/2 along both image axes -> window partition
    (b * windows, window², c) -> Relu. ``second_source``: the second roll's Concat also takes a
    slice of another input; ``middle_output``: the first roll is an output too."""
    nodes = [helper.make_node("Relu", ["x"], ["r"])]
    inits = []
    for axis, src, tag in ((1, "r", "roll1"), (2, "roll1", "roll2")):
        more_nodes, more_inits = roll_nodes(src, axis, -(window // 2), size, tag)
        nodes += more_nodes
        inits += more_inits
    if second_source:
        nodes[-1] = helper.make_node("Concat", ["roll2_a", "y"], ["roll2"], axis=2)
    k = size // window
    inits += [i64_of("split", [b, k, window, k, window, c]), i64_of("merge", [b * k * k, window * window, c])]
    nodes += [helper.make_node("Reshape", ["roll2", "split"], ["grid"]),
              helper.make_node("Transpose", ["grid"], ["windows"], perm=[0, 1, 3, 2, 4, 5]),
              helper.make_node("Reshape", ["windows", "merge"], ["part"]),
              helper.make_node("Relu", ["part"], ["out"])]
    inputs = [helper.make_tensor_value_info("x", F, [b, size, size, c])]
    if second_source:
        inputs.append(helper.make_tensor_value_info("y", F, [b, size, window // 2, c]))
    outputs = [helper.make_tensor_value_info("out", F, None)]
    if middle_output:
        outputs.append(helper.make_tensor_value_info("roll1", F, None))
    return model_of(helper.make_graph(nodes, "g", inputs, outputs, initializer=inits), 18)


def shifted_window_attention(images=2, windows=4, heads=2, tokens=9, size=8, mask_reader=False):
    """q, k, v (images·windows, heads, tokens, size) -> scores · size^-½ + bias (heads, tokens,
    tokens) -> Reshape (images, windows, heads, tokens, tokens) + window mask (1, windows, 1,
    tokens, tokens) -> Reshape back -> Softmax -> · v. ``mask_reader``: the split scores are an
    output too."""
    rng = np.random.default_rng(11)
    b = images * windows
    window_mask = np.where(rng.random((1, windows, 1, tokens, tokens)) < 0.3, -100.0, 0.0).astype(np.float32)
    inits = [init_of("scale", np.float32(size ** -0.5)),
             init_of("bias", rng.standard_normal((heads, tokens, tokens)).astype(np.float32)),
             init_of("wmask", window_mask),
             init_of("split", np.array([images, windows, heads, tokens, tokens], np.int64)),
             init_of("merge", np.array([b, heads, tokens, tokens], np.int64))]
    nodes = [helper.make_node("Mul", ["q", "scale"], ["qs"]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["qs", "kt"], ["scores"]),
             helper.make_node("Add", ["scores", "bias"], ["biased"]),
             helper.make_node("Reshape", ["biased", "split"], ["by_window"]),
             helper.make_node("Add", ["by_window", "wmask"], ["masked"]),
             helper.make_node("Reshape", ["masked", "merge"], ["merged"]),
             helper.make_node("Softmax", ["merged"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["out"])]
    inputs = [helper.make_tensor_value_info(n, F, [b, heads, tokens, size]) for n in ("q", "k", "v")]
    outputs = [helper.make_tensor_value_info("out", F, None)]
    if mask_reader:
        outputs.append(helper.make_tensor_value_info("by_window", F, None))
    return model_of(helper.make_graph(nodes, "g", inputs, outputs, initializer=inits), 18)


def einsum_window_attention(batch=2, grid=3, heads=2, tokens=9, size=8, bias_lens=None):
    """MaxViT's: Einsum q·kᵀ over (batch, grid, heads, tokens, size) + bias -> Softmax -> Einsum · v."""
    rng = np.random.default_rng(12)
    bias_lens = bias_lens or (1, heads, tokens, tokens)
    inits = [init_of("scale", np.float32(size ** -0.5)),
             init_of("bias", rng.standard_normal(bias_lens).astype(np.float32))]
    nodes = [helper.make_node("Mul", ["k", "scale"], ["ks"]),
             helper.make_node("Einsum", ["q", "ks"], ["scores"], equation="BGHID,BGHJD->BGHIJ"),
             helper.make_node("Add", ["scores", "bias"], ["biased"]),
             helper.make_node("Softmax", ["biased"], ["p"], axis=4),
             helper.make_node("Einsum", ["p", "v"], ["out"], equation="BGHIJ,BGHJD->BGHID")]
    inputs = [helper.make_tensor_value_info(n, F, [batch, grid, heads, tokens, size]) for n in ("q", "k", "v")]
    outputs = [helper.make_tensor_value_info("out", F, None)]
    return model_of(helper.make_graph(nodes, "g", inputs, outputs, initializer=inits), 18)
