"""cuDNN's backend (descriptor) API through ctypes, for convolution graphs built off the GIL.

The frontend's Python binding holds the GIL while it builds a plan, so plans built on threads
run one after another. A runtime-compiled plan spends most of its build in the driver compiling
the engine's code; ctypes releases the GIL for every foreign call, so plans built here on worker
threads can compile side by side. The graph is the one ``conv.CudnnConv`` builds: convolution,
then the epilogue steps of ``conv_spec.epilogue_order`` in fp32, tensors fed by ``conv_spec.UID``.
"""
from __future__ import annotations

import ctypes
import functools
import os
import threading

from .. import libraries
from .conv_spec import UID, epilogue_order, excluded_note_names, layout_strides, residual_tensor

# cudnnBackendDescriptorType_t
POINTWISE, CONVOLUTION, ENGINE, ENGINECFG, ENGINEHEUR, EXECUTION_PLAN = 0, 1, 2, 3, 4, 5
OP_CONV_FWD, OP_POINTWISE, OPERATIONGRAPH, VARIANT_PACK, TENSOR = 10, 13, 15, 16, 17
# cudnnBackendAttributeType_t
T_HANDLE, T_DATA_TYPE, T_BOOLEAN, T_INT64, T_FLOAT, T_VOID_PTR = 0, 1, 2, 3, 4, 6
T_CONV_MODE, T_HEUR_MODE, T_NUMERICAL_NOTE, T_POINTWISE_MODE, T_DESCRIPTOR = 7, 8, 11, 14, 15
T_BEHAVIOR_NOTE, T_CHAR = 19, 24
# cudnnBackendAttributeName_t
A_PW_MODE, A_PW_MATH_PREC = 0, 1
A_CONV_COMP_TYPE, A_CONV_MODE, A_CONV_DILATIONS, A_CONV_STRIDES = 100, 101, 102, 103
A_CONV_POST_PAD, A_CONV_PRE_PAD, A_CONV_SPATIAL_DIMS = 104, 105, 106
A_HEUR_MODE, A_HEUR_GRAPH, A_HEUR_RESULTS = 200, 201, 202
A_CFG_ENGINE = 300
A_PLAN_HANDLE, A_PLAN_CFG, A_PLAN_WORKSPACE, A_PLAN_JSON = 400, 401, 402, 405
A_CONV_ALPHA, A_CONV_BETA, A_CONV_DESC, A_CONV_W, A_CONV_X, A_CONV_Y = 700, 701, 702, 703, 704, 705
A_OPPW_DESC, A_OPPW_X, A_OPPW_B, A_OPPW_Y = 750, 751, 752, 753
A_GRAPH_HANDLE, A_GRAPH_OPS = 800, 801
A_T_ALIGN, A_T_DTYPE, A_T_DIMS, A_T_STRIDES, A_T_UID, A_T_VIRTUAL = 900, 901, 902, 903, 906, 907
A_VP_UIDS, A_VP_PTRS, A_VP_WORKSPACE = 1000, 1001, 1003
A_ENGINE_NUMERICAL_NOTE, A_ENGINE_BEHAVIOR_NOTE = 1303, 1305
# values
DT_FLOAT, DT_HALF, DT_BFLOAT16 = 0, 2, 9
CROSS_CORRELATION = 1
PW_ADD, PW_RELU = 0, 100
HEUR_FALLBACK, HEUR_A = 2, 3
NUMERICAL_NOTE = {"TENSOR_CORE": 0, "DOWN_CONVERT_INPUTS": 1, "REDUCED_PRECISION_REDUCTION": 2, "FFT": 3,
                  "NONDETERMINISTIC": 4, "WINOGRAD": 5, "WINOGRAD_TILE_4x4": 6, "WINOGRAD_TILE_6x6": 7,
                  "WINOGRAD_TILE_13x13": 8}
BEHAVIOR_RUNTIME_COMPILATION = 0
# uids of the graph's virtual tensors (the fed ones are conv_spec.UID's)
VIRTUAL_UID = 100


class CudnnError(RuntimeError):
    pass


@functools.lru_cache(maxsize=1)
def library():
    """libcudnn, the copy the frontend uses (``libraries``: the loaded one, else the wheel's, else
    the system's)."""
    lib = libraries.load("cudnn")
    if lib is None:
        raise CudnnError(f"libcudnn.so.9 {libraries.finding('cudnn').detail}")
    vp, i64 = ctypes.c_void_p, ctypes.c_int64
    lib.cudnnBackendCreateDescriptor.argtypes = [ctypes.c_int, ctypes.POINTER(vp)]
    lib.cudnnBackendDestroyDescriptor.argtypes = [vp]
    lib.cudnnBackendFinalize.argtypes = [vp]
    lib.cudnnBackendSetAttribute.argtypes = [vp, ctypes.c_int, ctypes.c_int, i64, vp]
    lib.cudnnBackendGetAttribute.argtypes = [vp, ctypes.c_int, ctypes.c_int, i64, ctypes.POINTER(i64), vp]
    lib.cudnnBackendExecute.argtypes = [vp, vp, vp]
    lib.cudnnCreate.argtypes = [ctypes.POINTER(vp)]
    lib.cudnnSetStream.argtypes = [vp, vp]
    lib.cudnnGetErrorString.restype = ctypes.c_char_p
    return lib


