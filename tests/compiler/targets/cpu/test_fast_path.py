"""The cpu target's fast path (fused element-wise chains, kept result buffers, LSTM/GRU,
depthwise convolution, Gemm, LayerNorm, Softmax, Gather and reshape kernels) agrees with the ref
target on random inputs, with numba and without it (the NumPy spellings)."""
from __future__ import annotations

import numpy as np
import pytest

import compiler
from compiler.ir import Program, Shape
from compiler.targets.cpu.kernels import FAST, pick_kernel, pointwise
from compiler.targets.cpu.kernels.rnn import rnn_kernel
from compiler.targets.ref.plan import reference_kernel

RNG = np.random.default_rng(11)
F32 = "float32"


@pytest.fixture(params=["numba", "numpy"])
def jit(request, monkeypatch):
    """Run a test with the numba loops, and again as if numba were not installed."""
    if request.param == "numba":
        pytest.importorskip("numba")
    else:
        monkeypatch.setattr(pointwise, "_numba", lambda: None)
    return request.param


def random(lens, dtype=F32, low=None, rng=None):
    x = (rng or RNG).standard_normal(lens)
    if low is not None:
        x = np.abs(x) + low
    return x.astype(dtype)


def run_both(program_factory, feeds: dict) -> tuple[list, list, Program]:
    """Outputs of the ref and cpu targets, and the cpu program (to look at its instructions)."""
    ref = program_factory().compile("ref").run(feeds)
    cpu_program = program_factory().compile("cpu")
    return ref, cpu_program.run(feeds), cpu_program


def cpu_ops(program: Program) -> list[str]:
    return [i.op for m in program.modules.values() for i in m.instructions]


def assert_close(got, want, tol=2e-5):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


# ----- fused element-wise chains ------------------------------------------------------------------
def gelu(m, x, rng=None):
    scaled = m.add_instruction("Div", [x, m.add_literal(np.array(1.4142135, np.float32))])
    erf = m.add_instruction("Erf", [scaled])
    one = m.add_instruction("Add", [erf, m.add_literal(np.array(1.0, np.float32))])
    half = m.add_instruction("Mul", [x, m.add_literal(np.array(0.5, np.float32))])
    return m.add_instruction("Mul", [half, one])


def bias_relu(m, x, rng=None):
    b = m.add_literal(random((x.shape.lens[-1],), rng=rng))
    return m.add_instruction("Relu", [m.add_instruction("Add", [x, b])])


def swish(m, x, rng=None):
    return m.add_instruction("Mul", [x, m.add_instruction("Sigmoid", [x])])


def tanh_clip(m, x, rng=None):
    t = m.add_instruction("Tanh", [m.add_instruction("Mul", [x, m.add_literal(np.array(3.0, np.float32))])])
    return m.add_instruction("Clip", [t], attrs={"min": -0.5, "max": 0.75})


def normalise(m, x, rng=None):
    # (x - mean) / sqrt(var + eps) with per-row statistics broadcast over the last axis
    mean = m.add_literal(random(x.shape.lens[:-1] + (1,), rng=rng))
    var = m.add_literal(random(x.shape.lens[:-1] + (1,), low=0.1, rng=rng))
    centred = m.add_instruction("Sub", [x, mean])
    root = m.add_instruction("Sqrt", [m.add_instruction("Add", [var, m.add_literal(np.array(1e-5, np.float32))])])
    return m.add_instruction("Mul", [centred, m.add_instruction("Reciprocal", [root])])


def mixed(m, x, rng=None):
    e = m.add_instruction("Exp", [m.add_instruction("Neg", [m.add_instruction("Abs", [x])])])
    p = m.add_instruction("Pow", [e, m.add_literal(np.array(2.0, np.float32))])
    top = m.add_instruction("Min", [p, m.add_literal(np.array(0.9, np.float32))])
    return m.add_instruction("Max", [top, m.add_instruction("Tanh", [x])])


def hard_activations(m, x, rng=None):
    hs = m.add_instruction("HardSwish", [x])
    sig = m.add_instruction("HardSigmoid", [hs], attrs={"alpha": 0.3, "beta": 0.4})
    return m.add_instruction("LeakyRelu", [m.add_instruction("Sub", [sig, x])], attrs={"alpha": 0.1})


