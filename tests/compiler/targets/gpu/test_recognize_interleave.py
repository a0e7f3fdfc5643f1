"""A concatenation followed by a channel shuffle (ShuffleNet's unit as PyTorch exports it) becomes
one ``interleave`` on the gpu target; near misses stay as they are. Checked without a GPU: the
passes, the op's reference against the concatenate-and-shuffle it replaces, and NumPy standing in
for CuPy against the reference target. The kernel itself: test_interleave.py."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import compiler
from compiler.compile import prepare_program
from compiler.ops.registry import get_op

from tests.compiler.targets.gpu.cases import init, model, vi
from tests.compiler.targets.gpu.norm_cases import check_in_emulation


def shuffle_unit(parts=2, widths=None, shape=(2, 12, 5, 7), extra_output=None, perm=(0, 2, 1, 3, 4),
                 dtype="float32"):
    """x (N, C, H, W) -> branches (a 1x1 convolution + ReLU of channel slices, ``parts`` of them,
    ``widths`` wide) -> Concat -> Reshape (N, parts, C / parts, H, W) -> Transpose ``perm`` -> Reshape
    (N, C, H, W) -> a 1x1 convolution. ``extra_output`` names a middle value returned too."""
    n, c, h, w = shape
    widths = list(widths or [c // parts] * parts)
    t = TensorProto.FLOAT if dtype == "float32" else TensorProto.FLOAT16
    rng = np.random.default_rng(5)
    inits = [init("cuts", np.array(widths, np.int64)),
             init("s5", np.array([n, parts, c // parts, h, w], np.int64)),
             init("s4", np.array([n, c, h, w], np.int64)),
             init("wy", (rng.standard_normal((c, c, 1, 1)) * 0.3).astype(dtype))]
    nodes = [helper.make_node("Split", ["x", "cuts"], [f"x{j}" for j in range(parts)], axis=1)]
    for j, width in enumerate(widths):
        inits.append(init(f"w{j}", (rng.standard_normal((width, width, 1, 1)) * 0.5).astype(dtype)))
        nodes += [helper.make_node("Conv", [f"x{j}", f"w{j}"], [f"c{j}"]),
                  helper.make_node("Relu", [f"c{j}"], [f"r{j}"])]
    nodes += [helper.make_node("Concat", [f"r{j}" for j in range(parts)], ["cat"], axis=1),
              helper.make_node("Reshape", ["cat", "s5"], ["split"]),
              helper.make_node("Transpose", ["split"], ["swapped"], perm=list(perm)),
              helper.make_node("Reshape", ["swapped", "s4"], ["shuffled"]),
              helper.make_node("Conv", ["shuffled", "wy"], ["y"])]
    outputs = [vi("y", None, t)] + ([vi(extra_output, None, t)] if extra_output else [])
    return model(nodes, [vi("x", list(shape), t)], outputs, inits)


def _ops(onnx_model) -> list[str]:
    program = compiler.parse_onnx(onnx_model)
    prepare_program(program, "gpu")
    return [i.op for i in program.main.instructions if not i.op.startswith("@")]


def _feeds(shape=(2, 12, 5, 7), dtype="float32"):
    return {"x": np.random.default_rng(3).standard_normal(shape).astype(dtype)}


@pytest.mark.parametrize("parts", [2, 3, 4])
def test_concatenation_and_shuffle_become_one_interleave(parts):
    ops = _ops(shuffle_unit(parts=parts))
    assert ops.count("interleave") == 1
    assert not {"Concat", "Reshape", "Transpose"} & set(ops)


@pytest.mark.parametrize("near_miss", [
    {"widths": [4, 8]},                   # inputs of two widths: no interleave of equal parts
    {"extra_output": "cat"},              # the concatenation is read elsewhere
    {"extra_output": "swapped"},          # the transposed view is read elsewhere
    {"perm": (0, 1, 2, 4, 3)}])           # another transpose: not a shuffle of the channels
def test_near_misses_keep_their_chain(near_miss):
    shape = (2, 12, 5, 5) if "perm" in near_miss else (2, 12, 5, 7)
    ops = _ops(shuffle_unit(shape=shape, **near_miss))
    assert "interleave" not in ops and "Concat" in ops


@pytest.mark.parametrize("parts", [2, 3])
def test_reference_equals_the_concatenation_and_shuffle(parts):
    rng = np.random.default_rng(parts)
    xs = [rng.standard_normal((2, 4, 3, 5)).astype(np.float32) for _ in range(parts)]
    cat = np.concatenate(xs, axis=1)
    shuffled = cat.reshape(2, parts, 4, 3, 5).transpose(0, 2, 1, 3, 4).reshape(cat.shape)
    np.testing.assert_array_equal(get_op("interleave").compute({"axis": 1}, *xs), shuffled)
    last = get_op("interleave").compute({"axis": 3}, *xs)          # along another axis too
    np.testing.assert_array_equal(last[..., 1::parts], xs[1])


@pytest.mark.parametrize("kwargs", [{}, {"parts": 3}, {"widths": [4, 8]}, {"extra_output": "cat"}])
def test_rewritten_graph_matches_reference_in_emulation(kwargs):
    check_in_emulation(shuffle_unit(**kwargs), _feeds(), 1e-5)
