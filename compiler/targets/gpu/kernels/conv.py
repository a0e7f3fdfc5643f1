"""Convolution: cuDNN graphs with fused epilogues, else im2col + GEMM.

Both paths take NCHW (or NHWC, see ``layout``) data and produce the layout asked for. The cuDNN
path builds one graph per distinct convolution (shapes, dtype, epilogue) and keeps it for the
process and its plan on disk: through cuDNN's backend API (``cudnn_backend``; plans can build on
worker threads, ``cudnn_ahead``), or through ``nvidia-cudnn-frontend`` where that is switched off
or plans are autotuned. The fallback path is plain CuPy (strided window view, one batched cuBLAS
product per group), also the path used where cuDNN turns a graph down.
"""
from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass

from .. import libraries
from . import cudnn_backend


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
    inputs: str = ""        # "bfloat16": X and W are split-bf16 operands (bias, residual, Y in dtype)

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
    return libraries.frontend()  # None without the wheel or the library: the fallback path


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


def _autotune_wanted(dtype: str) -> bool:
    """Timing plans is opt-in (PERFBOT_GPU_AUTOTUNE=1): on the H200 the heuristic's first plan ran
    ResNet-50 fp16 (batch 64) at 25,118 img/s against 24,951 for the fastest of four timed plans,
    and compiled in 3.2 s against 9.6 s cold. A timed candidate must also reproduce the first
    admissible plan's output (``_accurate_enough``): without that gate the fastest fp32 plans were
    TF32 ones that slipped past the note filters (ResNet-50 max abs error 2.6e-3 against 2.9e-6)."""
    return os.environ.get("PERFBOT_GPU_AUTOTUNE", "0") == "1"


def _candidates(dtype: str) -> int:
    """How many of the heuristics' best-ranked plans are timed: more for fp32, where the first
    ones are often tensor-core (TF32) plans that the gate turns down."""
    default = "8" if dtype == "float32" else "4"
    return int(os.environ.get("PERFBOT_GPU_AUTOTUNE_PLANS", default))


# Largest difference from the reference plan's output, relative to its largest magnitude, that a
# candidate plan may show. The bounds follow from mantissa widths (expected, not measured per plan):
# reordered fp32 sums move ~1e-7 relative, TF32 inputs (10-bit mantissa) ~1e-4..1e-3; fp16 outputs
# round at 4.9e-4, fp16 accumulation would move ~1e-2. On the H200 the gate let every timed exact
# fp32 ResNet-50 plan through and, with TF32 allowed, turned down 35 candidate plans over the
# 48 convolution graphs of ResNet-50 at batch 1 and 64.
GATE = {"float32": 2e-5, "float16": 4e-3}


def _accurate_enough(candidate, reference, dtype: str) -> bool:
    import cupy
    ref = reference.astype(cupy.float32)
    scale = float(cupy.abs(ref).max())
    if not scale:
        return bool(cupy.all(candidate == reference))
    err = float(cupy.abs(candidate.astype(cupy.float32) - ref).max())
    return err <= GATE.get(dtype, 2e-5) * scale


def excluded_note_names(dtype: str) -> list[str]:
    """The numerical notes of engines whose arithmetic is looser than ``dtype`` promises (the
    frontend's and the backend build's filter): FFT and Winograd transforms and reduced-precision
    accumulation always; for fp32 also tensor cores (TF32) and down-converted inputs, unless
    PERFBOT_GPU_TF32=1 asks for TF32 as PyTorch allows it. Split-bf16 graphs pass "bfloat16"."""
    names = ["FFT", "WINOGRAD", "WINOGRAD_TILE_4x4", "WINOGRAD_TILE_6x6", "WINOGRAD_TILE_13x13",
             "REDUCED_PRECISION_REDUCTION"]
    if dtype == "float32" and os.environ.get("PERFBOT_GPU_TF32") != "1":
        names += ["TENSOR_CORE", "DOWN_CONVERT_INPUTS"]
    return names


