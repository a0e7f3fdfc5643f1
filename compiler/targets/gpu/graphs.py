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
    """The root's own memory pool, and the stream its graphs are captured on: capture needs a
    stream of its own, but nothing is launched there. Every launch, eager step or graph, goes to
    the caller's current stream. On an H100, eager kernels on a second stream of the process left
    every later replay 8 % slower for the process's life, whichever stream the graphs replayed on
    (benchmarks/RESULTS.md, section 6; pytorch/pytorch#161104 shows the same with PyTorch alone):
    with the root's warm-up on a stream of its own, a caller's eager work on its stream did that."""
    import cupy
    if getattr(root, "_pool", None) is None:
        root._pool = cupy.cuda.MemoryPool()
        root._stream = cupy.cuda.Stream(non_blocking=True)


def _callers_stream(root):
    """The caller's current stream, where this run of ``root`` launches; made to wait first for
    what an earlier run launched on another stream (a graph's buffers serve one run at a time,
    and runs from two streams would otherwise overlap)."""
    import cupy
    current = cupy.cuda.get_current_stream()
    last = getattr(root, "_last_stream", None)
    if last is not None and last.ptr != current.ptr:
        current.wait_event(last.record())
    root._last_stream = current
    return current


def after_callers_work(stream) -> None:
    """Make ``stream`` wait for work already queued on the caller's current stream."""
    import cupy
    current = cupy.cuda.get_current_stream()
    if current.ptr != stream.ptr:
        stream.wait_event(current.record())


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
        """The first run, eager, on the caller's stream and in the private pool: kernels compile
        and plans build before anything is captured."""
        import cupy
        _private(root)
        _callers_stream(root)
        with cupy.cuda.using_allocator(root._pool.malloc):
            return root.body.run(args)

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
        # The warm-up's blocks belong to the caller's stream, which captures cannot take them
        # from (a pool keeps free blocks per stream): hand them back before capturing.
        self.pool.free_all_blocks()
        stream = _callers_stream(self.root)
        with cupy.cuda.using_allocator(self.pool.malloc):
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
                graph.launch(stream)
                self.segments.append(("graph", graph))
                i = j
            for v in body.returns:
                self.static.setdefault(v, env[v])
            outputs = self._to_callers([env[v] for v in body.returns], args)
        return outputs

    def _capture(self, env, steps):
        """``steps`` captured into one graph on the root's capture stream (after what the caller's
        stream has queued), launched by the caller."""
        stream = self.stream
        after_callers_work(stream)
        with stream:
            return self._captured(stream, env, steps)

    def _captured(self, stream, env, steps):
        import cupy
        mode = getattr(cupy.cuda.runtime, "streamCaptureModeRelaxed", None)
        if mode is None:
            stream.begin_capture()
        else:
            stream.begin_capture(mode)
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
                stream.end_capture()
            except Exception:  # noqa: BLE001 - the capture is being abandoned anyway
                pass
            raise
        return stream.end_capture()

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
        stream = _callers_stream(self.root)
        for p, a in zip(body.params, args):
            s = self.static.get(p)
            if s is not None and isinstance(a, cupy.ndarray):
                if s is not a and not is_output_parameter(p):
                    s[...] = a
            else:
                fresh[p] = a
        for seg in self.segments:
            if seg[0] == "graph":
                seg[1].launch(stream)
                continue
            _kind, ins, fn, inputs = seg
            vals = [fresh[x] if x in fresh else self.static[x] for x in inputs]
            recorded = self.static[ins]
            if getattr(fn, "into", False) and isinstance(recorded, cupy.ndarray) \
                    and not isinstance(vals[0], cupy.ndarray):
                recorded.set(vals[0], stream=stream)     # host data into the graph's buffer
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
        return self._to_callers([fresh[v] if v in fresh else self.static[v] for v in body.returns], args)

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
