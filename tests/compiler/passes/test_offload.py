"""Per-root offload copies, output parameters, boundary copies and literal promotion.

The device target here is the simulated one (``compiler.targets.ref.device_sim``) and, where its
package is present, the real ``gpu`` target: its passes up to lowering run without a GPU."""
import importlib.util
import sys

import numpy as np
import pytest

from compiler.compile import prepare_program
from compiler.ir import Program, Shape
from compiler.ops.structural import allocate_attrs
from compiler.passes.pass_manager import ModulePassManager
from compiler.passes.replace_allocate import ReplaceAllocate
from compiler.targets.base import get_target, register_target
from compiler.targets.ref.device_sim import make_sim_target

F = Shape("float32", (2, 4))
HAVE_GPU_PACKAGE = importlib.util.find_spec("compiler.targets.gpu") is not None and \
    importlib.util.find_spec("compiler.targets.gpu.__init__") is not None


@pytest.fixture(autouse=True)
def sim_target():
    register_target("sim", make_sim_target)


def device_names():
    return ["sim", pytest.param("gpu", marks=pytest.mark.skipif(
        not HAVE_GPU_PACKAGE, reason="compiler.targets.gpu not present"))]


def chain(unused_param: bool = False) -> Program:
    p = Program()
    m = p.main
    x = m.add_parameter("x", F)
    y = m.add_parameter("y", F)
    if unused_param:
        m.add_parameter("unused", F)
    w = m.add_literal(np.arange(8, dtype=np.float32).reshape(2, 4))
    r = m.add_instruction("Relu", [m.add_instruction("Add", [x, w])])
    t = m.add_instruction("Tanh", [r])
    s = m.add_instruction("Sigmoid", [m.add_instruction("Mul", [t, y])])
    m.add_return([s, r])
    return p


def ops(module) -> list[str]:
    return [i.op for i in module.instructions]


def count(module, op) -> int:
    return sum(i.op == op for i in module.instructions)


def device_roots(program, device):
    return [program.modules[n] for n, t in program.roots.items() if t == device]


@pytest.mark.parametrize("device", device_names())
def test_offload_on_copies_each_used_parameter_and_each_returned_value(device):
    loaded = "cupy" in sys.modules    # an earlier test in this process may have loaded it
    p = prepare_program(chain(), [device, "cpu"], offload_copy=True, assign={"Tanh": "cpu"})
    assert ("cupy" in sys.modules) == loaded  # structure only: preparing loads no device library
    roots = device_roots(p, device)
    assert len(roots) == 2
    for root in roots:
        used = [q for q in root.parameters() if q.users]
        assert count(root, "copy_to_device") == len(used) > 0
        assert count(root, "copy_from_device") == len(root.get_return().inputs)
        assert all(i.op == "copy_from_device" for i in root.get_return().inputs)
        assert not any(":#output_" in q.name for q in root.parameters())
    for name in ("main", "cpu_root_0"):  # host roots take host data: no copies at all
        assert count(p.modules[name], "copy_to_device") == count(p.modules[name], "copy_from_device") == 0


@pytest.mark.parametrize("device", device_names())
def test_offload_off_returns_become_output_parameters_and_host_caller_copies(device):
    p = prepare_program(chain(), [device, "cpu"], offload_copy=False, assign={"Tanh": "cpu"})
    for root in device_roots(p, device):
        outs = [q.name for q in root.parameters() if ":#output_" in q.name]
        assert outs == [f"{root.name}:#output_{i}" for i in range(len(root.get_return().inputs))]
        assert count(root, "copy_to_device") == count(root, "copy_from_device") == 0
    # main supplies the buffers and copies where data moves between host and device.
    main = p.main
    assert count(main, "allocate") == sum(len(r.get_return().inputs) for r in device_roots(p, device))
    assert count(main, "copy_to_device") >= 1 and count(main, "copy_from_device") >= 1
    assert count(p.modules["cpu_root_0"], "copy_to_device") == 0


def test_offload_on_skips_unused_parameters_and_host_targets():
    p = prepare_program(chain(unused_param=True), "sim", offload_copy=True)
    copied = [i.inputs[0].name for i in p.main if i.op == "copy_to_device"]
    assert copied == ["x", "y"]
    q = prepare_program(chain(), "cpu", offload_copy=True)
    assert "copy_to_device" not in ops(q.main) and "copy_from_device" not in ops(q.main)


def test_offload_off_single_device_root_names_outputs_after_itself():
    p = prepare_program(chain(), "sim", offload_copy=False)
    assert p.main.parameter_names() == ["x", "y", "main:#output_0", "main:#output_1"]
    ret = p.main.get_return()
    assert [i.op for i in ret.inputs] == ["copy", "copy"]
    assert [i.inputs[1].name for i in ret.inputs] == ["main:#output_0", "main:#output_1"]


def test_replace_allocate_turns_returned_allocation_into_output_parameter():
    def build(expected: bool) -> Program:
        p = Program()
        m = p.main
        x = m.add_parameter("x", F)
        if expected:
            out = m.add_parameter("main:#output_0", F)
        else:
            out = m.add_instruction("allocate", [], attrs=allocate_attrs(F, "sim"))
        filled = m.add_instruction("copy", [x, out], attrs={"target": "sim"})
        m.add_return([filled])
        return p

    p = build(False)
    ReplaceAllocate("sim", offload_copy=False).apply(ModulePassManager(p, p.main, p.main))
    p.validate()
    assert str(p.main) == str(build(True).main)
    # With offload_copy on the pass leaves the root alone.
    q = build(False)
    ReplaceAllocate("sim", offload_copy=True).apply(ModulePassManager(q, q.main, q.main))
    assert "allocate" in ops(q.main)


def test_device_root_calling_host_root_gets_boundary_copies_with_offload_off():
    p = prepare_program(chain(), ["sim", "cpu"], offload_copy=False, assign={"Tanh": "sim/cpu"})
    outer = p.modules["sim_root_0"]
    call = next(i for i in outer if i.op == "run_on_target")
    assert [i.op for i in call.inputs] == ["copy_from_device"]
    elem = next(u for u in call.users)
    assert [u.op for u in elem.users] == ["copy_to_device"]


def test_sim_device_refuses_host_values_so_missing_copies_cannot_pass():
    from compiler.targets.ref.device_sim import DeviceMemoryError
    p = chain().compile("sim", offload_copy=False)
    x = np.ones((2, 4), np.float32)
    with pytest.raises(DeviceMemoryError):
        p.compiled.run_raw([x, x, get_target("sim").allocate(F), get_target("sim").allocate(F)])
