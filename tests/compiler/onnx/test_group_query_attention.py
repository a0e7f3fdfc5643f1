"""ONNX Runtime's GroupQueryAttention, expanded on import (``compiler/onnx/contrib/
group_query_attention.py``): each case one node, run by ONNX Runtime's CPU kernel and by our
targets on the same random inputs, the present caches included. Rows of a padded prompt past an
item's length are left unspecified by the operator and are not compared."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import compiler
from compiler.errors import UnsupportedOperatorError
from compiler.targets.gpu.options import GpuOptions

F16, F32, I32, I64 = TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64
HEADS, KV_HEADS, SIZE = 4, 2, 32     # ONNX Runtime's CPU kernel rotates heads of 16·k features only


def _gqa(batch, new, past, seqlens, total, attrs=None, *, packed=False, rotary=0, positions=None,
         bias=False, sink=False, norms=False, heads=HEADS, kv_heads=KV_HEADS, dtype=np.float32, seed=0):
    """One GroupQueryAttention node and its feeds: ``new`` tokens a batch item, ``past`` rows of
    cache (None: no past inputs), ``rotary`` the cos/sin caches' width (0: no rotation)."""
    rng = np.random.default_rng(seed)
    kind = F32 if dtype == np.float32 else F16
    attrs = {"num_heads": heads, "kv_num_heads": kv_heads, **(attrs or {})}
    inputs, feeds, inits = [], {}, []
    names: list[str] = []

    def given(name, value, elem=kind):
        inputs.append(helper.make_tensor_value_info(name, elem, list(value.shape)))
        feeds[name] = value
        names.append(name)

    def constant(name, value):
        inits.append(numpy_helper.from_array(value, name))
        names.append(name)

    def random(*shape):
        return rng.standard_normal(shape).astype(dtype)

    if packed:
        given("qkv", random(batch, new, (heads + 2 * kv_heads) * SIZE))
        names += ["", ""]
    else:
        given("q", random(batch, new, heads * SIZE))
        given("k", random(batch, new, kv_heads * SIZE))
        given("v", random(batch, new, kv_heads * SIZE))
    if past is None:
        names += ["", ""]
    else:
        given("past_k", random(batch, kv_heads, past, SIZE))
        given("past_v", random(batch, kv_heads, past, SIZE))
    given("seqlens_k", np.array(seqlens, np.int32), I32)
    given("total", np.array(total, np.int32), I32)
    if rotary:
        constant("cos", random(64, rotary))
        constant("sin", random(64, rotary))
        attrs["do_rotary"] = 1
    else:
        names += ["", ""]
    if positions is not None:
        given("positions", np.asarray(positions, np.int64), I64)
    else:
        names.append("")
    if bias:
        given("bias", random(batch, 1, new, total))
    else:
        names.append("")
    if sink:
        constant("sink", random(heads))
    else:
        names.append("")
    if norms:
        names += ["", ""]
        constant("q_norm", random(SIZE))
        constant("k_norm", random(SIZE))
    while names and not names[-1]:
        names.pop()
    node = helper.make_node("GroupQueryAttention", names, ["y", "present_k", "present_v"],
                            domain="com.microsoft", **attrs)
    graph = helper.make_graph([node], "gqa", inputs,
                              [helper.make_tensor_value_info(n, kind, None) for n in ("y", "present_k", "present_v")],
                              inits)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=8)
    return model, feeds


