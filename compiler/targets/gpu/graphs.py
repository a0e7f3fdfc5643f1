"""CUDA-graph recording and replay of a lowered root.

The root's steps are cut into maximal runs of capturable steps (device kernels, cuDNN graphs,
direct cuBLAS calls, copies between device buffers), each recorded once into a CUDA graph, and
the eager steps between them (copies to and from the host, calls into other roots). Everything a
graph touches lives in a memory pool private to the root, used only while recording, so buffers
the graphs bake in are never handed to anyone else; values crossing from eager steps into graphs
are copied into the buffers recorded for them.

A root is first recorded on the caller's own device buffers (``borrow``): while the caller passes
the same arrays again, as a benchmark loop or a serving loop does, a replay is the graph launches
alone, with no copy in and the outputs written straight into the caller's output buffers. The
first call with other arrays records the root again on private buffers, into which every later
call's inputs are copied, and out of which results written in place (``outputs_in_place``) are
copied into the caller's output buffers (the caller's earlier arrays are never written to).
"""
from __future__ import annotations

from compiler.ir.instruction import PARAM
from compiler.passes.offload_copy import is_output_parameter


def _capturable(fn) -> bool:
    return getattr(fn, "capturable", True)


def record_on_device_operands(fn, when: bool = True):
    """Mark ``fn`` as a step that is device work alone when every operand is a device value (a
    copy, a pick from a tuple, a write into the caller's buffer): ``capture_plan`` records it then,
    and it runs eagerly otherwise. ``when`` False leaves it eager always."""
    fn.capturable = False
    fn.capturable_on_device = when
    return fn


def may_record(fn) -> bool:
    """Whether ``fn`` can be recorded into a CUDA graph on some operands."""
    return _capturable(fn) or getattr(fn, "capturable_on_device", False)


def _is_device(value) -> bool:
    import cupy
    return isinstance(value, cupy.ndarray)


def _kinds(args) -> tuple:
    """Which of ``args`` are device arrays: what a recording's captured steps depended on."""
    return tuple(_is_device(a) for a in args)


def capture_plan(body, args, is_device=_is_device) -> list:
    """For each of ``body``'s steps, whether the recording captures it: a capturable step always,
    and a step that is device work only on device operands (``capturable_on_device``: a copy, a
    pick from a tuple) when every operand is a device argument, a device constant or the result of
    a captured step. Left eager, such a step cut the graph and cost a Python call a replay (a
    small model's results all end in copies into the caller's buffers)."""
    device = {p for p, a in zip(body.params, args) if is_device(a)}
    device |= {c for c, v in body.constants.items() if is_device(v)}
    plan = []
    for ins, fn, inputs, _dead in body.steps:
        captured = _capturable(fn) or (may_record(fn) and all(x in device for x in inputs))
        if captured:
            device.add(ins)
        plan.append(captured)
    return plan


def _private(root) -> None:
    """The root's own memory pool and stream (CuPy's pool reuses blocks per stream, so warm-up,
    recording and replay all run on this one stream)."""
    import cupy
    if getattr(root, "_pool", None) is None:
        root._pool = cupy.cuda.MemoryPool()
        root._stream = cupy.cuda.Stream()


def _follow(stream) -> None:
    """Make ``stream`` wait for work already queued on the caller's current stream."""
    import cupy
    current = cupy.cuda.get_current_stream()
    if current.ptr != stream.ptr:
        stream.wait_event(current.record())


def _hand_back(stream) -> None:
    """Make the caller's current stream wait for what ``stream`` has queued: the outputs are
    ready in stream order, and the host goes on without waiting (a synchronising replay added
    its launch and Python time to every run, where back-to-back runs overlap them with the GPU's
    work)."""
    import cupy
    current = cupy.cuda.get_current_stream()
    if current.ptr != stream.ptr:
        current.wait_event(stream.record())


