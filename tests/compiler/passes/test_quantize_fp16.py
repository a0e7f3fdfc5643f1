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


def test_a_float32_minimum_mask_is_finite_in_fp16_programs():
    low = np.float32(np.finfo(np.float32).min)
    onnx_model = model([helper.make_node("Add", ["x", "low"], ["y"])], [vi("x", (2, 3))], [vi("y", None)],
                       [init("low", low)])
    program = compiler.parse_onnx(onnx_model)
    prepare_program(program, "ref", fp16=True)
    literals = [np.asarray(i.value) for i in program.main.instructions if i.op == LITERAL]
    assert literals and all(np.isfinite(v).all() for v in literals)