CASES = {
    "prompt": _gqa(2, 5, None, [4, 4], 5),
    "prompt_into_a_longer_cache": _gqa(2, 5, 8, [4, 4], 5),
    "decode_items_of_different_lengths": _gqa(2, 1, 6, [6, 3], 7),
    "decode_into_a_cache_buffer": _gqa(2, 1, 8, [6, 3], 7),
    "later_prompt_chunk": _gqa(1, 3, 6, [8], 9),
    "rotary_halves": _gqa(2, 1, 6, [6, 3], 7, rotary=16),
    "rotary_interleaved_prompt": _gqa(2, 5, None, [4, 4], 5, {"rotary_interleaved": 1}, rotary=16),
    "rotary_partial": _gqa(2, 1, 6, [6, 3], 7, rotary=8),
    "rotary_position_ids": _gqa(2, 1, 6, [6, 3], 7, rotary=16, positions=[[9], [2]]),
    "rotary_position_ids_chunk": _gqa(1, 3, 6, [8], 9, rotary=16, positions=[[4, 9, 1]]),
    "rotary_position_ids_first_prompt": _gqa(2, 5, None, [4, 4], 5, rotary=16, positions=[[3, 4, 5, 6, 7],
                                                                                         [0, 2, 4, 6, 8]]),
    "local_window_decode": _gqa(2, 1, 6, [6, 3], 7, {"local_window_size": 2}),
    "local_window_prompt": _gqa(2, 5, None, [4, 4], 5, {"local_window_size": 3}),
    "softcap_and_scale": _gqa(2, 1, 6, [6, 3], 7, {"softcap": 2.0, "scale": 0.7}),
    "packed_query_key_value": _gqa(2, 1, 6, [6, 3], 7, packed=True),
    "attention_bias": _gqa(2, 1, 6, [6, 6], 7, bias=True),
    "head_sink": _gqa(2, 1, 6, [6, 3], 7, sink=True),
    "smooth_softmax": _gqa(2, 1, 6, [6, 3], 7, {"smooth_softmax": 1}),
    "bidirectional": _gqa(2, 1, 6, [6, 3], 7, {"causal": 0}),
    "one_key_head_per_query_head": _gqa(2, 1, 6, [6, 3], 7, heads=4, kv_heads=4),
    "fp16_decode_rotary": _gqa(2, 1, 6, [6, 3], 7, rotary=16, dtype=np.float16),
}


def _ort(model, feeds):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def _ours(model, feeds, target, **options):
    program = compiler.parse_onnx(model)
    program.compile(target, **options)
    return program.run(feeds)


def _assert_close(got, want, rows=None):
    """Every output equal within the dtype's tolerance; the first (the attention) only at ``rows``."""
    for index, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w.dtype and g.shape == w.shape
        if index == 0 and rows is not None:
            g, w = g[rows], w[rows]
        tol = 2e-3 if w.dtype == np.float16 else 1e-5
        np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=tol, atol=tol)