def _excluded_notes(cudnn, dtype: str) -> list:
    """``excluded_note_names`` as the frontend's note values (those this frontend knows)."""
    found = [getattr(cudnn.numerical_note, n, None) for n in excluded_note_names(dtype)]
    return [n for n in found if n is not None]


def runtime_compiled(graph) -> bool | None:
    """Whether the engine of ``graph``'s built plan is one cuDNN compiles while building the plan
    (runtime compilation) rather than a precompiled one; None when cuDNN does not say."""
    cudnn = cudnn_module()
    try:
        return cudnn.behavior_note.RUNTIME_COMPILATION in graph.get_behavior_notes()
    except Exception:  # noqa: BLE001 - a loaded or python-engine plan may not report notes
        return None


def residual_first(spec: ConvSpec) -> bool:
    """Whether the graph adds the residual before the bias: relu(conv + r + b), the form of
    cuDNN's classic fused convolution, which precompiled engines take; relu(conv + b + r) had
    only runtime-compiled ones for fp16 (on the H200 0.5-0.9 s of driver compilation per
    ResNet-50 residual convolution against ~0.01 s; outputs within one fp16 rounding,
    ``benchmarks/RESULTS.md``, retired probes). Split-bf16 graphs are runtime-compiled either way
    and keep bias first."""
    return spec.residual and spec.inputs != "bfloat16"


def zero_residual(spec: ConvSpec) -> bool:
    """Whether a split-bf16 convolution without a residual is built as relu(conv + b + r) with r
    a buffer of zeros. cuDNN gives that form its runtime-fusion engine (a plan per shape, a dozen
    tile choices), where conv + b (+ ReLU) gets one generic engine; on the H200 the former ran
    VGG-16's batch-1 layers at 224 and 112 pixels in 0.073 / 0.060 / 0.076 ms against 0.130 /
    0.080 / 0.106 and ResNet-50's batch-64 3 x 3 at 56 x 56 in 0.152 against 0.318 ms (one launch
    each, ``benchmarks/RESULTS.md``, retired probes), for reading the zeros and, on a machine whose
    driver cache lacks them, a runtime compile per shape (0.3-0.9 s) instead of one per form.
    PERFBOT_GPU_SPLIT_ZERO_RESIDUAL=0 builds relu(conv + b)."""
    return (spec.inputs == "bfloat16" and not spec.residual
            and os.environ.get("PERFBOT_GPU_SPLIT_ZERO_RESIDUAL", "1") != "0")


def residual_tensor(spec: ConvSpec) -> bool:
    """Whether the graph reads a residual tensor R (the model's, or ``zero_residual``'s zeros)."""
    return spec.residual or zero_residual(spec)


def epilogue_order(spec: ConvSpec) -> tuple[str, ...]:
    """The operations after the convolution, in the order the cuDNN graph applies them. The
    plan-file key carries it, so a plan built by one graph form is never loaded for another."""
    steps = []
    if spec.residual and residual_first(spec):
        steps.append("add")
    if spec.bias:
        steps.append("bias")
    if residual_tensor(spec) and not residual_first(spec):
        steps.append("add")
    if spec.relu:
        steps.append("relu")
    return tuple(steps)


def backend_builds(spec: ConvSpec) -> bool:
    """Whether ``spec``'s plan is built through cuDNN's backend API (``cudnn_backend``): unless
    switched off or plans are autotuned (the frontend times its candidates)."""
    return cudnn_backend.wanted() and not _autotune_wanted(spec.dtype)


def graph_form(spec: ConvSpec) -> str:
    """``epilogue_order`` as the text the plan-file and plan-choice keys carry."""
    return ",".join(epilogue_order(spec))


class _Handle:
    handle = None


# Fixed tensor uids, so a plan loaded from disk is fed by uid like one built here.
UID = {"X": 1, "W": 2, "Y": 3, "B": 4, "R": 5}


@functools.lru_cache(maxsize=None)
def _device_name(device_id: int) -> str:
    import cupy
    name = cupy.cuda.runtime.getDeviceProperties(device_id)["name"]
    return name.decode() if isinstance(name, bytes) else name


