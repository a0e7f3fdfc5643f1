"""fuse_attention finds the attention forms exporters write and leaves near misses alone; the
fused program equals the reference of the unfused one (the gpu target on NumPy)."""
import numpy as np
import pytest

import compiler
from compiler.compile import prepare_program

from tests.compiler.targets.gpu.attention_cases import block, feeds


def _ops(onnx_model, fp16=True):
    program = compiler.parse_onnx(onnx_model)
    prepare_program(program, "gpu", fp16=fp16)
    return [i.op for i in program.main.instructions]


@pytest.mark.parametrize("three_d, mask, scale_on", [(False, False, "scores"), (True, False, "both"),
                                                     (False, True, "scores"), (True, True, "both")])
def test_attention_forms_become_one_instruction(three_d, mask, scale_on):
    ops = _ops(block(three_d=three_d, mask=mask, scale_on=scale_on))
    assert ops.count("Attention") == 1 and "Softmax" not in ops


def test_fp32_attention_becomes_one_instruction():
    ops = _ops(block(), fp16=False)     # the gpu target runs it exactly (strided products)
    assert ops.count("Attention") == 1 and "Softmax" not in ops


@pytest.mark.parametrize("miss", [{"softmax_axis": 2}, {"softmax_also_output": True}])
def test_near_misses_stay(miss):
    ops = _ops(block(**miss))
    assert "Attention" not in ops and "Softmax" in ops


def _attention(onnx_model, fp16=True):
    program = compiler.parse_onnx(onnx_model)
    prepare_program(program, "gpu", fp16=fp16)
    return [i for i in program.main.instructions if i.op == "Attention"]


@pytest.mark.parametrize("fp16, fill", [(True, -65504.0), (False, float(np.finfo(np.float32).min)),
                                        (False, -1e4)])
def test_causal_where_becomes_is_causal(fp16, fill):
    (attention,) = _attention(block(causal=fill), fp16=fp16)
    assert attention.attrs["is_causal"] == 1 and len(attention.inputs) == 3


def test_additive_causal_mask_becomes_is_causal():
    (attention,) = _attention(block(causal_add=-65504.0))
    assert attention.attrs["is_causal"] == 1 and len(attention.inputs) == 3


def test_additive_mask_that_is_not_causal_stays_a_mask():
    plane = np.triu(np.full((13, 13), -65504.0, np.float32), 1)
    plane[3, 1] = -65504.0                     # one key hidden below the diagonal
    (attention,) = _attention(block(causal_add=plane))
    assert attention.attrs["is_causal"] == 0 and len(attention.inputs) == 4


@pytest.mark.parametrize("fill", [-100.0, 0.0])
def test_where_with_a_small_fill_stays(fill):
    assert not _attention(block(causal=fill))


def test_repeated_key_value_heads_are_served_as_groups():
    (attention,) = _attention(block(heads=4, kv_heads=2, causal=-65504.0))
    q, k, v = (x.shape.lens for x in attention.inputs)
    assert q[1] == 4 and k[1] == v[1] == 2


def test_head_size_cudnn_does_not_take_is_still_fused():
    assert _ops(block(heads=1, size=12)).count("Attention") == 1   # for the strided path


@pytest.mark.parametrize("three_d, mask, scale_on, causal, kv_heads", [
    (False, True, "scores", None, None), (True, False, "both", None, None), (True, True, "scores", None, None),
    (False, False, "scores", -65504.0, None), (False, False, "both", -65504.0, 1), (False, True, "both", None, 1),
    (False, False, "scores", "add", 1)])
def test_fused_program_matches_reference_on_emulated_device(three_d, mask, scale_on, causal, kv_heads):
    from compiler.targets.gpu.options import GpuOptions
    onnx_model = (block(three_d=three_d, scale_on=scale_on, kv_heads=kv_heads, causal_add=-65504.0)
                  if causal == "add" else
                  block(three_d=three_d, mask=mask, scale_on=scale_on, causal=causal, kv_heads=kv_heads))
    x = feeds(mask=mask, seed=3, three_d=three_d)
    ref = compiler.parse_onnx(onnx_model).compile("ref").run(x)[0]
    program = compiler.parse_onnx(onnx_model).compile("gpu", fp16=True, gpu_options=GpuOptions(emulate=True))
    steps = program.compiled.context.roots["main"].body.steps
    assert sum(getattr(fn, "path", "") == "matmul-softmax-matmul" for _i, fn, _a, _d in steps) == 1
    got = program.run(x)[0]
    assert np.abs(got.astype(np.float32) - ref).max() <= 1e-2 * np.abs(ref).max()
