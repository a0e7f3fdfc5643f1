"""ONNX Runtime's GroupQueryAttention (the attention of the decoders onnxruntime-genai's model
builder writes: Llama, Mistral, Qwen and others) as the standard nodes that compute it: the
key/value cache written per batch item, rotary embeddings, and one standard ``Attention`` over
the whole cache with a mask that says which keys each query sees.

Per batch item b, with ``seqlens_k[b] + 1`` = T_b tokens in the cache after this call and S new
ones: a first prompt (S equal to ``total_sequence_length``) writes its S keys at rows [0, S), a
later call at rows [T_b - S, T_b), after the T_b - S rows it keeps from ``past_key``; every other
row of the present cache is zero, and the cache holds max(total_sequence_length, past rows)
rows. Query s of item b sits at absolute position start_b + s (start_b: 0 for a first prompt,
T_b - S after) and sees the keys at positions up to its own (``causal``), only the latest
``local_window_size`` of them (its own among them), and none at or past T_b. Rotary embeddings
take that position unless ``position_ids`` gives one (in a first prompt, ONNX Runtime reads only
its first element: the first token's position, for every item).

A window-sized cache (``sliding_window_cache``, Gemma's sliding layers) holds the latest
positions only; ``_window_cache`` says how. Not expanded (the node stays and is reported as
unsupported): quantized caches, right-padded chunks (``query_seqlens``) and the QK output."""
from __future__ import annotations

from .attention import default_scale
from .builder import Builder, Unexpandable

QUERY, KEY, VALUE, PAST_KEY, PAST_VALUE, SEQLENS_K, TOTAL = range(7)
COS, SIN, POSITION_IDS, ATTENTION_BIAS, HEAD_SINK, K_SCALE, V_SCALE = range(7, 14)
Q_NORM, K_NORM, QUERY_SEQLENS = range(14, 17)

# What masked scores become: far enough below any real score that its weight is exactly zero in
# float32 and float16, yet finite in both, so that a row with no visible key (a padded query row,
# whose result the operator leaves unspecified) averages its values instead of making NaNs that
# the next layer would carry into every row through the cache.
MASKED = -30000.0


def group_query_attention(node, b: Builder) -> None:
    _refuse_unexpanded_forms(b)
    heads, kv_heads = int(b.attr("num_heads")), int(b.attr("kv_num_heads"))
    if heads % kv_heads:
        raise Unexpandable("num_heads not a multiple of kv_num_heads")
    q, k, v = _heads(b, heads, kv_heads)            # (batch, heads, S, size), new keys/values
    q, k = _normed(b, q, k)
    new_len = b.length(q, 2)
    seen = _positions_seen(b, new_len)
    if int(b.attr("do_rotary", 0)):
        q, k = (_rotated(b, x, seen) for x in (q, k))
    if int(b.attr("sliding_window_cache", 0)):
        keys, values, mask = _window_cache(b, seen, new_len, k, v, q)
    else:
        rows = _cache_rows(b, seen, new_len)
        keys = b.rename(_present(b, _cached(b, PAST_KEY, k), k, rows), b.output(1))
        values = b.rename(_present(b, _cached(b, PAST_VALUE, v), v, rows), b.output(2))
        mask = _mask(b, seen, rows["length"], q)
    _attend(b, q, keys, values, mask, heads, kv_heads)


def _refuse_unexpanded_forms(b: Builder) -> None:
    if b.input(K_SCALE) or b.input(V_SCALE) or int(b.attr("kv_cache_bit_width", 0)) \
            or b.attr("k_quant_type", "NONE") != "NONE" or b.attr("v_quant_type", "NONE") != "NONE":
        raise Unexpandable("a quantized key/value cache")
    if int(b.attr("sliding_window_cache", 0)) and (
            not b.input(PAST_KEY) or int(b.attr("local_window_size", -1)) <= 0 or not int(b.attr("causal", 1))
            or b.input(ATTENTION_BIAS)):
        raise Unexpandable("a window-sized cache without past, window or causal mask, or with attention bias")
    if b.input(QUERY_SEQLENS):
        raise Unexpandable("right-padded query chunks (query_seqlens)")
    if int(b.attr("qk_output", 0)) or b.output(3):
        raise Unexpandable("the QK output")
    if bool(b.input(PAST_KEY)) != bool(b.input(PAST_VALUE)):
        raise Unexpandable("past_key without past_value, or the other way round")
    if bool(b.input(Q_NORM)) != bool(b.input(K_NORM)):
        raise Unexpandable("q_norm_weight without k_norm_weight, or the other way round")