PATTERNS = {"hard": hard_activations, "gelu": gelu, "bias_relu": bias_relu, "swish": swish, "tanh_clip": tanh_clip,
            "normalise": normalise, "mixed": mixed}


@pytest.mark.parametrize("lens", [(2, 5, 16), (3, 7)])
@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_fused_chain_matches_reference(pattern, lens, jit):
    seed = int(RNG.integers(1 << 30))

    def build():
        p = Program()
        x = p.main.add_parameter("x", Shape(F32, lens))
        # the same literals in both programs
        p.main.add_return([PATTERNS[pattern](p.main, x, np.random.default_rng(seed))])
        return p
    feeds = {"x": random(lens) * 2}
    want, got, program = run_both(build, feeds)
    assert "FusedPointwise" in cpu_ops(program)
    assert_close(got, want)


def test_fused_chain_results_survive_the_next_run(jit):
    """Kernels write into buffers they keep; what a run returned must not change later."""
    def build():
        p = Program()
        x = p.main.add_parameter("x", Shape(F32, (4, 8)))
        relu = bias_relu(p.main, x, np.random.default_rng(1))
        p.main.add_return([gelu(p.main, x), p.main.add_instruction("Reshape", [relu],
                                                                   attrs={"shape": [8, 4], "allowzero": 0})])
        return p
    program = build().compile("cpu")
    x1, x2 = random((4, 8)), random((4, 8))
    first = program.run({"x": x1})
    kept = [a.copy() for a in first]
    program.run({"x": x2})
    assert all(np.array_equal(a, b) for a, b in zip(first, kept))
    assert_close(first, build().compile("ref").run({"x": x1}))


def test_chain_readers_outside_the_chain_are_not_fused():
    p = Program()
    x = p.main.add_parameter("x", Shape(F32, (3, 4)))
    a = p.main.add_instruction("Relu", [x])
    p.main.add_return([p.main.add_instruction("Tanh", [a]), a])  # `a` is also returned
    p.compile("cpu")
    assert cpu_ops(p).count("FusedPointwise") == 0


def test_jit_switch_off_uses_numpy(monkeypatch):
    monkeypatch.setenv("PERFBOT_CPU_JIT", "0")
    assert not pointwise.jit_enabled()


# ----- convolutions -------------------------------------------------------------------------------
def conv_program(c, h, stride, dilation, pads, group_all: bool, clip, residual: bool, seed: int):
    """A Conv [+ residual] [+ ReLU6 (``clip`` True) or x·sigmoid(x) (``clip`` "swish")]."""
    rng = np.random.default_rng(seed)
    m_out = c if group_all else 2 * c
    p = Program()
    x = p.main.add_parameter("x", Shape(F32, (2, c, h, h)))
    w = p.main.add_literal(rng.standard_normal((m_out, 1 if group_all else c, 3, 3)).astype(np.float32))
    b = p.main.add_literal(rng.standard_normal(m_out).astype(np.float32))
    attrs = {"kernel_shape": [3, 3], "strides": [stride, stride], "dilations": [dilation, dilation],
             "pads": pads, "group": c if group_all else 1}
    y = p.main.add_instruction("Conv", [x, w, b], attrs=attrs)
    if residual:
        y = p.main.add_instruction("Add", [y, p.main.add_literal(rng.standard_normal(y.shape.lens).astype(np.float32))])
    if clip == "swish":
        y = swish(p.main, y)
    elif clip == "hardswish":
        y = p.main.add_instruction("HardSwish", [y])
    elif clip:
        y = p.main.add_instruction("Clip", [y], attrs={"min": 0.0, "max": 6.0})
    p.main.add_return([y])
    return p


