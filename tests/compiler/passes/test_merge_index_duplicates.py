"""merge_index_duplicates: a repeated integer or boolean computation is made once, a repeated
small integer literal is kept once; float computations, random ops and large literals stay as
they are. Each test builds a module with the IR API, runs the pass, and compares the result."""
import numpy as np

import compiler
from compiler.ir import Program, Shape
from compiler.passes.merge_index_duplicates import MergeIndexDuplicates
from compiler.passes.pass_manager import run_passes

I64 = Shape("int64", (4,))
F = Shape("float32", (4,))


def applied(program) -> list:
    run_passes(program, program.main, [MergeIndexDuplicates()])
    program.validate()
    return [i.op for i in program.main.instructions]


def test_a_repeated_index_chain_is_computed_once():
    p = Program()
    m = p.main
    lens = m.add_parameter("lens", I64)
    one_a, one_b = m.add_literal(np.array(1, np.int64)), m.add_literal(np.array(1, np.int64))
    ends_a, ends_b = m.add_instruction("Add", [lens, one_a]), m.add_instruction("Add", [lens, one_b])
    seen_a = m.add_instruction("Less", [lens, ends_a])
    seen_b = m.add_instruction("Less", [lens, ends_b])
    m.add_return([seen_a, seen_b])
    assert applied(p) == ["@param", "@literal", "Add", "Less", "@return"]
    ret = m.get_return()
    assert ret.inputs[0] is ret.inputs[1]


def test_float_computations_and_random_ops_stay():
    p = Program()
    m = p.main
    x = m.add_parameter("x", F)
    m.add_return([m.add_instruction("Relu", [x]), m.add_instruction("Relu", [x]),
                  m.add_instruction("Bernoulli", [x], {"dtype": "int64", "seed": None}),
                  m.add_instruction("Bernoulli", [x], {"dtype": "int64", "seed": None})])
    ops = applied(p)
    assert ops.count("Relu") == 2 and ops.count("Bernoulli") == 2


def test_different_attributes_or_large_literals_are_not_merged():
    p = Program()
    m = p.main
    x = m.add_parameter("x", Shape("float32", (4, 4)))
    big_a, big_b = (m.add_literal(np.arange(100, dtype=np.int64)) for _ in range(2))
    first, last = ({"axis": 0, "keepdims": 1, "select_last_index": last} for last in (0, 1))
    m.add_return([m.add_instruction("ArgMax", [x], first), m.add_instruction("ArgMax", [x], last), big_a, big_b])
    ops = applied(p)
    assert ops.count("ArgMax") == 2 and ops.count("@literal") == 2


def test_a_decoder_s_attention_layers_share_their_masks_and_compute_the_same():
    """Two GroupQueryAttention nodes on the same seqlens_k: after the pass the second layer reads
    the first one's cache rows and mask, and the outputs equal ONNX Runtime's."""
    import onnxruntime as ort
    from onnx import helper

    from tests.compiler.onnx.test_group_query_attention import _gqa
    model, feeds = _gqa(2, 1, 6, [6, 3], 7)
    graph = model.graph
    second = helper.make_node("GroupQueryAttention", ["y", "k", "v", "past_k", "past_v", "seqlens_k", "total"],
                              ["y2", "present_k2", "present_v2"], domain="com.microsoft", num_heads=4, kv_num_heads=2)
    graph.node.append(second)
    graph.output.append(helper.make_tensor_value_info("y2", 1, None))
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    program = compiler.parse_onnx(model)
    program.compile("cpu")      # the reference target runs the graph as it is, with no passes
    for got, expected in zip(program.run(feeds), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    ranges = [i for module in program for i in module.instructions if i.op == "Range"]
    assert len(ranges) == 2       # the new tokens' steps and the cache's rows, once for both layers
