"""The GPU target's passes and code generation, checked without a GPU: fused bodies keep the
reference meaning, generated CUDA text, the memory plan, fp16 rewriting, conv epilogues."""
from dataclasses import replace

import numpy as np
import pytest

import compiler
from compiler.compile import prepare_program
from compiler.ir import Program, Shape
from compiler.onnx.testing import model_of
from compiler.passes.fuse_pointwise import FUSED, FusePointwise
from compiler.passes.pass_manager import run_passes
from compiler.targets.gpu import memory
from compiler.targets.gpu.options import GpuOptions
from compiler.targets.gpu.pointwise_codegen import UnsupportedPointwise, generate

from tests.compiler.targets.gpu.cases import build, feeds_for

EMULATED = GpuOptions(emulate=True)     # NumPy stands in for CuPy


def _program_of(**params):
    """A program whose main takes float32 parameters of the given lengths: (program, main, params)."""
    p = Program()
    return p, p.main, [p.main.add_parameter(name, Shape("float32", lens)) for name, lens in params.items()]


def _chain_program():
    p, m, (x, y) = _program_of(x=(4, 5), y=(5,))
    a = m.add_instruction("Add", [x, y])
    b = m.add_instruction("Mul", [a, m.add_literal(np.float32(0.5))])
    c = m.add_instruction("Relu", [b])
    d = m.add_instruction("Tanh", [a])          # a has two users: stays materialised
    m.add_return([c, d])
    return p


def test_pointwise_chains_fuse_and_keep_their_meaning():
    rng = np.random.default_rng(5)
    feeds = {"x": rng.standard_normal((4, 5)).astype(np.float32),
             "y": rng.standard_normal(5).astype(np.float32)}
    expected = _chain_program().compile("ref").run(feeds)
    p = _chain_program()
    run_passes(p, p.main, [FusePointwise()])
    ops = [i.op for i in p.main.instructions if not i.is_builtin]
    assert ops == [FUSED, FUSED, FUSED]
    relu = p.main.get_return().inputs[0]
    assert [s["op"] for s in relu.attrs["body"]] == ["Mul", "Relu"]
    assert relu.attrs["body"][0]["args"] == ["x0", "cfloat32:0.5"]
    p.roots = {"main": "ref"}
    from compiler.targets.ref.interpreter import evaluate
    got = evaluate(p.main, [feeds["x"], feeds["y"]], {}, None)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


def _bias_gelu_program():
    """A bias add read twice by GELU's erf form (x * 0.5 * (1 + erf(x / sqrt 2)))."""
    p, m, (x, b) = _program_of(x=(3, 8), b=(8,))
    a = m.add_instruction("Add", [x, b])
    e = m.add_instruction("Erf", [m.add_instruction("Div", [a, m.add_literal(np.float32(1.4142135))])])
    one = m.add_instruction("Add", [e, m.add_literal(np.float32(1))])
    y = m.add_instruction("Mul", [m.add_instruction("Mul", [a, one]), m.add_literal(np.float32(0.5))])
    m.add_return([y])
    return p


def test_a_value_read_twice_inside_one_group_is_computed_in_it_once():
    rng = np.random.default_rng(6)
    feeds = {"x": rng.standard_normal((3, 8)).astype(np.float32), "b": rng.standard_normal(8).astype(np.float32)}
    expected = _bias_gelu_program().compile("ref").run(feeds)[0]
    p = _bias_gelu_program()
    run_passes(p, p.main, [FusePointwise()])
    (fused,) = [i for i in p.main.instructions if not i.is_builtin]
    assert [s["op"] for s in fused.attrs["body"]] == ["Add", "Div", "Erf", "Add", "Mul", "Mul"]
    from compiler.targets.ref.interpreter import evaluate
    p.roots = {"main": "ref"}
    np.testing.assert_allclose(evaluate(p.main, [feeds["x"], feeds["b"]], {}, None)[0], expected, rtol=1e-6)


def test_a_scalar_index_gather_is_a_view_in_the_memory_plan():
    _p, m, (x,) = _program_of(x=(3, 4, 5))
    t = m.add_instruction("Relu", [x])
    g = m.add_instruction("Gather", [t, m.add_literal(np.int64(1))], {"axis": 0})
    several = m.add_instruction("Gather", [t, m.add_literal(np.array([0, 2], np.int64))], {"axis": 0})
    m.add_return([m.add_instruction("Neg", [g]), several])
    assert memory.is_view(g) and not memory.is_view(several)


def test_generated_kernel_text_widens_half_and_narrows_once():
    body = [{"op": "Add", "attrs": {}, "args": ["x0", "x1"], "dtype": "float16"},
            {"op": "Sigmoid", "attrs": {}, "args": ["t0"], "dtype": "float16"}]
    ins, outs, code = generate(body, ["float16", "float16"])
    assert ins == "float16 x0, float16 x1" and outs == "float16 out"
    assert "float t0 = (float)((((float)x0) + ((float)x1)));" in code
    assert code.strip().endswith("out = (float16)(t1);")
    with pytest.raises(UnsupportedPointwise):
        generate([{"op": "NoSuchOp", "attrs": {}, "args": ["x0"], "dtype": "float32"}], ["float32"])


def test_memory_plan_reuses_dead_buffers():
    p = Program()
    m = p.main
    v = m.add_parameter("x", Shape("float32", (1024,)))
    for _ in range(6):
        v = m.add_instruction("Relu", [v])
    m.add_return([v])
    plan = memory.plan(m)
    assert plan.naive_bytes == 6 * 4096
    assert plan.peak_bytes == 2 * 4096   # a chain needs its input and output live at once


