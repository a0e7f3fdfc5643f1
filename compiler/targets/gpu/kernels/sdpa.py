"""cuDNN's fused scaled dot-product attention (its flash forward engines on sm80 and later),
through the cuDNN frontend's graph API.

One plan per operand geometry (dims and strides of Q, K, V, the output and the additive bias,
the type and the scale), built on first use and shared by every attention of that geometry in
the process: ViT-B/16's twelve layers build one. Q, K and V are taken as the strided views the
program hands over (head splits are strides, not copies) as long as the head axis is unit-stride.
The output is written in the memory order the program reads it in (by default sequence-major,
(batch, sequence, heads, size); the order of the Transpose that follows, where one does) and
returned as a (batch, heads, sequence, size) view: the transpose and reshape after attention in
exporters' graphs then cost nothing.
"""
from __future__ import annotations

from .. import libraries

_TYPES = {"float16": "HALF", "bfloat16": "BFLOAT16"}
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
    """One built cuDNN SDPA graph for one geometry (``key``)."""

    def __init__(self, key):
        import cupy
        cudnn = libraries.frontend()
        dtype, q, k, v, bias, scale, self.order, causal = key
        handle = libraries.frontend_handle()
        dt = getattr(cudnn.data_type, _TYPES[dtype])
        g = cudnn.pygraph(io_data_type=dt, intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT, handle=handle)

        def tensor(name, geometry):
            return g.tensor(name=name, dim=list(geometry[0]), stride=list(geometry[1]), data_type=dt)
        self.q, self.k, self.v = tensor("Q", q), tensor("K", k), tensor("V", v)
        self.bias = tensor("B", bias) if bias is not None else None
        out, _stats = g.sdpa(name="sdpa", q=self.q, k=self.k, v=self.v, attn_scale=float(scale),
                             bias=self.bias, use_causal_mask=bool(causal), generate_stats=False)
        self.out_lens = (q[0][0], q[0][1], q[0][2], v[0][3])
        out.set_output(True).set_dim(list(self.out_lens)) \
            .set_stride(list(strides_in_order(self.out_lens, self.order))).set_data_type(dt)
        self.o = out
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        g.check_support()
        g.build_plans()
        self.graph, self.handle, self.cudnn = g, handle, cudnn
        self.workspace = cupy.empty(max(int(g.get_workspace_size()), 1), dtype=cupy.uint8)

    def __call__(self, q, k, v, bias=None):
        import cupy
        out = cupy.empty(tuple(self.out_lens[a] for a in self.order), dtype=q.dtype)
        pack = {self.q: q.data.ptr, self.k: k.data.ptr, self.v: v.data.ptr, self.o: out.data.ptr}
        if self.bias is not None:
            pack[self.bias] = bias.data.ptr
        self.cudnn.set_stream(handle=self.handle, stream=cupy.cuda.get_current_stream().ptr)
        self.graph.execute(pack, self.workspace.data.ptr, handle=self.handle)
        return out.transpose([self.order.index(a) for a in range(4)])


_plans: dict = {}


def geometry(a) -> tuple:
    return (tuple(a.shape), _element_strides(a))


def plan_for(dtype: str, q, k, v, bias, scale: float, order=SEQUENCE_MAJOR, causal: bool = False) -> SdpaPlan:
    """The plan for these operands, writing its output in memory ``order``, with keys after each
    query masked out if ``causal`` (built on first use, then shared)."""
    key = (dtype, geometry(q), geometry(k), geometry(v), geometry(bias) if bias is not None else None,
           float(scale), tuple(order), bool(causal))
    if key not in _plans:
        _plans[key] = SdpaPlan(key)
    return _plans[key]
