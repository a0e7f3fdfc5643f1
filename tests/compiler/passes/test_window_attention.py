"""Window attention as vision transformers export it becomes one Attention on the gpu target:
Swin's shifted windows, whose scores get a position bias, are split by image and window, get the
window mask and are merged back before the Softmax (the two literals fold into one mask); and
MaxViT's, whose two products are Einsums over (batch, grid, heads, tokens, size), rank 5
(einsum_as_matmul, then attention over merged batch axes). Checked without a GPU: the passes, and
NumPy standing in for CuPy against the reference target on fresh random inputs."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import compiler
from compiler.compile import prepare_program
from compiler.onnx.testing import model_of
from compiler.passes.einsum_as_matmul import product_form

from tests.compiler.targets.gpu.window_cases import F, init_of, einsum_window_attention, feeds_for, \
    shifted_window_attention


def _ops(onnx_model, fp16=True):
    program = compiler.parse_onnx(onnx_model)
    prepare_program(program, "gpu", fp16=fp16)
    return [i for i in program.main.instructions if not i.op.startswith("@")]


def _matches_reference_in_emulation(onnx_model, fp16):
    from compiler.targets.gpu.options import GpuOptions
    feeds = feeds_for(onnx_model)
    want = compiler.parse_onnx(onnx_model).compile("ref").run(feeds)
    got = compiler.parse_onnx(onnx_model).compile("gpu", fp16=fp16, gpu_options=GpuOptions(emulate=True)).run(feeds)
    tol = 1e-2 if fp16 else 1e-5
    for g, r in zip(got, want):
        r = np.asarray(r, np.float32)
        assert np.abs(np.asarray(g, np.float32) - r).max() <= tol * np.abs(r).max()


@pytest.mark.parametrize("fp16", [True, False])
def test_shifted_window_attention_becomes_one_attention_with_one_mask(fp16):
    ops = _ops(shifted_window_attention(), fp16=fp16)
    (attention,) = [i for i in ops if i.op == "Attention"]
    assert "Softmax" not in [i.op for i in ops]
    mask = attention.inputs[3]
    # bias and window mask folded: one literal over (images·windows, heads, tokens, tokens)
    assert mask.op == "@literal" and tuple(mask.shape.lens) == (8, 2, 9, 9)


def test_a_folded_mask_keeps_only_the_axes_it_varies_along():
    # no window mask: the folded literal is the bias alone, of length one along the batch
    onnx_model = shifted_window_attention()
    for t in onnx_model.graph.initializer:
        if t.name == "wmask":
            t.CopyFrom(init_of("wmask", np.zeros((1, 4, 1, 9, 9), np.float32)))
    (attention,) = [i for i in _ops(onnx_model) if i.op == "Attention"]
    assert tuple(attention.inputs[3].shape.lens) == (1, 2, 9, 9)


def test_a_chain_read_in_the_middle_stays():
    assert "Attention" not in [i.op for i in _ops(shifted_window_attention(mask_reader=True))]


@pytest.mark.parametrize("fp16", [True, False])
def test_shifted_window_attention_matches_reference_in_emulation(fp16):
    _matches_reference_in_emulation(shifted_window_attention(), fp16)


def test_einsum_window_attention_becomes_one_attention():
    ops = [i.op for i in _ops(einsum_window_attention())]
    assert ops.count("Attention") == 1 and not {"Einsum", "Softmax"} & set(ops)


def test_a_rank_five_mask_that_cannot_merge_stays():
    # a bias that varies along the grid axis but not the batch: no one batch axis holds it
    ops = [i.op for i in _ops(einsum_window_attention(bias_lens=(1, 3, 2, 9, 9)))]
    assert "Attention" not in ops and "Softmax" in ops


@pytest.mark.parametrize("fp16", [True, False])
def test_einsum_window_attention_matches_reference_in_emulation(fp16):
    _matches_reference_in_emulation(einsum_window_attention(), fp16)


@pytest.mark.parametrize("equation, form", [
    ("BGHID,BGHJD->BGHIJ", (False, False, True)), ("BGHIJ,BGHJD->BGHID", (False, False, False)),
    ("bij,bjk->bik", (False, False, False)), ("bki,bkj->bij", (False, True, False)),
    ("bjk,bik->bij", (True, False, True)), ("ik,kj->ij", (False, False, False)),
    ("bij,bjk->bki", (True, True, True))])     # the transposed product: (bjk)ᵀ · (bij)ᵀ
def test_batched_products_are_recognised(equation, form):
    assert product_form(equation) == form


@pytest.mark.parametrize("equation", ["...id,...jd->...ij", "bij,bjk->ik", "bij,cjk->bik", "bii,bij->bij",
                                      "bij,bjk,bkl->bil", "bij,bij->bij", "bijk,bjk->bik"])
def test_other_einsums_are_left_alone(equation):
    assert product_form(equation) is None


def test_einsum_as_matmul_equals_the_einsum_in_emulation():
    # the products alone, no Softmax between: both Einsums become MatMuls and compute the same
    nodes = [helper.make_node("Einsum", ["a", "b"], ["ab"], equation="bki,bkj->bij"),
             helper.make_node("Einsum", ["ab", "c"], ["out"], equation="bjk,bik->bij")]
    inputs = [helper.make_tensor_value_info("a", F, [2, 5, 3]), helper.make_tensor_value_info("b", F, [2, 5, 4]),
              helper.make_tensor_value_info("c", F, [2, 6, 4])]
    onnx_model = model_of(helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("out", F, None)]), 18)
    assert "Einsum" not in [i.op for i in _ops(onnx_model, fp16=False)]
    _matches_reference_in_emulation(onnx_model, False)


def test_an_einsum_of_another_type_stays_an_einsum():
    # integers (and bfloat16) keep the Einsum: MatMul is taken only where a GEMM of the type runs
    nodes = [helper.make_node("Einsum", ["a", "b"], ["out"], equation="bij,bjk->bik")]
    inputs = [helper.make_tensor_value_info("a", TensorProto.INT64, [2, 3, 4]),
              helper.make_tensor_value_info("b", TensorProto.INT64, [2, 4, 5])]
    onnx_model = model_of(helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("out", TensorProto.INT64, None)]), 18)
    assert "Einsum" in [i.op for i in _ops(onnx_model, fp16=False)]