def _heads(b: Builder, heads: int, kv_heads: int) -> list[str]:
    """Query, new keys and new values as (batch, heads, S, size); packed in the query when the
    node has no key (query heads, then key heads, then value heads, along the last axis)."""
    q, k, v = b.input(QUERY), b.input(KEY), b.input(VALUE)
    if not k:
        size = b.op("Div", [b.length(q, 2), b.ints(heads + 2 * kv_heads)])
        widths = b.op("Mul", [b.ints([heads, kv_heads, kv_heads]), size])
        q, k, v = b.fresh(), b.fresh(), b.fresh()
        b.op("Split", [b.input(QUERY), widths], [q, k, v], axis=-1)
    return [b.op("Transpose", [b.op("Reshape", [x, b.ints([0, 0, n, -1])])], perm=[0, 2, 1, 3])
            for x, n in ((q, heads), (k, kv_heads), (v, kv_heads))]


def _normed(b: Builder, q: str, k: str) -> list[str]:
    """Query and keys after the per-head RMS normalisation (Qwen3), where its weights are given."""
    if not b.input(Q_NORM):
        return [q, k]
    shared = float(b.attr("qk_norm_epsilon", 1e-6))
    return [b.op("RMSNormalization", [x, b.input(weight)], axis=-1,
                 epsilon=float(b.attr(f"{which}_norm_epsilon", shared)))
            for x, weight, which in ((q, Q_NORM, "q"), (k, K_NORM, "k"))]


def _positions_seen(b: Builder, new_len: str) -> dict:
    """Per batch item: ``start`` (batch,), the absolute position of the first new token, and
    ``ends`` (batch,), T_b; ``positions`` (batch, S), every new token's position."""
    total = b.op("Reshape", [b.op("Cast", [b.input(TOTAL)], to=7), b.ints([])])
    ends = b.op("Add", [b.op("Cast", [b.input(SEQLENS_K)], to=7), b.const(1, "int64")])
    first_prompt = b.op("Equal", [new_len, total])
    start = b.op("Where", [first_prompt, b.const(0, "int64"), b.op("Sub", [ends, new_len])])
    steps = b.op("Range", [b.const(0, "int64"), new_len, b.const(1, "int64")])
    positions = b.op("Add", [b.op("Unsqueeze", [start, b.ints([1])]), b.op("Unsqueeze", [steps, b.ints([0])])])
    return {"total": total, "ends": ends, "start": start, "positions": positions, "first_prompt": first_prompt}


def _rotated(b: Builder, x: str, seen: dict) -> str:
    """(batch, heads, S, size) ``x`` with its first 2·(cache width) features rotated by the
    standard RotaryEmbedding at each token's position (``position_ids`` where given)."""
    width = b.dim(b.input(COS), 1)
    if width is None:
        raise Unexpandable("rotary caches whose width the model does not give")
    positions = _given_positions(b, seen) if b.input(POSITION_IDS) else seen["positions"]
    return b.op("RotaryEmbedding", [x, b.input(COS), b.input(SIN), positions],
                interleaved=int(b.attr("rotary_interleaved", 0)), rotary_embedding_dim=2 * width)