def device_name() -> str:
    """The current GPU's name, asked once per device (each query took ~1.3 ms on the H200)."""
    import cupy
    return _device_name(cupy.cuda.Device().id)


def blob_path(spec: ConvSpec, backend: bool = False) -> str | None:
    """Where the built plan of ``spec`` is kept: one file per (cuDNN version, GPU, plan choice
    settings, graph form, convolution, API: a backend plan's JSON text or the frontend's
    serialized graph); None when PERFBOT_GPU_PLAN_CACHE=0."""
    if os.environ.get("PERFBOT_GPU_PLAN_CACHE", "1") == "0":
        return None
    import hashlib

    import cupy
    device = cupy.cuda.Device()
    name = device_name()
    settings = [os.environ.get(k, "") for k in ("PERFBOT_GPU_AUTOTUNE", "PERFBOT_GPU_TF32",
                                                 "PERFBOT_GPU_AUTOTUNE_PLANS")]
    key = (f"{cudnn_module().backend_version()}|{name}|{device.compute_capability}|{settings}|"
           f"{graph_form(spec)}|{spec}" + ("|backend-json" if backend else ""))
    return os.path.join(os.path.dirname(_plan_file()), "cudnn_plans",
                        hashlib.sha1(key.encode()).hexdigest() + ".plan")


def _handle():
    """The process's cuDNN handle, bound to the current CuPy stream: a handle keeps the stream it
    last ran on, and that stream may since have been destroyed (a program's recording stream, the
    path-timing stream); building or loading a plan on a handle bound to a destroyed stream
    crashed cuDNN (a segfault in deserialize on the H200 machine, in a second GPU test run)."""
    import cupy
    cudnn = cudnn_module()
    if _Handle.handle is None:
        _Handle.handle = cudnn.create_handle()
    cudnn.set_stream(handle=_Handle.handle, stream=cupy.cuda.get_current_stream().ptr)
    return _Handle.handle


