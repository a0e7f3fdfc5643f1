"""Convolution: cuDNN graphs (``nvidia-cudnn-frontend``) with fused epilogues, else im2col + GEMM.

Both paths take NCHW (or NHWC, see ``layout``) data and produce the layout asked for. The cuDNN
path builds one graph per distinct convolution (shapes, dtype, epilogue) and keeps it for the
process; the fallback path is plain CuPy (strided window view, one batched cuBLAS product per
group), also the path used where cuDNN turns a graph down.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class ConvSpec:
    x_shape: tuple          # logical NCHW lengths
    w_shape: tuple          # K, C/g, kh, kw
    pads_begin: tuple
    pads_end: tuple
    strides: tuple
    dilations: tuple
    group: int
    dtype: str
    bias: bool = False
    residual: bool = False
    relu: bool = False
    nhwc: bool = False      # input/output stored channels-last

    @property
    def out_shape(self) -> tuple:
        n, _c, *sp = self.x_shape
        k = self.w_shape[0]
        out = [n, k]
        for i, s in enumerate(sp):
            eff = (self.w_shape[2 + i] - 1) * self.dilations[i] + 1
            out.append((s + self.pads_begin[i] + self.pads_end[i] - eff) // self.strides[i] + 1)
        return tuple(out)


@functools.lru_cache(maxsize=1)
def cudnn_module():
    """The cuDNN frontend module, or None when it does not import (or is switched off)."""
    if os.environ.get("PERFBOT_GPU_CUDNN", "1") == "0":
        return None
    try:
        import cudnn
        cudnn.backend_version()
        return cudnn
    except Exception:  # noqa: BLE001 - no wheel, no library: use the fallback path
        return None


def _strides(lens, nhwc: bool):
    if not nhwc:
        out, step = [], 1
        for n in reversed(lens):
            out.append(step)
            step *= n
        return list(reversed(out))
    n, c, *sp = lens
    # channels-last: C fastest, then W, H, ... then N
    strides = [0] * len(lens)
    step = 1
    strides[1] = step
    step *= c
    for i in reversed(range(len(sp))):
        strides[2 + i] = step
        step *= sp[i]
    strides[0] = step
    return strides


def _excluded_notes(cudnn, dtype: str) -> list:
    """Engines whose arithmetic is looser than the data type promises: FFT and Winograd
    transforms and reduced-precision accumulation always; for fp32 also tensor cores (TF32) and
    down-converted inputs, unless PERFBOT_GPU_TF32=1 asks for TF32 as PyTorch allows it."""
    names = ["FFT", "WINOGRAD", "WINOGRAD_TILE_4x4", "WINOGRAD_TILE_6x6", "WINOGRAD_TILE_13x13",
             "REDUCED_PRECISION_REDUCTION"]
    if dtype == "float32" and os.environ.get("PERFBOT_GPU_TF32") != "1":
        names += ["TENSOR_CORE", "DOWN_CONVERT_INPUTS"]
    found = [getattr(cudnn.numerical_note, n, None) for n in names]
    return [n for n in found if n is not None]


class _Handle:
    handle = None


def _handle():
    cudnn = cudnn_module()
    if _Handle.handle is None:
        _Handle.handle = cudnn.create_handle()
    return _Handle.handle


class CudnnConv:
    """One built cuDNN graph for one ``ConvSpec``."""

    def __init__(self, spec: ConvSpec):
        import cupy
        last = None
        for strict in (True, False):
            try:
                self._build(spec, strict)
                break
            except Exception as exc:  # noqa: BLE001 - no engine left under the filters
                last = exc
        else:
            raise last
        self.workspace = cupy.empty(max(int(self.graph.get_workspace_size()), 1), dtype=cupy.uint8)

    def _build(self, spec: ConvSpec, strict: bool):
        cudnn = cudnn_module()
        self.spec = spec
        dt = cudnn.data_type.HALF if spec.dtype == "float16" else cudnn.data_type.FLOAT
        handle = _handle()
        g = cudnn.pygraph(io_data_type=dt, intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT, handle=handle)
        x = g.tensor(name="X", dim=list(spec.x_shape), stride=_strides(spec.x_shape, spec.nhwc), data_type=dt)
        w = g.tensor(name="W", dim=list(spec.w_shape), stride=_strides(spec.w_shape, spec.nhwc), data_type=dt)
        y = g.conv_fprop(image=x, weight=w, pre_padding=list(spec.pads_begin),
                         post_padding=list(spec.pads_end), stride=list(spec.strides),
                         dilation=list(spec.dilations), compute_data_type=cudnn.data_type.FLOAT)
        self.b = self.r = None
        k = spec.w_shape[0]
        nsp = len(spec.x_shape) - 2
        if spec.bias:
            blens = [1, k] + [1] * nsp
            self.b = g.tensor(name="B", dim=blens, stride=_strides(blens, spec.nhwc), data_type=dt)
            y = g.bias(input=y, bias=self.b)
        if spec.residual:
            self.r = g.tensor(name="R", dim=list(spec.out_shape),
                              stride=_strides(spec.out_shape, spec.nhwc), data_type=dt)
            y = g.add(a=y, b=self.r)
        if spec.relu:
            y = g.relu(input=y)
        y.set_output(True).set_data_type(dt)
        y.set_dim(list(spec.out_shape)).set_stride(_strides(spec.out_shape, spec.nhwc))
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        if strict:
            notes = _excluded_notes(cudnn, spec.dtype)
            if notes:
                g.deselect_numeric_notes(notes)
        g.check_support()
        g.build_plans()
        self.graph, self.x, self.w, self.y = g, x, w, y
        self.handle = handle
        self.strict = strict

    def __call__(self, x, w, b=None, r=None, out=None):
        import cupy
        cudnn = cudnn_module()
        if out is None:
            out = _empty(self.spec.out_shape, self.spec.dtype, self.spec.nhwc)
        pack = {self.x: x.data.ptr, self.w: w.data.ptr, self.y: out.data.ptr}
        if self.b is not None:
            pack[self.b] = b.data.ptr
        if self.r is not None:
            pack[self.r] = r.data.ptr
        cudnn.set_stream(handle=self.handle, stream=cupy.cuda.get_current_stream().ptr)
        self.graph.execute(pack, self.workspace.data.ptr, handle=self.handle)
        return out


def _empty(lens, dtype, nhwc: bool):
    import cupy
    if not nhwc:
        return cupy.empty(lens, dtype=dtype)
    n, c, *sp = lens
    return cupy.empty((n, *sp, c), dtype=dtype).transpose(0, len(lens) - 1, *range(1, len(lens) - 1))


_graphs: dict[ConvSpec, object] = {}


def cudnn_conv(spec: ConvSpec):
    """A callable running ``spec`` through cuDNN, or None if cuDNN is unavailable or refuses."""
    if cudnn_module() is None:
        return None
    if spec not in _graphs:
        try:
            _graphs[spec] = CudnnConv(spec)
        except Exception as exc:  # noqa: BLE001 - an unsupported graph falls back to im2col
            _graphs[spec] = None
            failures.append(f"{spec}: {exc}")
    return _graphs[spec]


failures: list[str] = []


def im2col_conv(xp, x, w, spec: ConvSpec):
    """Reference-structured convolution on the device: window view + batched GEMM per group."""
    n, c, *sp = spec.x_shape
    k, cg = spec.w_shape[:2]
    ks = spec.w_shape[2:]
    g = spec.group
    pads = [(0, 0), (0, 0)] + [(b, e) for b, e in zip(spec.pads_begin, spec.pads_end)]
    if any(p != (0, 0) for p in pads):
        x = xp.pad(x, pads)
    x = xp.ascontiguousarray(x)
    out_sp = spec.out_shape[2:]
    item = x.dtype.itemsize
    xs = [s // item for s in x.strides]
    # view (N, C, k1..kd, o1..od)
    shape = (n, c, *ks, *out_sp)
    strides = (xs[0], xs[1], *[xs[2 + i] * spec.dilations[i] for i in range(len(ks))],
               *[xs[2 + i] * spec.strides[i] for i in range(len(ks))])
    view = xp.lib.stride_tricks.as_strided(x, shape, tuple(s * item for s in strides))
    kk = int(cg * _prod(ks))
    cols = view.reshape(n, g, kk, int(_prod(out_sp)))
    wm = w.reshape(g, k // g, kk)
    acc = "float32" if x.dtype.name == "float16" else x.dtype.name
    out = xp.matmul(wm.astype(acc, copy=False), cols.astype(acc, copy=False))  # N, g, K/g, P
    return out.reshape(n, k, *out_sp).astype(x.dtype, copy=False)


def _prod(xs) -> int:
    p = 1
    for v in xs:
        p *= int(v)
    return p
