"""A lowered GPU root: a list of device calls run in order, values freed after their last use.

Freeing at last use hands the buffer back to CuPy's pool, which serves the next allocation of a
fitting size from it: the run-time face of the liveness plan in ``memory`` (whose peak is what
the root reports). Submodules (If/Loop bodies) are lowered the same way and read their enclosing
module's values from the environment they are given.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from compiler.ir.instruction import LITERAL, PARAM, RETURN
from compiler.ops.registry import get_op

from .lowering_steps import MODULE_STEPS, ROOT_STEPS

# Ops with bodies whose own control flow runs over device arrays (see compiler.ops.control_flow).
DEVICE_CONTROL_FLOW = frozenset({"If", "Loop", "Scan"})


def _last_uses(module) -> dict:
    """value -> index (in ``module``) of the instruction after which it is dead."""
    from compiler.passes.rewrite import all_instructions
    last: dict = {}
    for pos, ins in enumerate(module.instructions):
        for v in ins.inputs:
            last[v] = pos
        for sub in ins.module_inputs:
            for inner in all_instructions(sub):
                for v in inner.inputs:
                    if v.module is module:
                        last[v] = max(last.get(v, pos), pos)
    return last


def _plan_building(lowering, ins) -> bool:
    """Whether ``ins`` waits for a cuDNN plan still being built ahead (``cudnn_ahead``)."""
    if not lowering.backend.on_gpu:
        return False
    from . import cudnn_ahead
    return cudnn_ahead.building(ins, lowering.options)


class LoweredModule:
    def __init__(self, module, lowering):
        self.module = module
        self.lowering = lowering
        self.params = module.parameters()
        self.steps = []
        self.constants = {}
        last = _last_uses(module)
        frees: dict[int, list] = {}
        for v, pos in last.items():
            if v.module is module and v.op not in (LITERAL,):
                frees.setdefault(pos, []).append(v)
        self.returns = []
        lowered, later = {}, []
        for pos, ins in enumerate(module.instructions):
            if ins.op == PARAM:
                continue
            if ins.op == LITERAL:
                self.constants[ins] = lowering.constant(ins)
                continue
            if ins.op == RETURN:
                self.returns = list(ins.inputs)
                continue
            if _plan_building(lowering, ins):
                later.append((pos, ins))    # its cuDNN plan is still compiling: lower the rest first
                continue
            lowered[pos] = self._lower_with_modules(ins) if ins.module_inputs else lowering.lower(ins)
        for pos, ins in later:
            lowered[pos] = lowering.lower(ins)
        for pos in sorted(lowered):
            ins = module.instructions[pos]
            dead = [v for v in frees.get(pos, []) if v not in ins.module_inputs]
            self.steps.append((ins, lowered[pos], tuple(ins.inputs), tuple(dead)))
        self.returned = set(self.returns)
        self.deferred = 0       # pointwise steps computed inside a convolution's input split
        self.written_in_place = []  # producers writing into the caller's output buffers
        for step in MODULE_STEPS:
            step.run(self)

    def _lower_with_modules(self, ins):
        if ins.op == "run_on_target":
            context = self.lowering.context
            name = ins.module_inputs[0].name

            def call(*args):
                return tuple(context.roots[name].run(list(args)))
            call.capturable = False
            return call
        # If / Loop / Scan: the op's own control flow (written over any array module) on device
        # values, bodies lowered to the device. Other ops with bodies (attention score/prob
        # modifiers) compute on the host, their bodies still on the device.
        op = get_op(ins.op)
        bodies = {m.name: LoweredModule(m, self.lowering) for m in ins.module_inputs}
        context = self.lowering.context
        backend = self.lowering.backend
        on_host = ins.op not in DEVICE_CONTROL_FLOW
        if on_host and backend.on_gpu:
            self.lowering.host_fallbacks.append(f"{ins.op}: computed on the host around device bodies")

        def to_device(v):
            return v if backend.is_device_array(v) else backend.to_device(np.asarray(v))

        def run_with_bodies(*args):
            env = self._current_env

            def run_module(m, margs, _env=None):
                # Counters and conditions the op makes on the host go to the device first.
                outs = bodies[m.name].run([to_device(a) for a in margs], env)
                return [backend.to_host(o) for o in outs] if on_host else outs
            if on_host:
                args = [backend.to_host(a) for a in args]
            result = op.compute_modules(ins.attrs, run_module, ins.module_inputs, *args,
                                        context=context)
            if isinstance(result, (tuple, list)):
                return tuple(to_device(v) for v in result)
            return to_device(result)     # a single result (e.g. FlexAttention's)
        run_with_bodies.capturable = False
        return run_with_bodies

    def run(self, args, outer=None) -> list:
        env = dict(outer) if outer else {}
        env.update(self.constants)
        if len(args) != len(self.params):
            raise ValueError(f"module {self.module.name} takes {len(self.params)} arguments, "
                             f"got {len(args)}")
        for p, a in zip(self.params, args):
            env[p] = a
        self._current_env = env
        returned = self.returned
        for ins, fn, inputs, dead in self.steps:
            env[ins] = fn(*[env[i] for i in inputs])
            for v in dead:
                if v not in returned:
                    env.pop(v, None)
        return [env[v] for v in self.returns]


class GpuRoot:
    """The executable of one GPU root (``Target.lower``'s result).

    Runs eagerly at first; on a GPU the second run records the root into CUDA graphs (see
    ``graphs``) and later runs replay them, so a run costs a few launches instead of one Python
    call per instruction. Recording that fails leaves the root eager (``graph_error`` says why).
    """

    def __init__(self, program, root, options, context, backend):
        """``options``: the compile's ``GpuOptions``."""
        from .lowering import Lowering
        from . import attention, linear_epilogue, ops_basic, ops_nn, ops_rnn, ops_structural  # noqa: F401
        from . import residual_norm, rms_norm, rotary  # noqa: F401 (register lowerings)
        self.lowering = Lowering(backend, options, program, context)
        self.backend = backend
        self.root = root
        for step in ROOT_STEPS:     # ``lowering_steps``: build ahead, chains, lower, memory plan
            step.run(self)
        self.peak_bytes = self.plan.peak_bytes
        self.literal_bytes = self.lowering.constant_bytes()
        self.graphs = None
        self.graph_error = None
        self.runs = 0
        self.use_graphs = backend.on_gpu and options.graphs

    @property
    def host_fallbacks(self) -> list[str]:
        return self.lowering.host_fallbacks

    @contextmanager
    def stepwise(self):
        """For the duration, runs go eagerly through the root's steps, launch by launch (no CUDA
        graph replay), so a profiler can time each step; yields the module whose ``steps`` list
        runs. Recorded graphs are kept for the runs after."""
        saved = self.use_graphs
        self.use_graphs = False
        try:
            yield self.body
        finally:
            self.use_graphs = saved

    def step_clock(self):
        """The clock ``compiler.profiling`` times this root's steps with: the device's own time
        (``step_clock``), or None when the root runs on the host (emulation)."""
        if not self.backend.on_gpu:
            return None
        from .step_clock import DeviceStepClock
        return DeviceStepClock()

    def run(self, args) -> list:
        self.runs += 1
        if not self.use_graphs:
            return self.body.run(list(args))
        from .graphs import RecordedRoot
        if self.graphs is not None:
            out = self.graphs.replay(list(args))
            if out is not None:
                return out
            borrow = False      # recorded on the caller's buffers, called with others: record anew
        elif self.runs == 1:
            return RecordedRoot.warm_up(self, list(args))
        else:
            borrow = True
        try:
            self.graphs = RecordedRoot(self, borrow=borrow)
            return self.graphs.record(list(args))
        except Exception as exc:  # noqa: BLE001 - capture refused: stay eager, say why
            self.graphs = None
            self.use_graphs = False
            self.graph_error = f"{type(exc).__name__}: {str(exc)[:200]}"
            return self.body.run(list(args))