def _given_positions(b: Builder, seen: dict) -> str:
    """(batch, S) rotary positions from ``position_ids``: as given after the first prompt; in a
    first prompt ONNX Runtime reads only its first element, the position of every item's first
    token, the others following it."""
    ids = b.op("Cast", [b.input(POSITION_IDS)], to=7)
    first = b.op("Reshape", [b.op("Slice", [ids, b.ints([0, 0]), b.ints([1, 1])]), b.ints([])])
    from_first = b.op("Add", [seen["positions"], first])      # a first prompt's positions are 0, 1, ...
    return b.op("Where", [seen["first_prompt"], from_first, ids])


def _cache_rows(b: Builder, seen: dict, new_len: str) -> dict:
    """Where each row of the present cache comes from: ``length``, its rows (a scalar);
    ``source`` (batch, 1, rows, 1), the row of [past ; new] it copies; ``kept`` (batch, 1, rows,
    1), whether it holds a key at all (rows past the new ones are zero)."""
    past_len = b.length(b.input(PAST_KEY), 2) if b.input(PAST_KEY) else b.const(0, "int64")
    length = b.op("Max", [seen["total"], past_len])
    row = b.op("Unsqueeze", [b.op("Range", [b.const(0, "int64"), length, b.const(1, "int64")]), b.ints([0])])
    first = b.op("Unsqueeze", [seen["start"], b.ints([1])])             # (batch, 1)
    from_past = b.op("Less", [row, first])
    after = b.op("Sub", [row, first])                                  # the row among the new ones
    from_new = b.op("And", [b.op("Not", [from_past]), b.op("Less", [after, new_len])])
    source = b.op("Where", [from_past, row, b.op("Add", [after, past_len])])
    kept = b.op("Or", [from_past, from_new])
    source = b.op("Where", [kept, source, b.const(0, "int64")])
    as_rows = b.ints([0, 1, -1, 1])        # (batch, rows) -> (batch, 1, rows, 1)
    return {"length": length, "source": b.op("Reshape", [source, as_rows]),
            "kept": b.op("Reshape", [kept, as_rows])}


def _cached(b: Builder, past: int, new: str) -> str:
    """[past ; new] along the rows: the keys (or values) a call can read."""
    return b.op("Concat", [b.input(past), new], axis=2) if b.input(past) else new


def _present(b: Builder, both: str, new: str, rows: dict) -> str:
    """The present cache (batch, kv heads, rows, size): rows of ``both`` ([past ; new]) where
    ``rows`` says, zero elsewhere."""
    shape = b.op("Concat", [b.op("Shape", [both], start=0, end=2),
                            b.op("Unsqueeze", [rows["length"], b.ints([0])]),
                            b.op("Shape", [both], start=3)], axis=0)
    gathered = b.op("GatherElements", [both, b.op("Expand", [rows["source"], shape])], axis=2)
    return b.op("Where", [rows["kept"], gathered, b.op("CastLike", [b.const(0.0, "float32"), new])])


def _window_cache(b: Builder, seen: dict, new_len: str, k: str, v: str, like: str) -> list[str]:
    """A window-sized cache (``sliding_window_cache``): past and present hold C rows, row i the
    i-th oldest of the L(T) latest positions, L(T) = T up to C, then T less as many evictions of
    G = C - W + 1 rows as bring it to C or under (W: the window). The call attends over [past ;
    new] itself, each row at its own position, and writes the present from it; returns the keys,
    the values and the mask."""
    window = int(b.attr("local_window_size", -1))
    capacity = b.length(b.input(PAST_KEY), 2)
    layout = _window_layout(b, seen, new_len, capacity, window)
    keys, values = _cached(b, PAST_KEY, k), _cached(b, PAST_VALUE, v)
    b.rename(_present(b, keys, k, layout), b.output(1))
    b.rename(_present(b, values, v, layout), b.output(2))
    position = _query_positions(b, seen)
    held, valid = (b.op("Reshape", [layout[x], b.ints([0, 1, 1, -1])]) for x in ("held", "valid"))
    visible = b.op("And", [valid, b.op("And", [b.op("LessOrEqual", [held, position]),
                                               _in_window(b, held, position, window)])])
    return [keys, values, _additive(b, visible, like)]


