"""Partition: assignment policy, outlining into target roots, nesting, deterministic interfaces.

Each test partitions an input program and compares the printed result with the expected listing
(no target passes run here, so the listing shows the partition alone)."""
import numpy as np
import pytest

from compiler.errors import CompileError
from compiler.ir import Program, Shape
from compiler.passes.partition import Partition, root_call_order
from compiler.passes.pass_manager import run_passes
from compiler.targets.base import register_target
from compiler.targets.ref.device_sim import make_sim_target

F = Shape("float32", (2, 4))


@pytest.fixture(autouse=True)
def sim_target():
    register_target("sim", make_sim_target)


def chain() -> Program:
    """x → Add(W) → Relu → Tanh → Mul(x): the Tanh is what tests move elsewhere."""
    p = Program()
    m = p.main
    x = m.add_parameter("x", F)
    w = m.add_literal(np.arange(8, dtype=np.float32).reshape(2, 4))
    r = m.add_instruction("Relu", [m.add_instruction("Add", [x, w])])
    t = m.add_instruction("Tanh", [r], name="tanh_node")
    m.add_return([m.add_instruction("Mul", [t, x])])
    return p


def partitioned(program, targets, assign) -> str:
    run_passes(program, program.main, [Partition(targets, assign)])
    program.validate()
    return str(program)


def test_runs_of_same_target_become_roots_called_from_main():
    text = partitioned(chain(), ["sim", "cpu"], {"Tanh": "cpu"})
    assert text == """\
module main (root, target ref):
  %0 = @param "x" -> float32[2,4]
  %1 = @literal [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]] -> float32[2,4]
  %2 = run_on_target{"target":"sim"}(%0)[sim_root_0] -> (float32[2,4])
  %3 = get_tuple_elem{"index":0}(%2) -> float32[2,4]
  %4 = run_on_target{"target":"cpu"}(%3)[cpu_root_0] -> (float32[2,4])
  %5 = get_tuple_elem{"index":0}(%4) -> float32[2,4]
  %6 = run_on_target{"target":"sim"}(%5, %0)[sim_root_1] -> (float32[2,4])
  %7 = get_tuple_elem{"index":0}(%6) -> float32[2,4]
  @return(%7)

module sim_root_0 (root, target sim):
  %0 = @param "p0" -> float32[2,4]
  %1 = @literal [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]] -> float32[2,4]
  %2 = Add(%0, %1) @sim -> float32[2,4]
  %3 = Relu(%2) @sim -> float32[2,4]
  @return(%3)

module cpu_root_0 (root, target cpu):
  %0 = @param "p0" -> float32[2,4]
  %1 = Tanh(%0) @cpu -> float32[2,4]
  @return(%1)

module sim_root_1 (root, target sim):
  %0 = @param "p0" -> float32[2,4]
  %1 = @param "p1" -> float32[2,4]
  %2 = Mul(%0, %1) @sim -> float32[2,4]
  @return(%2)
"""


def test_target_path_nests_a_cpu_root_inside_a_sim_root_inside_main():
    program = chain()
    text = partitioned(program, ["sim", "cpu"], {"tanh_node": "sim/cpu/sim"})
    assert "\n".join(line for line in text.splitlines() if "run_on_target" in line or "module" in line) == """\
module main (root, target ref):
  %2 = run_on_target{"target":"sim"}(%0)[sim_root_0] -> (float32[2,4])
module sim_root_0 (root, target sim):
  %4 = run_on_target{"target":"cpu"}(%3)[cpu_root_0] -> (float32[2,4])
module cpu_root_0 (root, target cpu):
  %1 = run_on_target{"target":"sim"}(%0)[sim_root_1] -> (float32[2,4])
module sim_root_1 (root, target sim):"""
    assert [i.op for i in program.modules["sim_root_1"]] == ["@param", "Tanh", "@return"]
    # Callees are compiled before their callers.
    assert root_call_order(program) == ["sim_root_1", "cpu_root_0", "sim_root_0", "main"]


def test_parameters_in_order_of_first_read_and_returns_in_definition_order():
    p = Program()
    m = p.main
    a, b = m.add_parameter("a", F), m.add_parameter("b", F)
    s = m.add_instruction("Sub", [b, a])   # reads b first
    e = m.add_instruction("Exp", [s])
    n = m.add_instruction("Neg", [e])
    m.add_return([m.add_instruction("Add", [n, s]), e])
    partitioned(p, ["cpu", "ref"], {"Exp": "ref", "Neg": "ref"})
    cpu0 = p.modules["cpu_root_0"]
    call = next(i for i in p.main if i.op == "run_on_target")
    assert [i.name for i in call.inputs] == ["b", "a"]
    assert [i.op for i in cpu0.get_return().inputs] == ["Sub"]
    ref0 = p.modules["ref_root_0"]
    assert [i.op for i in ref0.get_return().inputs] == ["Exp", "Neg"]


def test_policy_uses_first_supporting_target_and_instruction_names_beat_op_types():
    p = chain()
    partitioned(p, ["cpu", "sim"], {"Relu": "sim", "tanh_node": "cpu"})
    assert sorted(p.roots.items()) == [("cpu_root_0", "cpu"), ("cpu_root_1", "cpu"),
                                       ("main", "ref"), ("sim_root_0", "sim")]


@pytest.mark.parametrize("assign, message", [
    ({"Tanh": "gpu9"}, "not among the targets"),
    ({"NoSuchOp": "cpu"}, "match no op type"),
    ({"Tanh": ""}, "names no target"),
])
def test_bad_assignments_are_compile_errors(assign, message):
    with pytest.raises(CompileError, match=message):
        partitioned(chain(), ["sim", "cpu"], assign)