@pytest.mark.parametrize("c, h, stride, dilation, pads", [
    (8, 20, 1, 1, [1, 1, 1, 1]),     # long rows: the row-wise loop
    (16, 6, 1, 1, [1, 1, 1, 1]),     # short rows: channels-last
    (8, 17, 2, 1, [0, 0, 1, 1]),     # strided, asymmetric padding (TF "SAME"), short rows
    (4, 40, 2, 1, [1, 1, 1, 1]),     # strided, long rows
    (4, 21, 1, 2, [2, 2, 2, 2]),     # dilated
])
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("act", [True, "swish", "hardswish"])
def test_depthwise_conv_with_relu6_or_swish_matches_reference(c, h, stride, dilation, pads, residual, act, jit):
    seed = int(RNG.integers(1 << 30))
    build = lambda: conv_program(c, h, stride, dilation, pads, True, act, residual, seed)  # noqa: E731
    want, got, program = run_both(build, {"x": random((2, c, h, h)) * 3})
    fused = [i for m in program.modules.values() for i in m.instructions if i.op == "fused_conv"]
    assert fused and (fused[0].attrs.get("clip") == [0.0, 6.0] or fused[0].attrs.get(act))
    assert_close(got, want, 1e-4)


@pytest.mark.parametrize("clip, residual", [(True, True), (False, True), (True, False), ("swish", False),
                                           ("swish", True), ("hardswish", True)])
def test_dense_conv_with_clip_epilogue_matches_reference(clip, residual, jit):
    build = lambda: conv_program(4, 9, 1, 1, [1, 1, 1, 1], False, clip, residual, 5)  # noqa: E731
    want, got, program = run_both(build, {"x": random((2, 4, 9, 9)) * 3})
    assert cpu_ops(program).count("fused_conv") == 1 and not {"Sigmoid", "HardSwish"} & set(cpu_ops(program))
    assert_close(got, want, 1e-4)


# ----- recurrent layers ---------------------------------------------------------------------------
def rnn_instruction(op, direction, layout, with_state, lbr=0, seq=5, batch=3, size=6, hidden=8):
    gates = 4 if op == "LSTM" else 3
    dirs = 2 if direction == "bidirectional" else 1
    p = Program()
    x_lens = (batch, seq, size) if layout else (seq, batch, size)
    state_lens = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    inputs = [p.main.add_parameter("x", Shape(F32, x_lens)),
              p.main.add_literal(random((dirs, gates * hidden, size)) * 0.5),
              p.main.add_literal(random((dirs, gates * hidden, hidden)) * 0.5),
              p.main.add_literal(random((dirs, 2 * gates * hidden)) * 0.5)]
    names = ["X", "W", "R", "B"]
    if with_state:
        states = ["initial_h", "initial_c"] if op == "LSTM" else ["initial_h"]
        inputs += [p.main.add_parameter(n, Shape(F32, state_lens)) for n in states]
        names += states
    defaults = [["Sigmoid", 0.0, 0.0], ["Tanh", 0.0, 0.0]] + ([["Tanh", 0.0, 0.0]] if op == "LSTM" else [])
    attrs = {"inputs": names, "hidden_size": hidden, "direction": direction, "layout": layout,
             "activations": defaults * dirs, "clip": None}
    attrs.update({"input_forget": 0} if op == "LSTM" else {"linear_before_reset": lbr})
    return p.main.add_instruction(op, inputs, attrs=attrs)


@pytest.mark.parametrize("op, lbr", [("LSTM", 0), ("GRU", 0), ("GRU", 1)])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("with_state", [False, True])
def test_recurrent_kernel_matches_reference(op, lbr, direction, layout, with_state, jit):
    ins = rnn_instruction(op, direction, layout, with_state, lbr)
    args = [random(i.shape.lens) if i.op == "@param" else i.value for i in ins.inputs]
    fast = rnn_kernel(ins)
    assert fast is not None
    want = reference_kernel(ins)(*args)
    for _ in range(2):
        got = fast(*args)
        assert len(got) == len(want)
        assert_close(list(got), list(want), 1e-5)


def test_recurrent_kernel_declines_clip_and_sequence_lengths():
    ins = rnn_instruction("LSTM", "forward", 0, False)
    ins.attrs["clip"] = 3.0
    assert rnn_kernel(ins) is None
    assert pick_kernel(ins) is not None  # the reference runs it


# ----- the other kernels, one instruction each ------------------------------------------------------
def single(op, input_specs, attrs):
    p = Program()
    inputs = []
    for k, spec in enumerate(input_specs):
        inputs.append(p.main.add_literal(spec) if isinstance(spec, np.ndarray)
                      else p.main.add_parameter(f"in{k}", Shape(*spec)))
    return p.main.add_instruction(op, inputs, attrs=attrs)