@pytest.mark.parametrize("target", ["ref", "cpu"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_group_query_attention_matches_onnx_runtime(case, target):
    model, feeds = CASES[case]
    _assert_close(_ours(model, feeds, target), _ort(model, feeds))


@pytest.mark.parametrize("attrs", [{}, {"local_window_size": 3}])
def test_a_padded_prompt_matches_on_each_item_s_own_rows(attrs):
    model, feeds = _gqa(2, 5, None, [4, 2], 5, attrs)      # the second item holds 3 tokens of 5
    rows = np.array([[True] * 5, [True] * 3 + [False] * 2])
    _assert_close(_ours(model, feeds, "ref"), _ort(model, feeds), rows)


def test_the_emulated_gpu_target_runs_it():
    model, feeds = CASES["rotary_halves"]
    _assert_close(_ours(model, feeds, "gpu", gpu_options=GpuOptions(emulate=True)), _ort(model, feeds))


def _resident(tokens: int, capacity: int, window: int) -> int:
    """How many of the latest positions a window-sized cache holds after ``tokens``, by the
    operator's definition."""
    gap = capacity - window + 1
    return tokens if tokens <= capacity else tokens - gap * -(-(tokens - capacity) // gap)


@pytest.mark.parametrize("new, tokens, window, capacity", [
    (1, [3, 9], 4, 6),        # a decode of two items, one under the capacity, one that evicted
    (1, [7, 12], 4, 4),       # capacity = window: one row evicted a step
    (5, [5], 3, 4),           # a first prompt longer than the cache
    (3, [11], 4, 7),          # a later chunk
])
def test_a_window_sized_cache_matches_on_the_rows_it_holds(new, tokens, window, capacity):
    """Gemma's sliding layers: past and present hold the latest positions only; present rows past
    the ones held are left unspecified by the operator and are not compared."""
    model, feeds = _gqa(len(tokens), new, capacity, [t - 1 for t in tokens], max(tokens),
                        {"local_window_size": window, "sliding_window_cache": 1}, rotary=16)
    got, want = _ours(model, feeds, "cpu"), _ort(model, feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    for index in (1, 2):
        for item, count in enumerate(tokens):
            held = _resident(count, capacity, window)
            np.testing.assert_allclose(got[index][item, :, :held], want[index][item, :, :held], rtol=1e-5, atol=1e-5)


def _rms(x, weight, eps=1e-6):
    """(batch, tokens, heads·size) normalised over each head's features, by definition."""
    b, s, hidden = x.shape
    heads = x.reshape(b, s, hidden // SIZE, SIZE).astype(np.float64)
    normed = heads / np.sqrt(np.mean(heads * heads, axis=-1, keepdims=True) + eps) * weight
    return normed.reshape(b, s, hidden).astype(x.dtype)


def test_per_head_norms_are_the_attention_of_normalised_queries_and_keys():
    """ONNX Runtime's CPU kernel refuses q_norm_weight; its definition is the same attention of
    queries and keys normalised per head beforehand, which that kernel runs."""
    model, feeds = _gqa(2, 1, 6, [6, 3], 7, norms=True)
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    plain, _ = _gqa(2, 1, 6, [6, 3], 7)
    normalised = {**feeds, "q": _rms(feeds["q"], weights["q_norm"]), "k": _rms(feeds["k"], weights["k_norm"])}
    _assert_close(_ours(model, feeds, "ref"), _ort(plain, normalised))


@pytest.mark.parametrize("attrs, reason", [
    ({"sliding_window_cache": 1}, "a window-sized cache without past, window or causal mask"),
    ({"kv_cache_bit_width": 8}, "a quantized key/value cache"),
    ({"qk_output": 1}, "the QK output"),
])
def test_a_form_that_is_not_expanded_is_reported_with_the_reason(attrs, reason):
    model, _ = _gqa(2, 1, 6, [6, 3], 7, attrs)
    with pytest.raises(UnsupportedOperatorError,
                       match=f"unsupported operator GroupQueryAttention .*: this form is not expanded: {reason}"):
        compiler.parse_onnx(model)


def test_onnxruntime_genai_s_form_folds_to_static_shapes():
    """onnxruntime-genai's builders derive both lengths from the attention mask: seqlens_k from
    its sum, total_sequence_length from its width. With the dimensions bound, the import folds
    the cache's length, and the present caches get static shapes."""
    batch, past, new = 2, 6, 1
    model, feeds = _gqa(batch, new, past, [6, 6], 7)
    graph = model.graph
    derived = [
        helper.make_node("ReduceSum", ["mask", "axes"], ["count"], keepdims=0),
        helper.make_node("Sub", ["count", "one"], ["last"]),
        helper.make_node("Cast", ["last"], ["seqlens_k"], to=I32),
        helper.make_node("Shape", ["mask"], ["mask_shape"]),
        helper.make_node("Gather", ["mask_shape", "one"], ["width"], axis=0),
        helper.make_node("Cast", ["width"], ["total"], to=I32),
    ]
    kept = [v for v in graph.input if v.name not in ("seqlens_k", "total")]
    del graph.input[:]
    graph.input.extend(kept + [helper.make_tensor_value_info("mask", I64, ["batch", "total_length"])])
    graph.initializer.extend([numpy_helper.from_array(np.array(1, np.int64), "one"),
                              numpy_helper.from_array(np.array([1], np.int64), "axes")])
    nodes = derived + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    feeds = {k: v for k, v in feeds.items() if k not in ("seqlens_k", "total")}
    feeds["mask"] = np.ones((batch, past + new), np.int64)
    program = compiler.parse_onnx(model, batch_size=batch, dims={"total_length": past + new})
    assert [s.lens for s in program.main.output_shapes()][1:] == [(batch, KV_HEADS, past + new, SIZE)] * 2
    program.compile("ref")
    _assert_close(program.run(feeds), _ort(model, feeds))
