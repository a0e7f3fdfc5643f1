"""ONNX Runtime's MatMulNBits (2-, 4- or 8-bit weights in blocks along K, one scale and an
optional zero point per block; what its weight-only quantizer writes for LLMs): the weights
unpacked and dequantized by standard ops on the initializers, which the import folds into one
float matrix, then a MatMul. GatherBlockQuantized (an embedding table so quantized, often the
same weights as the output projection) likewise: the table dequantized, then a Gather.

    B: (N, blocks, bytes per block) uint8, element k of a block in byte k·bits/8 from bit k·bits%8
    w[n, k] = (q[n, k] - zero[n, block]) · scale[n, block]        zero: packed like B, else 2^(bits-1)
    Y = A @ wᵀ (+ bias)
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .builder import Builder, Unexpandable


def matmul_nbits(node, b: Builder) -> None:
    if b.input(4):
        raise Unexpandable("g_idx (act-order groups)")
    bits, k, n = int(b.attr("bits", 4)), int(b.attr("K")), int(b.attr("N"))
    block = int(b.attr("block_size"))
    if bits not in (2, 4, 8):
        raise Unexpandable(f"{bits}-bit weights")
    blocks = -(-k // block)
    values = _unpacked(b, b.input(1), bits, [n, blocks, block])
    zero = _zero_points(b, bits, n, blocks)
    scale = b.op("Reshape", [b.input(2), b.ints([n, blocks, 1])])
    centered = b.op("Sub", [b.op("CastLike", [values, scale]), b.op("CastLike", [zero, scale])])
    weights = b.op("Reshape", [b.op("Mul", [centered, scale]), b.ints([n, blocks * block])])
    weights = b.op("Slice", [weights, b.ints([0]), b.ints([k]), b.ints([1])])
    product = b.op("MatMul", [b.input(0), b.op("Transpose", [weights], perm=[1, 0])])
    b.rename(b.plus(product, b.input(5)), b.output(0))


def _unpacked(b: Builder, packed: str, bits: int, shape: list[int]) -> str:
    """The ``bits``-wide fields of uint8 ``packed``, low bits first, reshaped to ``shape``."""
    per_byte = 8 // bits
    shifts = b.const(np.arange(per_byte, dtype=np.uint8) * bits)
    fields = b.op("BitShift", [b.op("Unsqueeze", [packed, b.ints([-1])]), shifts], direction="RIGHT")
    masked = b.op("BitwiseAnd", [fields, b.const(np.uint8(2 ** bits - 1))])
    return b.op("Reshape", [masked, b.ints(shape)])


def _zero_points(b: Builder, bits: int, n: int, blocks: int) -> str:
    """(N, blocks, 1) zero points: the packed input, else the middle of the range."""
    if not b.input(3):
        return b.const(np.uint8(2 ** (bits - 1)))
    per_byte = 8 // bits
    padded = -(-blocks // per_byte) * per_byte
    unpacked = _unpacked(b, b.op("Reshape", [b.input(3), b.ints([n, -1])]), bits, [n, padded])
    sliced = b.op("Slice", [unpacked, b.ints([0]), b.ints([blocks]), b.ints([1])])
    return b.op("Unsqueeze", [sliced, b.ints([-1])])


def gather_block_quantized(node, b: Builder) -> None:
    """GatherBlockQuantized(data, indices, scales, zero_points?) of uint8 ``data`` (N, packed K):
    rows gathered, the quantized axis the last, in blocks of ``block_size`` along it."""
    bits, block = int(b.attr("bits", 4)), int(b.attr("block_size", 128))
    data, rank = b.input(0), b.rank(b.input(0))
    if b.elem_type(data) != TensorProto.UINT8 or rank != 2 or bits not in (2, 4, 8):
        raise Unexpandable("data other than a uint8 table of 2-, 4- or 8-bit values")
    if int(b.attr("gather_axis", 0)) % rank != 0 or int(b.attr("quantize_axis", 1)) % rank != 1:
        raise Unexpandable("a gather along other than the rows, or blocks along other than the last axis")
    fields = _unpacked(b, data, bits, [0, -1, block])                     # (N, blocks, block)
    scale = b.op("Unsqueeze", [b.input(2), b.ints([-1])])                 # (N, blocks, 1)
    zero = b.const(np.uint8(2 ** (bits - 1)))
    if b.input(3):      # packed like the data; the last byte's spare fields are no block's
        blocks = b.op("Shape", [scale], start=1, end=2)
        unpacked = _unpacked(b, b.input(3), bits, [0, -1])
        zero = b.op("Unsqueeze", [b.op("Slice", [unpacked, b.ints([0]), blocks, b.ints([1])]), b.ints([-1])])
    centered = b.op("Sub", [b.op("CastLike", [fields, scale]), b.op("CastLike", [zero, scale])])
    table = b.op("Reshape", [b.op("Mul", [centered, scale]), b.ints([0, -1])])
    b.op("Gather", [table, b.input(1)], b.output(0), axis=0)


EXPANSIONS = {"MatMulNBits": matmul_nbits, "GatherBlockQuantized": gather_block_quantized}
