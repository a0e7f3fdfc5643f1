"""Partitioned programs run and return what the single-target reference returns, with
offload_copy on and off, over host targets (cpu, ref) and the simulated device (which fails on
any missing copy), including nested roots."""
import numpy as np
import pytest

from compiler.errors import FeedError
from compiler.ir import Program, Shape
from compiler.ops.registry import has_op
from compiler.targets.base import register_target
from compiler.targets.ref.device_sim import make_sim_target


@pytest.fixture(autouse=True)
def sim_target():
    register_target("sim", make_sim_target)


def mlp() -> Program:
    """x → MatMul(W1) → Add(b) → Relu → Tanh → MatMul(W2) → Sigmoid, plus a second output."""
    rng = np.random.default_rng(7)
    p = Program()
    m = p.main
    x = m.add_parameter("x", Shape("float32", (3, 8)))
    w1 = m.add_literal(rng.standard_normal((8, 16)).astype(np.float32))
    b = m.add_literal(rng.standard_normal(16).astype(np.float32))
    w2 = m.add_literal(rng.standard_normal((16, 4)).astype(np.float32))
    h = m.add_instruction("Relu", [m.add_instruction("Add", [m.add_instruction("MatMul", [x, w1]), b])])
    t = m.add_instruction("Tanh", [h], name="squash")
    y = m.add_instruction("Sigmoid", [m.add_instruction("MatMul", [t, w2])])
    m.add_return([y, h])
    return p


FEEDS = {"x": np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)}


@pytest.fixture(scope="module")
def expected():
    return mlp().compile("ref").run(FEEDS)


CASES = [
    (["cpu", "ref"], {"Tanh": "ref"}),
    (["cpu", "ref"], {"MatMul": "ref"}),
    (["ref", "cpu"], {"squash": "ref/cpu/ref"}),   # ref → cpu → ref, nested
    (["sim", "cpu"], {"Tanh": "cpu"}),
    (["sim", "cpu"], {"Tanh": "sim/cpu"}),           # sim → cpu inside one sim root
    (["sim", "cpu"], {"Tanh": "sim/cpu/sim"}),       # sim → cpu → sim
    (["cpu", "sim"], {"Relu": "cpu/sim", "Tanh": "cpu/sim/cpu"}),
    (["sim"], None),
    (["cpu"], None),
]


@pytest.mark.parametrize("offload_copy", [True, False], ids=["offload", "no-offload"])
@pytest.mark.parametrize("targets, assign", CASES, ids=lambda v: str(v))
def test_partitioned_program_equals_reference(targets, assign, offload_copy, expected):
    program = mlp().compile(targets, offload_copy=offload_copy, assign=assign)
    got = program.run(FEEDS)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert isinstance(g, np.ndarray) and g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    if len(targets) > 1:
        assert len(program.roots) >= 3


def test_printed_program_shows_each_roots_parameters_and_copies():
    text = str(mlp().compile(["sim", "cpu"], offload_copy=True, assign={"Tanh": "cpu"}))
    assert "module sim_root_0 (root, target sim):" in text
    assert "module cpu_root_0 (root, target cpu):" in text
    sim1 = text.split("module sim_root_1")[1]
    assert sim1.count("@param") == 1 and sim1.count("copy_to_device") == 1
    assert sim1.count("copy_from_device") == 1


@pytest.mark.parametrize("feeds, message", [
    ({"y": np.zeros((3, 8), np.float32)}, r"missing x; unknown y; expected inputs: x: float32\[3,8\]"),
    ({"x": np.zeros((3, 9), np.float32)}, r"input 'x' is float32\[3, 9\]; expected inputs: x: float32\[3,8\]"),
    ({"x": np.zeros((3, 8), np.float64)}, r"input 'x' is float64\[3, 8\]"),
])
def test_bad_feeds_name_what_was_expected(feeds, message):
    program = mlp().compile(["cpu", "ref"], assign={"Tanh": "ref"})
    with pytest.raises(FeedError, match=message):
        program.run(feeds)


@pytest.mark.skipif(not has_op("Softmax"), reason="Softmax not registered yet")
@pytest.mark.parametrize("offload_copy", [True, False])
def test_softmax_on_ref_inside_cpu_program_matches(offload_copy):
    p = Program()
    x = p.main.add_parameter("x", Shape("float32", (2, 5)))
    s = p.main.add_instruction("Softmax", [p.main.add_instruction("Exp", [x])], attrs={"axis": -1})
    p.main.add_return([p.main.add_instruction("Neg", [s])])
    feeds = {"x": np.linspace(-1, 1, 10, dtype=np.float32).reshape(2, 5)}
    e = np.exp(np.exp(feeds["x"]))
    got = p.compile(["cpu", "ref"], offload_copy=offload_copy, assign={"Softmax": "ref"}).run(feeds)
    assert p.roots["ref_root_0"] == "ref"
    np.testing.assert_allclose(got[0], -e / e.sum(-1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("targets", ["cpu", ["cpu", "ref"]])
def test_assignment_key_matching_nothing_is_an_error(targets):
    from compiler.errors import CompileError
    with pytest.raises(CompileError, match="Sigmod.*did you mean Sigmoid"):
        mlp().compile(targets, assign={"Sigmod": "cpu"})
