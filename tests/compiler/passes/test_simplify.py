"""Simplification passes: each test builds an input module, runs one pass, and compares the
printed result with an expected module built with the IR API."""
import numpy as np
import pytest

from compiler.ir import Program, Shape
from compiler.ops.registry import has_op
from compiler.passes.dead_code_elimination import DeadCodeElimination
from compiler.passes.eliminate_identity import EliminateIdentity
from compiler.passes.pass_manager import run_passes
from compiler.passes.propagate_constant import PropagateConstant
from compiler.passes.simplify_reshapes import SimplifyReshapes

F = Shape("float32", (2, 3))


def applied(program, *passes) -> str:
    run_passes(program, program.main, list(passes))
    program.validate()
    return str(program.main)


def test_dead_code_elimination_removes_unused_chain_keeps_params():
    p = Program()
    x = p.main.add_parameter("x", F)
    unused = p.main.add_parameter("unused", F)
    dead = p.main.add_instruction("Relu", [x])
    p.main.add_instruction("Exp", [dead])
    p.main.add_literal(np.ones(3, np.float32))
    r = p.main.add_instruction("Tanh", [x])
    p.main.add_return([r])

    e = Program()
    x = e.main.add_parameter("x", F)
    e.main.add_parameter("unused", F)
    e.main.add_return([e.main.add_instruction("Tanh", [x])])
    assert unused.users == []
    assert applied(p, DeadCodeElimination()) == str(e.main)


def test_eliminate_identity_rewires_users_and_return():
    p = Program()
    x = p.main.add_parameter("x", F)
    i1 = p.main.add_instruction("Identity", [x])
    r = p.main.add_instruction("Relu", [i1])
    i2 = p.main.add_instruction("Identity", [r])
    p.main.add_return([i2, i1])

    e = Program()
    x = e.main.add_parameter("x", F)
    e.main.add_return([e.main.add_instruction("Relu", [x]), x])
    assert applied(p, EliminateIdentity()) == str(e.main)


PASS_THROUGH = [
    ("Pad", {"mode": "constant", "pads": [0, 0, 0, 0], "value": 0.0, "axes": None}, None),
    ("Pad", {"mode": "reflect", "pads": [0, 0, 0, 0], "value": None, "axes": None}, None),
    ("Cast", {"to": "float32"}, None),
    ("Concat", {"axis": 1}, None),
    ("Transpose", {"perm": [0, 1]}, None),
    ("Expand", {}, np.array([2, 3], np.int64)),
    ("Expand", {"shape": [1, 3]}, None),
    ("Tile", {"repeats": [1, 1]}, None),
]

CHANGES_THE_VALUE = [
    ("Pad", {"mode": "constant", "pads": [0, 1, 0, 0], "value": 0.0, "axes": None}, None),
    ("Pad", {"mode": "constant", "pads": [0, 1, 0, -1], "value": 0.0, "axes": None}, None),  # a shift
    ("Cast", {"to": "float16"}, None),
    ("Transpose", {"perm": [1, 0]}, None),
    ("Expand", {}, np.array([4, 2, 3], np.int64)),
    ("Tile", {"repeats": [1, 2]}, None),
]


def _one(op, attrs, second):
    p = Program()
    x = p.main.add_parameter("x", F)
    inputs = [x] if second is None else [x, p.main.add_literal(second)]
    y = p.main.add_instruction(op, inputs, dict(attrs))
    p.main.add_return([p.main.add_instruction("Relu", [y])])
    return p


@pytest.mark.parametrize("op, attrs, second", PASS_THROUGH)
def test_ops_that_pass_their_input_through_are_removed(op, attrs, second):
    program = _one(op, attrs, second)
    run_passes(program, program.main, [EliminateIdentity(), DeadCodeElimination()])
    program.validate()
    assert [i.op for i in program.main.instructions] == ["@param", "Relu", "@return"]


@pytest.mark.parametrize("op, attrs, second", CHANGES_THE_VALUE)
def test_ops_that_change_the_value_stay(op, attrs, second):
    program = _one(op, attrs, second)
    run_passes(program, program.main, [EliminateIdentity()])
    assert op in [i.op for i in program.main.instructions]


def test_a_concat_of_two_stays():
    p = Program()
    x = p.main.add_parameter("x", F)
    p.main.add_return([p.main.add_instruction("Concat", [x, x], {"axis": 0})])
    run_passes(p, p.main, [EliminateIdentity()])
    assert "Concat" in [i.op for i in p.main.instructions]


def test_propagate_constant_folds_literal_subgraphs_only():
    p = Program()
    x = p.main.add_parameter("x", F)
    a = p.main.add_literal(np.full((2, 3), 2.0, np.float32))
    b = p.main.add_literal(np.full((2, 3), 3.0, np.float32))
    c = p.main.add_instruction("Mul", [a, b])
    d = p.main.add_instruction("Neg", [c])
    p.main.add_return([p.main.add_instruction("Add", [x, d])])

    e = Program()
    x = e.main.add_parameter("x", F)
    lit = e.main.add_literal(np.full((2, 3), -6.0, np.float32))
    e.main.add_return([e.main.add_instruction("Add", [x, lit])])
    assert applied(p, PropagateConstant(), DeadCodeElimination()) == str(e.main)


need_shape_ops = pytest.mark.skipif(not (has_op("Reshape") and has_op("Transpose")),
                                    reason="Reshape/Transpose not registered yet")


@need_shape_ops
def test_simplify_reshapes_merges_chain_and_drops_noop():
    p = Program()
    x = p.main.add_parameter("x", Shape("float32", (2, 3, 4)))
    r1 = p.main.add_instruction("Reshape", [x], attrs={"shape": [6, 4], "allowzero": 0})
    r2 = p.main.add_instruction("Flatten", [r1], attrs={"axis": 0})
    r3 = p.main.add_instruction("Reshape", [r2], attrs={"shape": [24], "allowzero": 0})
    p.main.add_return([p.main.add_instruction("Relu", [r3])])

    e = Program()
    x = e.main.add_parameter("x", Shape("float32", (2, 3, 4)))
    r = e.main.add_instruction("Reshape", [x], attrs={"shape": [24], "allowzero": 0})
    e.main.add_return([e.main.add_instruction("Relu", [r])])
    assert applied(p, SimplifyReshapes(), DeadCodeElimination()) == str(e.main)


@need_shape_ops
def test_simplify_reshapes_composes_and_cancels_transposes():
    p = Program()
    x = p.main.add_parameter("x", Shape("float32", (2, 3, 4)))
    t1 = p.main.add_instruction("Transpose", [x], attrs={"perm": [1, 2, 0]})
    t2 = p.main.add_instruction("Transpose", [t1], attrs={"perm": [2, 0, 1]})  # cancels
    t3 = p.main.add_instruction("Transpose", [x], attrs={"perm": [1, 0, 2]})
    t4 = p.main.add_instruction("Transpose", [t3], attrs={"perm": [0, 2, 1]})
    p.main.add_return([t2, t4])

    e = Program()
    x = e.main.add_parameter("x", Shape("float32", (2, 3, 4)))
    t = e.main.add_instruction("Transpose", [x], attrs={"perm": [1, 2, 0]})
    e.main.add_return([x, t])
    assert applied(p, SimplifyReshapes(), DeadCodeElimination()) == str(e.main)
    # The composed permutation computes what the two did.
    v = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert np.array_equal(v.transpose(1, 0, 2).transpose(0, 2, 1), v.transpose(1, 2, 0))
