"""A program's work for roofline bounds (``compiler.ir.work``): FLOPs of its products and the
bytes it must move at least, on small models whose figures are worked out by hand."""
import pytest

import compiler
from compiler.ir.work import Work, program_work

from gpu_cases import build


def test_convolutions_count_two_flops_per_multiply_add_and_move_weights_inputs_outputs():
    # residual_block: three 8-channel convolutions over (2, 8, 9, 9), two 3x3 and one 1x1.
    work = program_work(compiler.parse_onnx(build("residual_block")))
    outputs = 2 * 8 * 9 * 9
    assert work.flops == 2 * outputs * 8 * (9 + 9 + 1)
    weights = 8 * 8 * (9 + 9 + 1)
    assert work.bytes == 4 * (weights + outputs + outputs)          # weights, x, y in fp32
    assert program_work(compiler.parse_onnx(build("residual_block")), fp16=True).bytes == work.bytes // 2


def test_matrix_products_and_recurrent_layers():
    gemm = program_work(compiler.parse_onnx(build("gemm")))          # (4, 16) x (16, 8)^T + c
    assert gemm.flops == 2 * 4 * 8 * 16
    assert gemm.bytes == 4 * (4 * 16 + 8 * 16 + 8 + 4 * 8)
    batched = program_work(compiler.parse_onnx(build("matmul_batched")))   # (3, 4, 16) x (3, 16, 8)
    assert batched.flops == 2 * 3 * 4 * 8 * 16
    lstm = program_work(compiler.parse_onnx(build("lstm")))         # seq 5, batch 2, input 6, hidden 8
    assert lstm.flops == 2 * 5 * 2 * (4 * 8) * (6 + 8)


def test_the_roofline_bound_is_the_slower_side():
    work = Work(flops=795 * 10**9, bytes=42 * 10**9)     # 1 ms of compute, 10 ms of memory
    assert work.bound_seconds(795e12, 4.2e12) == pytest.approx(0.01)
    assert work.bound(795e12, 4.2e12) == "memory"
    assert Work(flops=10**15, bytes=1).bound(795e12, 4.2e12) == "compute"