def _query_positions(b: Builder, seen: dict) -> str:
    """(batch, 1, S, 1): each new token's position, against the keys along the last axis."""
    return b.op("Reshape", [seen["positions"], b.ints([0, 1, -1, 1])])


def _in_window(b: Builder, key: str, position: str, window: int) -> str:
    """Whether ``key``'s position is among the latest ``window`` up to the query's own."""
    return b.op("GreaterOrEqual", [key, b.op("Sub", [position, b.const(window - 1, "int64")])])


def _window_layout(b: Builder, seen: dict, new_len: str, capacity: str, window: int) -> dict:
    """Per batch item, of the rows of [past ; new]: ``held`` (batch, C + S), each row's position,
    and ``valid``, whether it holds one; of the present's C rows, ``source`` and ``kept`` as
    ``_cache_rows`` gives them."""
    gap = b.op("Sub", [capacity, b.const(window - 1, "int64")])           # G = C - W + 1

    def resident(tokens):   # L(T)
        evictions = b.op("Div", [b.op("Add", [b.op("Sub", [tokens, capacity]), b.op("Sub", [gap, b.const(1, "int64")])]),
                                 gap])
        return b.op("Where", [b.op("LessOrEqual", [tokens, capacity]), tokens,
                              b.op("Sub", [tokens, b.op("Mul", [gap, evictions])])])
    before = seen["start"]                                 # tokens cached before this call, (batch,)
    kept_before, kept_after = resident(before), resident(seen["ends"])
    column = lambda x: b.op("Unsqueeze", [x, b.ints([1])])  # noqa: E731 - (batch,) -> (batch, 1)
    row = b.op("Unsqueeze", [b.op("Range", [b.const(0, "int64"), b.op("Add", [capacity, new_len]),
                                            b.const(1, "int64")]), b.ints([0])])
    from_past = b.op("Less", [row, capacity])
    oldest_held = b.op("Sub", [before, kept_before])
    held = b.op("Where", [from_past, b.op("Add", [column(oldest_held), row]),
                          b.op("Add", [column(before), b.op("Sub", [row, capacity])])])
    valid = b.op("Or", [b.op("Not", [from_past]), b.op("Less", [row, column(kept_before)])])
    slot = b.op("Unsqueeze", [b.op("Range", [b.const(0, "int64"), capacity, b.const(1, "int64")]), b.ints([0])])
    wanted = b.op("Add", [column(b.op("Sub", [seen["ends"], kept_after])), slot])      # the position slot i holds
    kept = b.op("Less", [slot, column(kept_after)])
    source = b.op("Where", [b.op("Less", [wanted, column(before)]), b.op("Sub", [wanted, column(oldest_held)]),
                            b.op("Add", [capacity, b.op("Sub", [wanted, column(before)])])])
    source = b.op("Where", [kept, source, b.const(0, "int64")])
    as_rows = b.ints([0, 1, -1, 1])
    return {"held": held, "valid": valid, "source": b.op("Reshape", [source, as_rows]),
            "kept": b.op("Reshape", [kept, as_rows]), "length": capacity}


def _mask(b: Builder, seen: dict, length: str, like: str) -> str:
    """(batch, 1, S, rows) additive mask: 0 where query s of item b sees cache row j, MASKED
    elsewhere; plus ``attention_bias`` (its keys padded to the cache's rows with zeros)."""
    key = b.op("Reshape", [b.op("Range", [b.const(0, "int64"), length, b.const(1, "int64")]), b.ints([1, 1, 1, -1])])
    position = _query_positions(b, seen)
    end = b.op("Reshape", [seen["ends"], b.ints([-1, 1, 1, 1])])
    visible = b.op("Less", [key, end])
    if int(b.attr("causal", 1)):
        visible = b.op("And", [visible, b.op("LessOrEqual", [key, position])])
    window = int(b.attr("local_window_size", -1))
    if window > 0:
        visible = b.op("And", [visible, _in_window(b, key, position, window)])
    mask = _additive(b, visible, like)
    bias = b.input(ATTENTION_BIAS)
    if bias:
        short = b.op("Sub", [length, b.length(bias, 3)])
        pads = b.op("Concat", [b.ints([0, 0, 0, 0, 0, 0, 0]), b.op("Unsqueeze", [short, b.ints([0])])], axis=0)
        mask = b.op("Add", [mask, b.op("Pad", [bias, pads])])
    return mask