def _check(status: int, what: str) -> None:
    if status:
        text = library().cudnnGetErrorString(status).decode()
        raise CudnnError(f"{what}: {text} ({status})")


class Descriptor:
    """One backend descriptor, destroyed with the object."""

    def __init__(self, kind: int):
        self.ptr = ctypes.c_void_p()
        _check(library().cudnnBackendCreateDescriptor(kind, ctypes.byref(self.ptr)), f"create descriptor {kind}")

    def set(self, name: int, kind: int, values) -> "Descriptor":
        ctype = {T_INT64: ctypes.c_int64, T_FLOAT: ctypes.c_float, T_BOOLEAN: ctypes.c_bool,
                 T_HANDLE: ctypes.c_void_p, T_VOID_PTR: ctypes.c_void_p, T_DESCRIPTOR: ctypes.c_void_p,
                 T_CHAR: ctypes.c_char}.get(kind, ctypes.c_int)
        if kind == T_CHAR:
            array = ctypes.create_string_buffer(bytes(values), len(values))
            _check(library().cudnnBackendSetAttribute(self.ptr, name, kind, len(values), array),
                   f"set attribute {name}")
            return self
        values = list(values)
        if kind == T_DESCRIPTOR:
            values = [v.ptr.value for v in values]
        array = (ctype * len(values))(*values)
        _check(library().cudnnBackendSetAttribute(self.ptr, name, kind, len(values), array), f"set attribute {name}")
        return self

    def finalize(self) -> "Descriptor":
        _check(library().cudnnBackendFinalize(self.ptr), "finalize")
        return self

    def get_ints(self, name: int, kind: int, most: int = 32) -> list[int]:
        ctype = ctypes.c_int64 if kind == T_INT64 else ctypes.c_int
        array, count = (ctype * most)(), ctypes.c_int64()
        _check(library().cudnnBackendGetAttribute(self.ptr, name, kind, most, ctypes.byref(count), array),
               f"get attribute {name}")
        return list(array[:count.value])

    def get_descriptors(self, name: int, kind: int) -> list["Descriptor"]:
        count = ctypes.c_int64()
        _check(library().cudnnBackendGetAttribute(self.ptr, name, T_DESCRIPTOR, 0, ctypes.byref(count), None),
               f"count attribute {name}")
        out = [Descriptor(kind) for _ in range(count.value)]
        array = (ctypes.c_void_p * max(count.value, 1))(*[d.ptr.value for d in out])
        _check(library().cudnnBackendGetAttribute(self.ptr, name, T_DESCRIPTOR, count.value, ctypes.byref(count),
                                                  array), f"get attribute {name}")
        return out[:count.value]

    def __del__(self):
        if self.ptr and self.ptr.value:
            try:
                library().cudnnBackendDestroyDescriptor(self.ptr)
            except Exception:  # noqa: BLE001 - at interpreter exit the library may be gone
                pass


_local = threading.local()


def thread_handle(device_id: int) -> int:
    """A cuDNN handle of the calling thread's own for ``device_id`` (a handle is not for
    concurrent use, and is bound to the device current when it was made)."""
    handles = getattr(_local, "handles", None)
    if handles is None:
        handles = _local.handles = {}
    if device_id not in handles:
        import cupy
        cupy.cuda.Device(device_id).use()
        ptr = ctypes.c_void_p()
        _check(library().cudnnCreate(ctypes.byref(ptr)), "cudnnCreate")
        handles[device_id] = ptr.value
    return handles[device_id]


def _tensor(uid: int, dims, strides, dtype: int, virtual: bool = False) -> Descriptor:
    t = Descriptor(TENSOR)
    t.set(A_T_DTYPE, T_DATA_TYPE, [dtype]).set(A_T_DIMS, T_INT64, dims).set(A_T_STRIDES, T_INT64, strides)
    t.set(A_T_UID, T_INT64, [uid]).set(A_T_ALIGN, T_INT64, [16]).set(A_T_VIRTUAL, T_BOOLEAN, [virtual])
    return t.finalize()