def test_gpu_program_structure_is_built_without_a_device():
    program = compiler.parse_onnx(build("conv_add_relu"))
    prepare_program(program, "gpu")
    ops = [i.op for i in program.main.instructions]
    assert ops.count("copy_to_device") == 1 and ops.count("copy_from_device") == 1
    assert "fused_conv" in ops and "BatchNormalization" not in ops


def test_fp16_mode_casts_at_the_edges_only():
    program = compiler.parse_onnx(build("attention"))
    prepare_program(program, "gpu", fp16=True)
    main = program.main
    casts = [i for i in main.instructions if i.op == "Cast" or
             (i.op == FUSED and any(s["op"] == "Cast" for s in i.attrs["body"]))]
    assert len(casts) == 2
    floats = {i.shape.dtype for i in main.instructions
              if isinstance(i.shape, Shape) and i.op not in ("@param", "copy_to_device", "copy_from_device")}
    assert "float16" in floats
    assert main.get_return().inputs[0].shape.dtype == "float32"


@pytest.mark.parametrize("fp16", [False, True])
def test_a_residual_add_inside_the_graph_fuses_into_its_convolution(fp16):
    """The block's add + ReLU become the second convolution's epilogue in either precision (in
    fp16 the residual is fp16 too; the casts stay at the graph's edges)."""
    program = compiler.parse_onnx(build("residual_block"))
    prepare_program(program, "gpu", fp16=fp16)
    fused = [i for i in program.main.instructions if i.op == "fused_conv"]
    assert [(i.attrs["residual"], i.attrs["relu"]) for i in fused] == [(False, True), (True, True)]
    assert fused[1].inputs[-1] is fused[0]                  # the residual is the first block output
    assert {i.shape.dtype for i in fused} == {"float16" if fp16 else "float32"}


@pytest.mark.parametrize("offload_copy", [True, False])
def test_partitioned_gpu_cpu_structure(offload_copy):
    program = compiler.parse_onnx(build("attention"))
    prepare_program(program, ["gpu", "cpu"], offload_copy=offload_copy, assign={"Softmax": "gpu/cpu/gpu"})
    text = str(program)
    assert "(root, target gpu)" in text and "(root, target cpu)" in text
    if offload_copy:
        assert "copy_to_device" in text
    else:
        assert ":#output_0" in text


def test_fused_programs_match_reference_through_emulated_device():
    """The executor's plumbing (liveness frees, views, tuples) with NumPy standing in for CuPy."""
    for name in ("chain", "attention", "conv_add_relu", "conv_bn_relu_add", "batchnorm", "lstm",
                 "gru_bidirectional", "split", "pad_const", "concat", "conv_chain_pool_concat"):
        ref_p = compiler.parse_onnx(build(name))
        feeds = feeds_for(ref_p, 2)
        ref = ref_p.compile("ref").run(feeds)
        got = compiler.parse_onnx(build(name)).compile("gpu", gpu_options=EMULATED).run(feeds)
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)


def test_fp32_gemm_convolution_path_in_emulation():
    """The channels-last GEMM convolution's indexing (windows, padding, epilogue) on NumPy."""
    options = replace(EMULATED, fp32_conv="gemm")
    for name in ("conv3x3", "conv7x7s2", "conv1x1", "conv_dilated_asym", "conv_add_relu"):
        ref_p = compiler.parse_onnx(build(name))
        feeds = feeds_for(ref_p, 3)
        ref = ref_p.compile("ref").run(feeds)
        program = compiler.parse_onnx(build(name)).compile("gpu", gpu_options=options)
        steps = program.compiled.context.roots["main"].body.steps
        assert any(getattr(fn, "path", "") == "gemm-nhwc" for _i, fn, _a, _d in steps)
        for g, r in zip(program.run(feeds), ref):
            np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)


def test_scalar_literals_keep_their_rank_on_the_device():
    """A 0-d result (Size folds to a scalar literal) comes back 0-d, as on the reference target."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Size", ["x"], ["y"])], "size",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, [])])
    model = model_of(graph, 19)
    onnx.checker.check_model(model)
    got = compiler.parse_onnx(model).compile("gpu", gpu_options=EMULATED).run({"x": np.ones((3, 4), np.float32)})
    assert np.asarray(got[0]).shape == () and int(got[0]) == 12


def test_convolutions_whose_plans_are_still_building_are_lowered_last(monkeypatch):
    """A convolution waiting for a cuDNN plan built ahead (``cudnn_ahead.building``) is lowered
    after the rest of its module; the steps still run in program order and compute the reference
    result (emulated device)."""
    from compiler.targets.gpu import executor
    from compiler.targets.gpu.lowering import Lowering
    monkeypatch.setattr(executor, "_plan_building", lambda lowering, ins: ins.op in ("Conv", "fused_conv"))
    order = []
    lower = Lowering.lower

    def recording(self, ins):
        order.append(ins.op)
        return lower(self, ins)
    monkeypatch.setattr(Lowering, "lower", recording)
    ref_p = compiler.parse_onnx(build("conv_chain_pool_concat"))
    feeds = feeds_for(ref_p, 3)
    ref = ref_p.compile("ref").run(feeds)
    program = compiler.parse_onnx(build("conv_chain_pool_concat")).compile("gpu", gpu_options=EMULATED)
    convs = [i for i, op in enumerate(order) if op in ("Conv", "fused_conv")]
    assert len(convs) >= 2 and convs == list(range(len(order) - len(convs), len(order)))
    module = program.compiled.context.roots["main"].body
    positions = [module.module.instructions.index(ins) for ins, _fn, _a, _d in module.steps]
    assert positions == sorted(positions)
    for g, r in zip(program.run(feeds), ref):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)