class CudnnConv:
    """One built cuDNN graph for one ``ConvSpec``: a backend plan (``cudnn_backend``, built on a
    worker thread when ``build_ahead`` started it) or, where that is switched off, refused or
    the plans are autotuned, the frontend's graph."""

    def __init__(self, spec: ConvSpec):
        import cupy
        start = time.perf_counter()
        self.spec = spec
        self.plan = None
        self.device = cupy.cuda.Device().id
        if self._take_ahead(spec):
            self._save(spec)
        elif not self._load(spec):
            if not self._build_backend(spec):
                last = None
                for strict in (True, False):
                    try:
                        self._build(spec, strict)
                        break
                    except Exception as exc:  # noqa: BLE001 - no engine left under the filters
                        last = exc
                else:
                    raise last
            self._save(spec)
        size = self.plan.workspace_size if self.plan is not None else self.graph.get_workspace_size()
        self.workspace = cupy.empty(max(int(size), 1), dtype=cupy.uint8)
        self.zeros = shared_zeros(spec.out_shape, spec.dtype, spec.nhwc) if zero_residual(spec) else None
        self.seconds = time.perf_counter() - start      # to build, load or wait for: what probes report

    # ----- backend plans (``cudnn_backend``): built here or ahead on a worker thread ---------------
    def _use_plan(self, plan, how: str) -> None:
        self.plan, self.tuned, self.plan_index, self.strict = plan, how, None, True

    def _take_ahead(self, spec: ConvSpec) -> bool:
        try:
            plan = cudnn_backend.take(spec)
        except Exception:  # noqa: BLE001 - the worker's build failed: build here, either API
            return False
        if plan is not None:
            self._use_plan(plan, "ahead")
        return plan is not None

    def _build_backend(self, spec: ConvSpec) -> bool:
        if not backend_builds(spec):
            return False
        try:
            self._use_plan(cudnn_backend.BackendPlan(spec, cudnn_backend.thread_handle(self.device)), "heuristic")
        except Exception:  # noqa: BLE001 - refused by the backend build: the frontend tries both filters
            return False
        return True

    def runtime_compiled(self) -> bool | None:
        """Whether the plan's engine is compiled while its plan is built (None: not known, as for
        a plan read back from disk)."""
        if self.plan is not None:
            return getattr(self.plan, "runtime_compiled", None)
        return runtime_compiled(self.graph)

    # ----- built plans kept on disk: a later compile loads the plan instead of building it --------
    def _load(self, spec: ConvSpec) -> bool:
        backend = backend_builds(spec)
        path = blob_path(spec, backend)
        if path is None or not os.path.exists(path):
            return False
        try:
            with open(path, "rb") as f:
                blob = f.read()
            if backend:
                self._use_plan(cudnn_backend.BackendPlan(spec, cudnn_backend.thread_handle(self.device), blob),
                               "loaded")
                return True
            cudnn = cudnn_module()
            g, handle = cudnn.pygraph(), _handle()
            g.deserialize(handle, blob)
            self.graph, self.handle = g, handle
        except Exception:  # noqa: BLE001 - an unreadable or stale blob: build the plan again
            return False
        self.x, self.w, self.y = UID["X"], UID["W"], UID["Y"]
        self.b = UID["B"] if spec.bias else None
        self.r = UID["R"] if residual_tensor(spec) else None
        self.plan_index, self.tuned, self.strict = None, "loaded", None
        return True

    def _save(self, spec: ConvSpec) -> None:
        if spec.dtype == "float32" and not spec.inputs:
            # Exact-fp32 plans are not kept: reading one back crashed cuDNN's deserialize on the
            # H200 machine before ``_handle`` rebound the stream (likely the same cause; not
            # re-tested since). fp16 and split-bf16 plans load.
            return
        path = blob_path(spec, self.plan is not None)
        if path is None:
            return
        try:
            if self.plan is not None:
                blob = self.plan.json()
            else:
                blob = bytes(self.graph.serialize(as_bytes=True))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                f.write(blob)
            os.replace(tmp, path)
        except Exception:  # noqa: BLE001 - a plan cuDNN cannot serialize is built each time
            pass

    def _build(self, spec: ConvSpec, strict: bool):
        cudnn = cudnn_module()
        self.spec = spec
        handle = _handle()
        g, tensors = frontend_graph(spec, handle)
        x, w, y = tensors["X"], tensors["W"], tensors["Y"]
        self.b, self.r = tensors.get("B"), tensors.get("R")
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        if strict:
            notes = _excluded_notes(cudnn, spec.inputs or spec.dtype)
            if notes:
                g.deselect_numeric_notes(notes)
        g.check_support()
        self.graph, self.x, self.w, self.y = g, x, w, y
        self.handle = handle
        self.strict = strict
        key = f"{cudnn.backend_version()}|gated|{strict}|{graph_form(spec)}|{spec}"
        chosen = plan_cache().get(key)
        if chosen is not None:
            try:
                g.build_plan_at_index(int(chosen))
                self.plan_index, self.tuned = int(chosen), "cached"
                return
            except Exception:  # noqa: BLE001 - a stale entry: tune again
                pass
        if _autotune_wanted(spec.dtype):
            self._autotune(cudnn, g, key)
        else:
            g.build_plans()
            self.plan_index, self.tuned = None, "heuristic"

    def _autotune(self, cudnn, g, key):
        """Time the first few plans the heuristics rank that the note filters let through (each
        built on its own: building every plan would compile every runtime-fused engine); keep
        the fastest whose output matches the first such plan's on random data, remember it."""
        import cupy
        spec = self.spec
        rng = cupy.random.default_rng(0)

        def rand(lens):
            return rng.standard_normal(lens, dtype=cupy.float32).astype(spec.dtype)

        def operand(lens):
            if spec.inputs == "bfloat16":   # split-bf16 X and W: bf16 bit patterns of random values
                return (rng.standard_normal(lens, dtype=cupy.float32).view(cupy.uint32) >> 16).astype(cupy.uint16)
            return rand(lens)
        bufs = {self.x: operand(_storage(spec.x_shape, spec.nhwc)), self.w: operand(_storage(spec.w_shape, spec.nhwc)),
                self.y: cupy.empty(_storage(spec.out_shape, spec.nhwc), dtype=spec.dtype)}
        if self.b is not None:
            bufs[self.b] = rand((spec.w_shape[0],))
        if self.r is not None:
            bufs[self.r] = rand(_storage(spec.out_shape, spec.nhwc))
        pack = {t: a.data.ptr for t, a in bufs.items()}
        stream = cupy.cuda.get_current_stream()
        cudnn.set_stream(handle=self.handle, stream=stream.ptr)
        reference = None
        timed: dict[int, float] = {}
        self.rejected = 0
        for i in range(g.get_execution_plan_count()):
            if len(timed) + self.rejected >= _candidates(spec.dtype):
                break
            try:
                g.build_plan_at_index(i)    # refuses plans the note filters barred
                size = int(g.get_workspace_size())
                if size > (1 << 30):
                    continue
                ws = cupy.empty(max(size, 1), dtype=cupy.uint8)
                bufs[self.y].fill(0)
                g.execute(pack, ws.data.ptr, handle=self.handle)
            except Exception:  # noqa: BLE001 - a plan that does not build or run is no candidate
                continue
            if reference is None:
                # The heuristic's first admissible plan is the one an untuned build runs.
                reference = bufs[self.y].copy()
            elif not _accurate_enough(bufs[self.y], reference, spec.dtype):
                self.rejected += 1
                continue
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record(stream)
            for _ in range(3):
                g.execute(pack, ws.data.ptr, handle=self.handle)
            end.record(stream)
            end.synchronize()
            timed[i] = cupy.cuda.get_elapsed_time(start, end)
        if not timed:
            raise RuntimeError("no execution plan under the filters builds and runs")
        best = min(timed, key=timed.get)
        g.build_plan_at_index(best)
        self.plan_index, self.tuned = best, "tuned"
        remember_plan(key, best)

    def __call__(self, x, w, b=None, r=None, out=None):
        import cupy
        if out is None:
            out = _empty(self.spec.out_shape, self.spec.dtype, self.spec.nhwc)
        residual = (r if r is not None else self.zeros) if residual_tensor(self.spec) else None
        stream = cupy.cuda.get_current_stream().ptr
        if self.plan is not None:
            pointers = {UID["X"]: x.data.ptr, UID["W"]: w.data.ptr, UID["Y"]: out.data.ptr}
            if self.spec.bias:
                pointers[UID["B"]] = b.data.ptr
            if residual is not None:
                pointers[UID["R"]] = residual.data.ptr
            self.plan.execute(cudnn_backend.thread_handle(self.device), stream, pointers, self.workspace.data.ptr)
            return out
        cudnn = cudnn_module()
        pack = {self.x: x.data.ptr, self.w: w.data.ptr, self.y: out.data.ptr}
        if self.b is not None:
            pack[self.b] = b.data.ptr
        if self.r is not None:
            pack[self.r] = residual.data.ptr
        cudnn.set_stream(handle=self.handle, stream=stream)
        self.graph.execute(pack, self.workspace.data.ptr, handle=self.handle)
        return out


