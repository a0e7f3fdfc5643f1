"""collapse_view_chains: a movement chain that merges axes partway and splits them again becomes
split, transpose, merge of its source, with the reference's result; chains it cannot express so
are left as they are."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import compiler
from compiler.passes.collapse_view_chains import CollapseViewChains
from compiler.passes.dead_code_elimination import DeadCodeElimination
from compiler.passes.pass_manager import run_passes
from tests.compiler.targets.gpu.cases import init, model, vi


def _chain(shape, steps):
    """x -> Relu (the chain's source) -> each step ("reshape", lens) or ("transpose", perm) -> y."""
    nodes, inits, prev = [helper.make_node("Relu", ["x"], ["s0"])], [], "s0"
    for k, (kind, arg) in enumerate(steps):
        out = f"s{k + 1}"
        if kind == "reshape":
            inits.append(init(f"shape{k}", np.array(arg, np.int64)))
            nodes.append(helper.make_node("Reshape", [prev, f"shape{k}"], [out]))
        else:
            nodes.append(helper.make_node("Transpose", [prev], [out], perm=list(arg)))
        prev = out
    nodes.append(helper.make_node("Identity", [prev], ["y"]))
    return model(nodes, [vi("x", shape, TensorProto.FLOAT)], [vi("y", None, TensorProto.FLOAT)], inits)


def _collapsed(onnx_model, collapse=True):
    program = compiler.parse_onnx(onnx_model)
    run_passes(program, program.main, [CollapseViewChains()] * collapse + [DeadCodeElimination()])
    return program


# PyTorch's MultiheadAttention head split: (seq, batch, hidden) -> (seq, batch·heads, size) ->
# (batch·heads, seq, size) -> (batch, heads, seq, size); and its merge back after attention.
MHA_SPLIT = ((7, 2, 12), [("reshape", (7, 6, 4)), ("transpose", (1, 0, 2)), ("reshape", (2, 3, 7, 4))])
MHA_MERGE = ((2, 3, 7, 4), [("reshape", (6, 7, 4)), ("transpose", (1, 0, 2)), ("reshape", (14, 12))])
CASES = [MHA_SPLIT, MHA_MERGE,
         ((4, 6), [("reshape", (2, 2, 6)), ("transpose", (2, 0, 1)), ("reshape", (6, 4))]),
         ((2, 3, 4, 5), [("reshape", (6, 20)), ("reshape", (6, 4, 5)), ("transpose", (0, 2, 1))]),
         ((6, 10), [("transpose", (1, 0)), ("reshape", (2, 5, 6)), ("transpose", (1, 2, 0))]),
         ((6, 4), [("transpose", (1, 0)), ("reshape", (24,)), ("reshape", (4, 6))])]   # a transpose after all


@pytest.mark.parametrize("shape, steps", CASES)
def test_collapsed_chain_equals_reference(shape, steps):
    onnx_model = _chain(shape, steps)
    x = {"x": np.random.default_rng(4).standard_normal(shape).astype(np.float32)}
    want = compiler.parse_onnx(onnx_model).compile("ref").run(x)[0]
    got = _collapsed(onnx_model).compile("ref").run(x)[0]
    np.testing.assert_array_equal(got, want)


def test_head_split_becomes_one_split_and_one_transpose():
    ops = [i.op for i in _collapsed(_chain(*MHA_SPLIT)).main.instructions]
    assert ops.count("Transpose") == 1 and ops.count("Reshape") == 2
    transpose = next(i for i in _collapsed(_chain(*MHA_SPLIT)).main.instructions if i.op == "Transpose")
    assert transpose.attrs["perm"] == [1, 2, 0, 3]


@pytest.mark.parametrize("shape, steps", [
    ((4, 6), [("reshape", (6, 4)), ("transpose", (1, 0))]),                  # nothing merged before the end
    ((6, 4), [("reshape", (6, 4)), ("transpose", (1, 0)), ("reshape", (24,))]),  # a transposed merge: stays
    ((5, 6), [("reshape", (3, 10)), ("transpose", (1, 0))])])                 # 3 cuts an axis of 5
def test_chains_it_cannot_or_need_not_improve_stay(shape, steps):
    before = [i.op for i in _collapsed(_chain(shape, steps), collapse=False).main.instructions]
    after = [i.op for i in _collapsed(_chain(shape, steps)).main.instructions]
    assert before == after
