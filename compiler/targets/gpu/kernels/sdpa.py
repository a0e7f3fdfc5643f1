"""cuDNN's fused scaled dot-product attention (its flash forward engines on sm80 and later),
through the cuDNN frontend's graph API.

One plan per operand geometry (dims and strides of Q, K, V, the output and the additive bias,
the type and the scale), built on first use and shared by every attention of that geometry in
the process: ViT-B/16's twelve layers build one. A built plan is kept on disk beside the
convolutions' (``conv_plans.kept_plan_path``, under the same ``plan_cache`` switch): cuDNN
compiles the flash engine while it builds the plan, and a later process loads it instead. Q, K
and V are taken as the strided views the program hands over (head splits are strides, not
copies) as long as the head axis is unit-stride.
The output is written in the memory order the program reads it in (by default sequence-major,
(batch, sequence, heads, size); the order of the Transpose that follows, where one does) and
returned as a (batch, heads, sequence, size) view: the transpose and reshape after attention in
exporters' graphs then cost nothing.
"""
from __future__ import annotations

import os

from .. import libraries

_TYPES = {"float16": "HALF", "bfloat16": "BFLOAT16"}
# Fixed tensor uids, so a plan loaded from disk is fed by uid like one built here.
UID = {"Q": 1, "K": 2, "V": 3, "O": 4, "B": 5}
MAX_HEAD = 128      # head sizes cuDNN's flash forward takes on every sm80+ GPU


def supported(dtype: str, head: int, value_head: int) -> bool:
    """Whether an attention of this type and head size is one cuDNN's fused engines run."""
    return dtype in _TYPES and head == value_head and head % 8 == 0 and 8 <= head <= MAX_HEAD


def _element_strides(a) -> tuple:
    return tuple(s // a.itemsize for s in a.strides)


SEQUENCE_MAJOR = (0, 2, 1, 3)


def strides_in_order(lens, order) -> tuple:
    """Element strides of a tensor of ``lens`` stored with its axes in ``order`` (outermost
    first), e.g. (0, 2, 1, 3): (b, h, s, d) stored as (b, s, h, d)."""
    stored = [lens[a] for a in order]
    step, out = 1, [0] * len(lens)
    for position in reversed(range(len(order))):
        out[order[position]] = step
        step *= stored[position]
    return tuple(out)


class SdpaPlan:
    """One built cuDNN SDPA graph for one geometry (``key``), read from ``path`` where a plan is
    kept there, else built (and kept there; ``path`` None: neither)."""

    def __init__(self, key, path: str | None = None):
        import cupy
        self.cudnn = cudnn = libraries.frontend()
        dtype, q, _k, v, bias, _scale, self.order, _causal = key
        self.handle = libraries.frontend_handle()
        self.out_lens = (q[0][0], q[0][1], q[0][2], v[0][3])
        self.biased = bias is not None
        self.graph = _loaded(cudnn, self.handle, path)
        if self.graph is None:
            self.graph = _built(cudnn, self.handle, key, self.out_lens)
            _keep(self.graph, path)
        self.workspace = cupy.empty(max(int(self.graph.get_workspace_size()), 1), dtype=cupy.uint8)

    def __call__(self, q, k, v, bias=None):
        import cupy
        out = cupy.empty(tuple(self.out_lens[a] for a in self.order), dtype=q.dtype)
        pack = {UID["Q"]: q.data.ptr, UID["K"]: k.data.ptr, UID["V"]: v.data.ptr, UID["O"]: out.data.ptr}
        if self.biased:
            pack[UID["B"]] = bias.data.ptr
        self.cudnn.set_stream(handle=self.handle, stream=cupy.cuda.get_current_stream().ptr)
        self.graph.execute(pack, self.workspace.data.ptr, handle=self.handle)
        return out.transpose([self.order.index(a) for a in range(4)])


def _built(cudnn, handle, key, out_lens):
    """The graph of ``key`` with its plans built (the engine compiled where it is a runtime one)."""
    dtype, q, k, v, bias, scale, order, causal = key
    dt = getattr(cudnn.data_type, _TYPES[dtype])
    g = cudnn.pygraph(io_data_type=dt, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, handle=handle)

    def tensor(name, geometry):
        return g.tensor(name=name, dim=list(geometry[0]), stride=list(geometry[1]), data_type=dt,
                        uid=UID[name])
    out, _stats = g.sdpa(name="sdpa", q=tensor("Q", q), k=tensor("K", k), v=tensor("V", v),
                         attn_scale=float(scale), bias=tensor("B", bias) if bias is not None else None,
                         use_causal_mask=bool(causal), generate_stats=False)
    out.set_output(True).set_dim(list(out_lens)).set_stride(list(strides_in_order(out_lens, order))) \
        .set_data_type(dt).set_uid(UID["O"])
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()
    return g


def _loaded(cudnn, handle, path: str | None):
    """The graph kept at ``path``, or None (none kept, or one this cuDNN cannot read back)."""
    if path is None or not os.path.exists(path):
        return None
    try:
        with open(path, "rb") as f:
            blob = f.read()
        g = cudnn.pygraph()
        g.deserialize(handle, blob)
        return g
    except Exception:  # noqa: BLE001 - an unreadable or stale plan: build it again
        return None


def _keep(graph, path: str | None) -> None:
    if path is None:
        return
    from .conv_plans import write_atomically
    try:
        write_atomically(path, bytes(graph.serialize(as_bytes=True)))
    except Exception:  # noqa: BLE001 - a plan cuDNN cannot serialize is built in each process
        pass


def plan_path(key, options) -> str | None:
    """Where the plan of ``key`` is kept (None when ``options.plan_cache`` is off): one file per
    cuDNN version, GPU and geometry, in the convolutions' plan folder."""
    if options is None:
        return None
    from .conv_plans import kept_plan_path
    return kept_plan_path(options, libraries.frontend().backend_version(), f"sdpa|{key}")


_plans: dict = {}


def geometry(a) -> tuple:
    return (tuple(a.shape), _element_strides(a))


def plan_for(dtype: str, q, k, v, bias, scale: float, order=SEQUENCE_MAJOR, causal: bool = False,
             options=None) -> SdpaPlan:
    """The plan for these operands, writing its output in memory ``order``, with keys after each
    query masked out if ``causal`` (built on first use, or read from disk under ``options``'
    plan cache, then shared)."""
    key = (dtype, geometry(q), geometry(k), geometry(v), geometry(bias) if bias is not None else None,
           float(scale), tuple(order), bool(causal))
    if key not in _plans:
        _plans[key] = SdpaPlan(key, plan_path(key, options))
    return _plans[key]