class RecordedRoot:
    def __init__(self, root, borrow: bool = True):
        self.borrow = borrow        # recorded on the caller's own buffers
        self.root = root
        self.body = root.body
        _private(root)
        self.pool = root._pool
        self.stream = root._stream
        self.segments: list = []
        self.static: dict = {}      # value -> device array recorded for it
        self.keep: list = []        # everything graphs may read or write, kept alive
        self.graph_inputs: set = set()  # values the recorded graphs read
        self.kinds: tuple = ()      # which arguments were device arrays at recording

    @staticmethod
    def warm_up(root, args):
        """The first run, eager, in the private pool: kernels compile, plans build, and the pool
        holds blocks of the sizes the recording will ask for."""
        import cupy
        _private(root)
        _follow(root._stream)
        with cupy.cuda.using_allocator(root._pool.malloc), root._stream:
            out = root.body.run(args)
        root._stream.synchronize()
        return out

    # ----- recording ----------------------------------------------------------------------
    def record(self, args):
        import cupy
        body = self.body
        steps = body.steps
        env = dict(body.constants)
        plan = capture_plan(body, args)
        self.kinds = _kinds(args)
        graph_inputs = {i for (ins, fn, inputs, _d), c in zip(steps, plan) if c for i in inputs}
        self.graph_inputs = graph_inputs
        _follow(self.stream)
        with cupy.cuda.using_allocator(self.pool.malloc), self.stream:
            for p, a in zip(body.params, args):
                if p in graph_inputs and isinstance(a, cupy.ndarray):
                    if self.borrow:
                        s = a
                        self.keep.append(a)
                    else:
                        s = cupy.empty_like(a)
                        if not is_output_parameter(p):   # an output buffer is only written
                            s[...] = a
                    self.static[p] = s
                    env[p] = s
                else:
                    env[p] = a
            i = 0
            while i < len(steps):
                ins, fn, inputs, dead = steps[i]
                if not plan[i]:
                    for x in inputs:   # what an eager step reads must stay reachable at replay
                        if x.op != PARAM or x in self.static:
                            self.static[x] = env[x]
                    value = fn(*[env[x] for x in inputs])
                    env[ins] = value
                    self.static[ins] = value
                    self.keep.append(value)
                    self.segments.append(("eager", ins, fn, inputs))
                    self._free(env, dead)
                    i += 1
                    continue
                j = i
                while j < len(steps) and plan[j]:
                    j += 1
                graph = self._capture(env, steps[i:j])
                graph.launch(self.stream)
                self.segments.append(("graph", graph))
                i = j
            for v in body.returns:
                self.static.setdefault(v, env[v])
            outputs = self._to_callers([env[v] for v in body.returns], args)
        self.stream.synchronize()
        return outputs

    def _capture(self, env, steps):
        import cupy
        mode = getattr(cupy.cuda.runtime, "streamCaptureModeRelaxed", None)
        if mode is None:
            self.stream.begin_capture()
        else:
            self.stream.begin_capture(mode)
        try:
            for ins, fn, inputs, dead in steps:
                try:
                    env[ins] = fn(*[env[x] for x in inputs])
                except Exception as exc:
                    # Name the step: the capture error alone does not say which lowering broke it.
                    raise RuntimeError(f"{ins.op} ({getattr(fn, 'path', getattr(fn, '__name__', ''))}): "
                                       f"{type(exc).__name__}: {exc}") from exc
                # Dead values go back to the private pool: later steps of this recording reuse
                # the blocks, in stream order, exactly as every replay will.
                self._free(env, dead)
        except BaseException:
            try:
                self.stream.end_capture()
            except Exception:  # noqa: BLE001 - the capture is being abandoned anyway
                pass
            raise
        return self.stream.end_capture()

    def _free(self, env, dead):
        returned = self.body.returned
        for v in dead:
            if v not in returned and v.op != PARAM:
                env.pop(v, None)

    # ----- replay ---------------------------------------------------------------------------
    def same_buffers(self, args) -> bool:
        """Whether ``args`` are the very device arrays the graphs were recorded on."""
        return all(self.static.get(p, a) is a for p, a in zip(self.body.params, args))

    def replay(self, args):
        """The outputs, or None when the graphs were recorded on the caller's buffers and these
        are others, or when an argument the recording had on the device is now on the host or the
        other way round (which steps were captured depended on it): the caller records again, on
        private buffers."""
        import cupy
        body = self.body
        if self.borrow and not self.same_buffers(args):
            return None
        if _kinds(args) != self.kinds:
            return None
        fresh: dict = {}
        _follow(self.stream)
        with self.stream:
            for p, a in zip(body.params, args):
                s = self.static.get(p)
                if s is not None and isinstance(a, cupy.ndarray):
                    if s is not a and not is_output_parameter(p):
                        s[...] = a
                else:
                    fresh[p] = a
            for seg in self.segments:
                if seg[0] == "graph":
                    seg[1].launch(self.stream)
                    continue
                _kind, ins, fn, inputs = seg
                vals = [fresh[x] if x in fresh else self.static[x] for x in inputs]
                recorded = self.static[ins]
                if getattr(fn, "into", False) and isinstance(recorded, cupy.ndarray) \
                        and not isinstance(vals[0], cupy.ndarray):
                    recorded.set(vals[0], stream=self.stream)     # host data into the graph's buffer
                    continue
                value = fn(*vals)
                if ins not in self.graph_inputs:
                    fresh[ins] = value      # no graph reads it: nothing to write back
                elif isinstance(recorded, cupy.ndarray) and isinstance(value, cupy.ndarray):
                    if value is not recorded:
                        recorded[...] = value    # graphs read the recorded buffer
                elif isinstance(recorded, tuple) and isinstance(value, tuple):
                    merged = []
                    for r, v in zip(recorded, value):
                        if isinstance(r, cupy.ndarray) and isinstance(v, cupy.ndarray):
                            if r is not v:
                                r[...] = v
                            merged.append(r)
                        else:
                            merged.append(v)
                    fresh[ins] = tuple(merged)
                else:
                    fresh[ins] = value
            outputs = self._to_callers([fresh[v] if v in fresh else self.static[v]
                                        for v in body.returns], args)
        _hand_back(self.stream)
        return outputs

    def _to_callers(self, outputs, args) -> list:
        """``outputs`` with every result the graphs wrote into a private stand-in for one of the
        caller's output buffers (``outputs_in_place``, recorded on private buffers) copied into
        that buffer, which is returned in its place."""
        stand_ins = {id(self.static[p]): a for p, a in zip(self.body.params, args)
                     if is_output_parameter(p) and self.static.get(p) is not None
                     and self.static[p] is not a}
        result = []
        for value in outputs:
            caller = stand_ins.get(id(value))
            if caller is not None:
                caller[...] = value
                value = caller
            result.append(value)
        return result