def frontend_graph(spec: ConvSpec, handle, steps: tuple | None = None):
    """The frontend's graph of ``spec`` with the epilogue ``steps`` (``epilogue_order``'s by
    default), validated and lowered to cuDNN's operation graph, no plans yet; returns it and its
    fed tensors by name (X, W, Y, and B and R where the steps read them). Split-bf16 operands:
    bf16 X and W, fp32 accumulation, bias, residual and Y."""
    cudnn = cudnn_module()
    steps = epilogue_order(spec) if steps is None else tuple(steps)
    dt = cudnn.data_type.HALF if spec.dtype == "float16" else cudnn.data_type.FLOAT
    dt_in = cudnn.data_type.BFLOAT16 if spec.inputs == "bfloat16" else dt
    g = cudnn.pygraph(io_data_type=dt, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, handle=handle)

    def tensor(name, lens, data_type):
        return g.tensor(name=name, dim=list(lens), stride=_strides(lens, spec.nhwc), data_type=data_type,
                        uid=UID[name])
    tensors = {"X": tensor("X", spec.x_shape, dt_in), "W": tensor("W", spec.w_shape, dt_in)}
    y = g.conv_fprop(image=tensors["X"], weight=tensors["W"], pre_padding=list(spec.pads_begin),
                     post_padding=list(spec.pads_end), stride=list(spec.strides),
                     dilation=list(spec.dilations), compute_data_type=cudnn.data_type.FLOAT)
    if "bias" in steps:
        tensors["B"] = tensor("B", [1, spec.w_shape[0]] + [1] * (len(spec.x_shape) - 2), dt)
    if "add" in steps:
        tensors["R"] = tensor("R", spec.out_shape, dt)
    for step in steps:
        if step == "add":
            y = g.add(a=y, b=tensors["R"])
        elif step == "bias":
            y = g.bias(input=y, bias=tensors["B"])
        else:
            y = g.relu(input=y)
    y.set_output(True).set_data_type(dt).set_uid(UID["Y"])
    y.set_dim(list(spec.out_shape)).set_stride(_strides(spec.out_shape, spec.nhwc))
    tensors["Y"] = y
    g.validate()
    g.build_operation_graph()
    return g, tensors