def _additive(b: Builder, visible: str, like: str) -> str:
    """The additive mask of boolean ``visible``: 0 where a query sees a key, MASKED elsewhere, in
    ``like``'s type."""
    zero, masked = (b.op("CastLike", [b.const(value, "float32"), like]) for value in (0.0, MASKED))
    return b.op("Where", [visible, zero, masked])


def _attend(b: Builder, q: str, k: str, v: str, mask: str, heads: int, kv_heads: int) -> None:
    """softmax(q kᵀ · scale (softcapped) + mask) v into the node's output (batch, S, heads·size):
    one standard Attention, or spelled out where a sink joins the softmax's denominator."""
    scale = float(b.attr("scale", 0.0)) or None
    softcap = float(b.attr("softcap", 0.0))
    sink = b.input(HEAD_SINK) or (b.like(0.0, q) if int(b.attr("smooth_softmax", 0)) else "")
    if sink:
        context = _attend_with_sink(b, q, k, v, mask, sink, heads // kv_heads, scale, softcap)
    else:
        attrs = {"scale": scale} if scale else {}
        context = b.op("Attention", [q, k, v, mask], softcap=softcap, **attrs)
    merged = b.op("Transpose", [context], perm=[0, 2, 1, 3])
    b.op("Reshape", [merged, b.ints([0, 0, -1])], b.output(0))


def _attend_with_sink(b: Builder, q: str, k: str, v: str, mask: str, sink: str, group: int,
                      scale: float | None, softcap: float) -> str:
    """Attention whose softmax adds exp(sink of the head) to its denominator (``head_sink``;
    ``smooth_softmax``: a sink of 0): the sink as one more key column, dropped after the softmax."""
    if group > 1:   # each key/value head serves ``group`` query heads in a row
        k, v = (_repeated_heads(b, x, group) for x in (k, v))
    scores = b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])])
    factor = b.like(scale, q) if scale else default_scale(b, q, q)
    scores = b.op("Mul", [scores, factor])
    if softcap > 0:
        cap = b.like(softcap, q)
        scores = b.op("Mul", [b.op("Tanh", [b.op("Div", [scores, cap])]), cap])
    scores = b.op("Add", [scores, mask])
    column = b.op("Expand", [b.op("Reshape", [b.op("CastLike", [sink, q]), b.ints([1, -1, 1, 1])]),
                             b.op("Concat", [b.op("Shape", [scores], start=0, end=3), b.ints([1])], axis=0)])
    probs = b.op("Softmax", [b.op("Concat", [scores, column], axis=-1)], axis=-1)
    width = b.op("Shape", [scores], start=3)
    kept = b.op("Slice", [probs, b.ints([0]), width, b.ints([3])])
    return b.op("MatMul", [kept, v])


def _repeated_heads(b: Builder, x: str, group: int) -> str:
    """(batch, kv heads, rows, size) ``x`` with each head repeated ``group`` times in a row."""
    shape = [b.op("Shape", [x], start=start, end=start + 1) for start in range(4)]
    grouped = b.op("Expand", [b.op("Unsqueeze", [x, b.ints([2])]),
                              b.op("Concat", [shape[0], shape[1], b.ints([group]), shape[2], shape[3]], axis=0)])
    heads = b.op("Mul", [shape[1], b.ints([group])])
    return b.op("Reshape", [grouped, b.op("Concat", [shape[0], heads, shape[2], shape[3]], axis=0)])


EXPANSIONS = {"GroupQueryAttention": group_query_attention}