def pool(op, shape, kernel, strides, pads, ceil_mode=0, **attrs):
    """One pool over a float32 input of ``shape``, undilated."""
    return single(op, [(F32, shape)], {"kernel_shape": kernel, "strides": strides, "dilations": [1] * len(kernel),
                                       "pads": pads, "ceil_mode": ceil_mode, **attrs})


@pytest.mark.parametrize("ins_factory", [
    lambda: single("Gemm", [(F32, (3, 5)), random((4, 5)), random((4,))],
                   {"alpha": 0.5, "beta": 2.0, "transA": 0, "transB": 1}),
    lambda: single("Gemm", [(F32, (5, 3)), random((5, 4))], {"alpha": 1.0, "beta": 1.0, "transA": 1, "transB": 0}),
    lambda: single("LayerNormalization", [(F32, (2, 3, 16)), random((16,)), random((16,))],
                   {"axis": 2, "epsilon": 1e-5, "stash_type": 1, "outputs": 1}),
    lambda: single("Softmax", [(F32, (2, 3, 7))], {"axis": 2}),
    lambda: single("Gather", [random((10, 4)), ("int64", (2, 3))], {"axis": 0}),
    lambda: single("Gather", [(F32, (2, 6, 3)), ("int32", (4,))], {"axis": 1}),
    lambda: single("MatMul", [(F32, (2, 3, 4, 5)), (F32, (2, 3, 5, 6))], {}),
    lambda: single("MatMul", [(F32, (4, 5)), (F32, (5, 6))], {}),
    lambda: single("Unsqueeze", [(F32, (3, 4))], {"axes": [0, 2]}),
    lambda: single("Squeeze", [(F32, (3, 1, 4))], {"axes": [1]}),
    lambda: single("Flatten", [(F32, (2, 3, 4))], {"axis": 1}),
    lambda: pool("AveragePool", (2, 3, 9, 8), [3, 3], [2, 2], [1, 1, 1, 0], count_include_pad=0),
    lambda: pool("AveragePool", (2, 3, 9, 8), [2, 3], [1, 2], [1, 0, 0, 1], count_include_pad=1),
    lambda: pool("AveragePool", (2, 3, 7, 7), [7, 7], [1, 1], [0, 0, 0, 0], count_include_pad=0),
    lambda: single("GlobalAveragePool", [(F32, (2, 5, 4, 3))], {}),
    lambda: pool("MaxPool", (1, 3, 13, 10), [3, 3], [2, 2], [0, 0, 0, 0], ceil_mode=1, storage_order=0,
                 indices=False),
    lambda: pool("AveragePool", (1, 3, 10, 9), [3, 2], [2, 2], [1, 0, 1, 0], ceil_mode=1, count_include_pad=1),
    lambda: pool("AveragePool", (1, 3, 10, 9), [3, 2], [2, 2], [1, 0, 1, 0], ceil_mode=1, count_include_pad=0),
    lambda: single("Transpose", [(F32, (2, 3, 4))], {"perm": [2, 0, 1]}),
    lambda: single("Cast", [("int64", (3, 4))], {"to": "float32"}),
    lambda: single("Slice", [(F32, (4, 6, 5))], {"starts": [1, -1], "ends": [3, -6], "axes": [0, 1],
                                                  "steps": [1, -2]}),
    lambda: single("Concat", [(F32, (2, 3)), (F32, (2, 4))], {"axis": 1}),
    lambda: single("ReduceMean", [(F32, (2, 3, 4))], {"axes": [1, 2], "keepdims": 1, "noop": 0}),
    lambda: single("ReduceSum", [(F32, (2, 3, 4))], {"axes": [0], "keepdims": 0, "noop": 0}),
], ids=["gemm-transB", "gemm-transA", "layernorm", "softmax", "gather-embedding", "gather-axis1",
        "matmul-batched", "matmul-2d", "unsqueeze", "squeeze", "flatten", "avgpool-excl-pad",
        "avgpool-incl-pad", "avgpool-whole", "global-avgpool", "maxpool-ceil", "avgpool-ceil-incl-pad",
        "avgpool-ceil-excl-pad", "transpose", "cast", "slice-negative-step",
        "concat", "reduce-mean", "reduce-sum"])