def _pointwise(mode: int, x: Descriptor, y: Descriptor, b: Descriptor | None = None) -> Descriptor:
    desc = Descriptor(POINTWISE).set(A_PW_MODE, T_POINTWISE_MODE, [mode]).set(A_PW_MATH_PREC, T_DATA_TYPE,
                                                                              [DT_FLOAT]).finalize()
    op = Descriptor(OP_POINTWISE).set(A_OPPW_DESC, T_DESCRIPTOR, [desc]).set(A_OPPW_X, T_DESCRIPTOR, [x])
    if b is not None:
        op.set(A_OPPW_B, T_DESCRIPTOR, [b])
    op.set(A_OPPW_Y, T_DESCRIPTOR, [y]).finalize()
    op.keep = [desc]
    return op


def operation_graph(spec, handle: int) -> tuple[Descriptor, list]:
    """The finalized operation graph of ``spec`` and every descriptor it refers to."""
    io = DT_HALF if spec.dtype == "float16" else DT_FLOAT
    inp = DT_BFLOAT16 if spec.inputs == "bfloat16" else io
    out = list(spec.out_shape)
    out_strides = layout_strides(out, spec.nhwc)
    x = _tensor(UID["X"], spec.x_shape, layout_strides(spec.x_shape, spec.nhwc), inp)
    w = _tensor(UID["W"], spec.w_shape, layout_strides(spec.w_shape, spec.nhwc), inp)
    keep = [x, w]
    nsp = len(spec.x_shape) - 2
    conv = Descriptor(CONVOLUTION).set(A_CONV_COMP_TYPE, T_DATA_TYPE, [DT_FLOAT])
    conv.set(A_CONV_MODE, T_CONV_MODE, [CROSS_CORRELATION]).set(A_CONV_SPATIAL_DIMS, T_INT64, [nsp])
    conv.set(A_CONV_DILATIONS, T_INT64, spec.dilations).set(A_CONV_STRIDES, T_INT64, spec.strides)
    conv.set(A_CONV_PRE_PAD, T_INT64, spec.pads_begin).set(A_CONV_POST_PAD, T_INT64, spec.pads_end).finalize()
    steps = epilogue_order(spec)
    virtual_uid = iter(range(VIRTUAL_UID, VIRTUAL_UID + 16))

    def next_tensor(last: bool) -> Descriptor:
        if last:
            return _tensor(UID["Y"], out, out_strides, io)
        return _tensor(next(virtual_uid), out, out_strides, DT_FLOAT, virtual=True)
    y = next_tensor(not steps)
    op = Descriptor(OP_CONV_FWD).set(A_CONV_X, T_DESCRIPTOR, [x]).set(A_CONV_W, T_DESCRIPTOR, [w])
    op.set(A_CONV_Y, T_DESCRIPTOR, [y]).set(A_CONV_DESC, T_DESCRIPTOR, [conv])
    op.set(A_CONV_ALPHA, T_FLOAT, [1.0]).set(A_CONV_BETA, T_FLOAT, [0.0]).finalize()
    ops = [op]
    keep += [conv, y]
    k = spec.w_shape[0]
    b = r = None
    if spec.bias:
        blens = [1, k] + [1] * nsp
        b = _tensor(UID["B"], blens, layout_strides(blens, spec.nhwc), io)
    if residual_tensor(spec):
        r = _tensor(UID["R"], out, out_strides, io)
    keep += [t for t in (b, r) if t is not None]
    for i, step in enumerate(steps):
        nxt = next_tensor(i == len(steps) - 1)
        if step == "relu":
            ops.append(_pointwise(PW_RELU, y, nxt))
        else:
            ops.append(_pointwise(PW_ADD, y, nxt, b if step == "bias" else r))
        keep.append(nxt)
        y = nxt
    graph = Descriptor(OPERATIONGRAPH).set(A_GRAPH_HANDLE, T_HANDLE, [handle]).set(A_GRAPH_OPS, T_DESCRIPTOR, ops)
    graph.finalize()
    return graph, keep + ops


def _admissible(cfg: Descriptor, barred: set) -> bool:
    engine = cfg.get_descriptors(A_CFG_ENGINE, ENGINE)[0]
    return not (set(engine.get_ints(A_ENGINE_NUMERICAL_NOTE, T_NUMERICAL_NOTE)) & barred)


def barred_notes(spec, tf32: bool = False) -> set:
    """``conv_spec.excluded_note_names`` for ``spec``, as backend enum values."""
    return {NUMERICAL_NOTE[n] for n in excluded_note_names(spec.inputs or spec.dtype, tf32)}


