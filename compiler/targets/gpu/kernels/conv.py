"""Convolution through cuDNN: one built graph per distinct convolution (shapes, dtype, epilogue,
options), kept for the process and its plan on disk (``conv_plans``).

Plans are built through cuDNN's backend API (``cudnn_backend``; they can build on worker
threads, ``cudnn_ahead``), or through ``nvidia-cudnn-frontend`` (``conv_frontend``) where plans
are autotuned (``conv_autotune``) or the backend build turns a graph down. Where cuDNN is missing,
hidden or refuses a graph, the lowering runs ``conv_im2col.im2col_conv`` instead. The spec and
epilogue policy live in ``conv_spec``; names are re-exported here for the lowerings.
"""
from __future__ import annotations

import os
import time

from . import conv_plans, cudnn_backend
from .conv_autotune import autotune
from .conv_buffers import empty, shared_zeros
from .conv_frontend import cudnn_module, excluded_notes, frontend_graph, handle, runtime_compiled
from .conv_im2col import im2col_conv  # noqa: F401 (the lowerings' fallback)
from .conv_plans import device_name, plan_cache, remember_plan  # noqa: F401 (used by conv_choice)
from .conv_spec import (UID, ConvSpec, epilogue_order, graph_form, residual_first,  # noqa: F401
                        residual_tensor, storage_shape, zero_residual)


def backend_builds(spec: ConvSpec, options) -> bool:
    """Whether ``spec``'s plan is built through cuDNN's backend API (``cudnn_backend``): unless
    plans are autotuned (the frontend times its candidates)."""
    return not options.autotune


def blob_path(spec: ConvSpec, options, backend: bool = False) -> str | None:
    """``conv_plans.blob_path`` under this cuDNN's version (None when plans are not kept)."""
    if not options.plan_cache:
        return None
    return conv_plans.blob_path(spec, options, cudnn_module().backend_version(), backend)


class CudnnConv:
    """One built cuDNN graph for one ``ConvSpec``: a backend plan (``cudnn_backend``, built on a
    worker thread when ``build_ahead`` started it) or, where that is refused or the plans are
    autotuned, the frontend's graph."""

    def __init__(self, spec: ConvSpec, options):
        import cupy
        start = time.perf_counter()
        self.spec, self.options = spec, options
        self.plan = None
        self.device = cupy.cuda.Device().id
        if self._take_ahead(spec):
            self._save(spec)
        elif not self._load(spec):
            if not self._build_backend(spec):
                self._build_either_filter(spec)
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
        if not backend_builds(spec, self.options):
            return False
        try:
            self._use_plan(cudnn_backend.BackendPlan(spec, cudnn_backend.thread_handle(self.device),
                                                     tf32=self.options.tf32), "heuristic")
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
        backend = backend_builds(spec, self.options)
        path = blob_path(spec, self.options, backend)
        if path is None or not os.path.exists(path):
            return False
        try:
            with open(path, "rb") as f:
                blob = f.read()
            if backend:
                self._use_plan(cudnn_backend.BackendPlan(spec, cudnn_backend.thread_handle(self.device),
                                                         blob, tf32=self.options.tf32), "loaded")
                return True
            g, h = cudnn_module().pygraph(), handle()
            g.deserialize(h, blob)
            self.graph, self.handle = g, h
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
            # H200 machine before ``conv_frontend.handle`` rebound the stream (likely the same
            # cause; not re-tested since). fp16 and split-bf16 plans load.
            return
        path = blob_path(spec, self.options, self.plan is not None)
        if path is None:
            return
        try:
            blob = self.plan.json() if self.plan is not None else bytes(self.graph.serialize(as_bytes=True))
            conv_plans.write_atomically(path, blob)
        except Exception:  # noqa: BLE001 - a plan cuDNN cannot serialize is built each time
            pass

    # ----- frontend graphs: autotuned, or where the backend build refused -------------------------
    def _build_either_filter(self, spec: ConvSpec) -> None:
        """The frontend's graph under the note filters, else without them."""
        last = None
        for strict in (True, False):
            try:
                self._build(spec, strict)
                return
            except Exception as exc:  # noqa: BLE001 - no engine left under the filters
                last = exc
        raise last

    def _build(self, spec: ConvSpec, strict: bool):
        cudnn = cudnn_module()
        self.spec = spec
        h = handle()
        g, tensors = frontend_graph(spec, h)
        self.b, self.r = tensors.get("B"), tensors.get("R")
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        if strict:
            notes = excluded_notes(cudnn, spec.inputs or spec.dtype, self.options.tf32)
            if notes:
                g.deselect_numeric_notes(notes)
        g.check_support()
        self.graph, self.x, self.w, self.y = g, tensors["X"], tensors["W"], tensors["Y"]
        self.handle = h
        self.strict = strict
        key = f"{cudnn.backend_version()}|gated|{strict}|{graph_form(spec)}|{self.options.key()}|{spec}"
        chosen = plan_cache(self.options).get(key)
        if chosen is not None:
            try:
                g.build_plan_at_index(int(chosen))
                self.plan_index, self.tuned = int(chosen), "cached"
                return
            except Exception:  # noqa: BLE001 - a stale entry: tune again
                pass
        if self.options.autotune:
            best, self.rejected = autotune(cudnn, g, h, spec, tensors, self.options.candidates(spec.dtype))
            self.plan_index, self.tuned = best, "tuned"
            remember_plan(self.options, key, best)
        else:
            g.build_plans()
            self.plan_index, self.tuned = None, "heuristic"

    def __call__(self, x, w, b=None, r=None, out=None):
        import cupy
        if out is None:
            out = empty(self.spec.out_shape, self.spec.dtype, self.spec.nhwc)
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
        pack = {self.x: x.data.ptr, self.w: w.data.ptr, self.y: out.data.ptr}
        if self.b is not None:
            pack[self.b] = b.data.ptr
        if self.r is not None:
            pack[self.r] = residual.data.ptr
        cudnn_module().set_stream(handle=self.handle, stream=stream)
        self.graph.execute(pack, self.workspace.data.ptr, handle=self.handle)
        return out


_graphs: dict = {}          # (spec, options) -> CudnnConv, or None where cuDNN refused it
failures: list[str] = []


def made_graphs() -> dict:
    """{(spec, options): its ``CudnnConv``, or None where cuDNN refused it} made so far (probes)."""
    return dict(_graphs)


def built(spec: ConvSpec, options) -> bool:
    """Whether ``spec``'s graph was made (or refused) in this process already."""
    return (spec, options) in _graphs


def cudnn_conv(spec: ConvSpec, options):
    """A callable running ``spec`` through cuDNN, or None if cuDNN is unavailable or refuses."""
    if cudnn_module() is None:
        return None
    key = (spec, options)
    if key not in _graphs:
        try:
            _graphs[key] = CudnnConv(spec, options)
        except Exception as exc:  # noqa: BLE001 - an unsupported graph falls back to im2col
            _graphs[key] = None
            failures.append(f"{spec}: {exc}")
    return _graphs[key]