def _storage(lens, nhwc: bool) -> tuple:
    """The packed shape that holds a logical NCHW tensor in its layout."""
    if not nhwc:
        return tuple(lens)
    n, c, *sp = lens
    return (n, *sp, c)


_plans: dict | None = None


def _plan_file():
    from platformdirs import user_cache_dir
    return os.path.join(os.environ.get("PERFBOT_GPU_CACHE") or user_cache_dir("perfbot"), "gpu_conv_plans.json")


def plan_cache() -> dict:
    """Chosen cuDNN plan per convolution, kept on disk so later compiles skip autotuning."""
    global _plans
    if _plans is None:
        import json
        try:
            with open(_plan_file()) as f:
                _plans = json.load(f)
        except (OSError, ValueError):
            _plans = {}
    return _plans


def remember_plan(key: str, index: int) -> None:
    import json
    cache = plan_cache()
    cache[key] = index
    path = _plan_file()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(cache, f)
        os.replace(tmp, path)
    except OSError:
        pass   # an unwritable cache only costs the next compile its tuning


def _empty(lens, dtype, nhwc: bool):
    import cupy
    if not nhwc:
        return cupy.empty(lens, dtype=dtype)
    n, c, *sp = lens
    return cupy.empty((n, *sp, c), dtype=dtype).transpose(0, len(lens) - 1, *range(1, len(lens) - 1))


def _zeros(lens, dtype, nhwc: bool):
    """``_empty``'s array set to zeros by a memset (a channels-last view is not C-contiguous, so
    CuPy's fill would compile a kernel for it, on the cold compile's path)."""
    import cupy
    out = _empty(lens, dtype, nhwc)
    cupy.cuda.runtime.memsetAsync(out.data.ptr, 0, out.nbytes, cupy.cuda.get_current_stream().ptr)
    return out


_zero_buffers: dict = {}


def shared_zeros(lens, dtype, nhwc: bool):
    """One buffer of zeros per device, shape, type and layout, for every convolution that reads
    zeros as its residual (``zero_residual``): cuDNN only reads it."""
    import cupy
    key = (cupy.cuda.Device().id, tuple(lens), dtype, nhwc)
    if key not in _zero_buffers:
        _zero_buffers[key] = _zeros(lens, dtype, nhwc)
    return _zero_buffers[key]


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
    from .gemm import make_matmul
    mm, _direct = make_matmul(xp, xp.__name__ == "cupy")
    out = mm(xp.ascontiguousarray(wm.astype(acc, copy=False)), xp.ascontiguousarray(cols.astype(acc, copy=False)))
    return out.reshape(n, k, *out_sp).astype(x.dtype, copy=False)


def _prod(xs) -> int:
    p = 1
    for v in xs:
        p *= int(v)
    return p