class BackendPlan:
    """The heuristics' first admissible plan for ``spec`` (modes A then fallback, as the frontend
    builds it), built with ``handle``; or a plan read back from its JSON text. ``tf32``: TF32
    engines admissible for fp32 (``GpuOptions.tf32``)."""

    def __init__(self, spec, handle: int, json_text: bytes | None = None, tf32: bool = False):
        self.plan = Descriptor(EXECUTION_PLAN).set(A_PLAN_HANDLE, T_HANDLE, [handle])
        if json_text is not None:
            self.keep = []
            self.plan.set(A_PLAN_JSON, T_CHAR, json_text).finalize()
        else:
            self._build(spec, handle, tf32)
        self.workspace_size = self.plan.get_ints(A_PLAN_WORKSPACE, T_INT64, 1)[0]
        self._packs: dict = {}

    def _build(self, spec, handle: int, tf32: bool) -> None:
        graph, self.keep = operation_graph(spec, handle)
        barred = barred_notes(spec, tf32)
        last = None
        for mode in (HEUR_A, HEUR_FALLBACK):
            heur = Descriptor(ENGINEHEUR).set(A_HEUR_GRAPH, T_DESCRIPTOR, [graph])
            heur.set(A_HEUR_MODE, T_HEUR_MODE, [mode]).finalize()
            for cfg in heur.get_descriptors(A_HEUR_RESULTS, ENGINECFG):
                if not _admissible(cfg, barred):
                    continue
                try:
                    self.plan.set(A_PLAN_CFG, T_DESCRIPTOR, [cfg]).finalize()
                except CudnnError as exc:
                    last = exc
                    self.plan = Descriptor(EXECUTION_PLAN).set(A_PLAN_HANDLE, T_HANDLE, [handle])
                    continue
                self.keep += [graph, heur, cfg]
                self.runtime_compiled = BEHAVIOR_RUNTIME_COMPILATION in cfg.get_descriptors(
                    A_CFG_ENGINE, ENGINE)[0].get_ints(A_ENGINE_BEHAVIOR_NOTE, T_BEHAVIOR_NOTE)
                return
        raise CudnnError(f"no admissible engine builds: {last}")

    def json(self) -> bytes:
        count = ctypes.c_int64()
        lib = library()
        _check(lib.cudnnBackendGetAttribute(self.plan.ptr, A_PLAN_JSON, T_CHAR, 0, ctypes.byref(count), None),
               "plan JSON size")
        buf = ctypes.create_string_buffer(count.value)
        _check(lib.cudnnBackendGetAttribute(self.plan.ptr, A_PLAN_JSON, T_CHAR, count.value, ctypes.byref(count),
                                            buf), "plan JSON")
        return buf.raw[:count.value]

    def execute(self, handle: int, stream_ptr: int, pointers: dict, workspace_ptr: int) -> None:
        """Run the plan on ``stream_ptr`` with the tensors at ``pointers`` (uid -> device
        address). A variant pack is made once per distinct set of addresses (a program's buffers
        are static, so eager runs and the captured run reuse it)."""
        key = (workspace_ptr, *sorted(pointers.items()))
        pack = self._packs.get(key)
        if pack is None:
            uids = sorted(pointers)
            pack = Descriptor(VARIANT_PACK).set(A_VP_UIDS, T_INT64, uids)
            pack.set(A_VP_PTRS, T_VOID_PTR, [pointers[u] for u in uids])
            pack.set(A_VP_WORKSPACE, T_VOID_PTR, [workspace_ptr]).finalize()
            if len(self._packs) > 64:
                self._packs.clear()
            self._packs[key] = pack
        lib = library()
        _check(lib.cudnnSetStream(handle, stream_ptr), "cudnnSetStream")
        _check(lib.cudnnBackendExecute(handle, self.plan.ptr, pack.ptr), "execute")


# Plans being built ahead on worker threads, by spec (``build_ahead``); ``take`` collects one.
_pending: dict = {}
_pool: list = []


def _workers():
    if not _pool:
        from concurrent.futures import ThreadPoolExecutor
        _pool.append(ThreadPoolExecutor(max_workers=max(2, min(16, os.cpu_count() or 2)),
                                        thread_name_prefix="cudnn-build"))
    return _pool[0]


def build_ahead(specs, device_id: int, tf32: bool = False) -> int:
    """Start building a plan for each of ``specs`` on worker threads (their driver compiles run
    side by side); returns how many were started. On the H200 seven runtime-compiled ResNet-50
    plans took 3.2-3.4 s one after another and 1.3 s on 8 threads
    (``benchmarks/RESULTS.md``, retired probes)."""
    def build(spec):
        return BackendPlan(spec, thread_handle(device_id), tf32=tf32)
    started = 0
    for spec in specs:
        if spec not in _pending:
            _pending[spec] = _workers().submit(build, spec)
            started += 1
    return started


def any_building() -> bool:
    """Whether any plan started ahead is still being built."""
    return any(not f.done() for f in _pending.values())


def building(spec) -> bool:
    """Whether a plan for ``spec`` is being built ahead and is not done yet."""
    future = _pending.get(spec)
    return future is not None and not future.done()


def take(spec):
    """The plan built ahead for ``spec`` (waiting for it), None when none was started; raises what
    the build raised."""
    future = _pending.pop(spec, None)
    return None if future is None else future.result()