def test_kernel_matches_reference(ins_factory):
    ins = ins_factory()
    args = []
    for i in ins.inputs:
        if i.op == "@literal":
            args.append(i.value)
        elif np.dtype(i.shape.dtype).kind == "i" and ins.op == "Cast":
            args.append(RNG.integers(-1000, 1000, i.shape.lens))
        elif np.dtype(i.shape.dtype).kind == "i":
            bound = ins.inputs[0].shape.lens[ins.attrs["axis"]]
            args.append(RNG.integers(-bound, bound, i.shape.lens).astype(i.shape.dtype))  # negatives too
        else:
            args.append(random(i.shape.lens))
    fast = FAST[ins.op](ins)
    assert fast is not None
    want = reference_kernel(ins)(*args)
    assert_close([fast(*args)], [want], 1e-5)


# ----- whole models -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["smoke-resnet", "smoke-mobilenet", "smoke-bert", "smoke-wlang-lstm",
                                  "smoke-dlrm", "agentmodel"])
def test_smoke_model_on_cpu_matches_reference(name, tmp_path_factory):
    from models.cache import build_model
    from models.inputs import make_feeds
    from models.manifest import load_manifest
    row = load_manifest().get(name)
    path = str(build_model(row, tmp_path_factory.getbasetemp() / "models"))
    feeds = make_feeds(row, path)
    assert all(np.any(v != 0) for v in feeds.values())
    want = compiler.parse_onnx(path, batch_size=row.batch).compile("ref").run(feeds)
    program = compiler.parse_onnx(path, batch_size=row.batch).compile("cpu")
    got = program.run(feeds)
    assert_close(got, want, 1e-4)
    again = program.run(feeds)  # a second run, through the kept buffers, gives the same
    assert all(np.array_equal(a, b) for a, b in zip(got, again))


# ----- resize and detection -------------------------------------------------------------------------
@pytest.mark.parametrize("mode, transform, nearest", [
    ("linear", "half_pixel", "round_prefer_floor"),
    ("nearest", "asymmetric", "floor"),
    ("cubic", "align_corners", "round_prefer_floor"),
    ("linear", "tf_crop_and_resize", "round_prefer_floor"),
])
def test_resize_kernel_matches_reference(mode, transform, nearest):
    from compiler.targets.cpu.kernels.resize import resize_kernel
    attrs = {"roi": [0, 0, 0.1, 0.2, 1, 1, 0.9, 0.7] if transform == "tf_crop_and_resize" else None,
             "scales": [1.0, 1.0, 2.0, 1.5], "sizes": None, "mode": mode,
             "coordinate_transformation_mode": transform, "nearest_mode": nearest, "cubic_coeff_a": -0.75,
             "exclude_outside": 0, "extrapolation_value": 0.5, "antialias": 0, "axes": None,
             "keep_aspect_ratio_policy": "stretch"}
    ins = single("Resize", [(F32, (1, 2, 5, 6))], attrs)
    x = random((1, 2, 5, 6))
    got = resize_kernel(ins)(x)
    want = reference_kernel(ins)(x)
    assert got.shape == want.shape == tuple(ins.shape.lens)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("center, floor", [(0, None), (1, 0.3)])
def test_nms_kernel_keeps_the_reference_boxes(center, floor):
    pytest.importorskip("numba")
    from compiler.targets.cpu.kernels.nms import nms_kernel
    rng = np.random.default_rng(7)
    corner = rng.uniform(0, 50, (2, 300, 2))
    boxes = np.concatenate([corner, corner + rng.uniform(1, 20, (2, 300, 2))], axis=2).astype(np.float32)
    scores = rng.uniform(0, 1, (2, 3, 300)).astype(np.float32)
    specs = [(F32, boxes.shape), (F32, scores.shape), np.array([40]), np.array([0.45], np.float32)]
    names = ["boxes", "scores", "max_output", "iou_threshold"]
    if floor is not None:
        specs.append(np.array([floor], np.float32))
        names.append("score_threshold")
    ins = single("NonMaxSuppression", specs, {"center_point_box": center, "inputs": names})
    args = [boxes, scores] + [i.value for i in ins.inputs[2:]]
    want = reference_kernel(ins)(*args)
    assert len(want) > 100
    np.testing.assert_array_equal(nms_kernel(ins)(*args), want)
