"""fp16 mode keeps float32 literals beyond fp16's range finite (a float32-minimum mask stays a
very negative number, so a fully masked softmax row is not 0/0)."""
import numpy as np
from onnx import helper

import compiler
from compiler.compile import prepare_program
from compiler.ir.instruction import LITERAL
from compiler.passes.quantize_fp16 import FP16_MAX, to_fp16

from tests.compiler.targets.gpu.cases import init, model, vi


def test_out_of_range_values_clamp_and_infinities_stay():
    got = to_fp16(np.array([-3.4e38, -1.5, 7e4, np.inf, -np.inf], np.float32))
    assert got.dtype == np.float16
    assert got.tolist() == [-FP16_MAX, -1.5, FP16_MAX, np.inf, -np.inf]


def test_in_range_values_and_nans_convert_as_a_plain_cast_does():
    # the plain conversion taken for in-range arrays, and the masked one for the rest, agree bit
    # for bit with a plain cast wherever no clamp is due (signed zeros, fp16 subnormals, rounding)
    rng = np.random.default_rng(4)
    values = np.concatenate([rng.standard_normal(1000) * 0.02, [0.0, -0.0, 3e-8, -6e-5, 65504.0, -65504.0]])
    for array in (values.astype(np.float32), np.append(values, np.nan).astype(np.float32),
                  np.zeros(0, np.float32), np.float32(2.5)):
        got = to_fp16(array)
        want = np.asarray(array).astype(np.float16)
        assert got.shape == want.shape and np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_a_float32_minimum_mask_is_finite_in_fp16_programs():
    low = np.float32(np.finfo(np.float32).min)
    onnx_model = model([helper.make_node("Add", ["x", "low"], ["y"])], [vi("x", (2, 3))], [vi("y", None)],
                       [init("low", low)])
    program = compiler.parse_onnx(onnx_model)
    prepare_program(program, "ref", fp16=True)
    literals = [np.asarray(i.value) for i in program.main.instructions if i.op == LITERAL]
    assert literals and all(np.isfinite(v).all() for v in literals)


def test_large_arrays_convert_in_chunks_to_the_same_bits(monkeypatch):
    from compiler.passes import quantize_fp16
    monkeypatch.setattr(quantize_fp16, "PARALLEL_ELEMENTS", 1000)
    monkeypatch.setattr(quantize_fp16, "CHUNK", 256)          # many chunks, a short last one
    rng = np.random.default_rng(6)
    array = (rng.standard_normal((70, 90)) * 3).astype(np.float32)
    for value in (array, array[:, ::3], array.T):              # packed, strided, transposed
        got = to_fp16(value)
        want = value.astype(np.float16)
        assert got.shape == want.shape and np.array_equal(got.view(np.uint16), want.view(np.uint16))
