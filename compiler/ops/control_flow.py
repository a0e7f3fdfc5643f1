"""If and Loop: ops that run submodules. Bodies read outer values directly; their parameters
are the ONNX graph inputs (Loop: iteration number, condition, loop-carried values)."""
from __future__ import annotations

import numpy as np

from compiler.errors import BranchNotBuiltError, ModelLoadError
from compiler.ir.shape import Shape, TupleShape

from .common import ValueNeeded, array_module, on_host, scalar_int, truth, tuple_shape
from .registry import Op, register_op


def merge_shapes(a: Shape, b: Shape) -> Shape:
    """A value that is ``a`` on one path and ``b`` on another: lengths that differ are unknown."""
    if a.ndim != b.ndim:
        raise ValueNeeded(f"branches disagree on the rank of a result ({a} vs {b})")
    return Shape(a.dtype, [x if x == y else None for x, y in zip(a.lens, b.lens)])


@register_op
class If(Op):
    """Runs module_inputs[0] when the condition holds, else module_inputs[1]; returns the
    branch's results as a tuple."""

    name = "If"
    foldable = False

    def from_onnx(self, node):
        """A branch that cannot be built for the compiled shapes (a model scripted for several
        input lengths, such as Silero VAD's 8 kHz path compiled for 16 kHz frames) becomes a
        stand-in that raises when taken, as running that branch on such inputs would; the model
        is refused only when neither branch can be built."""
        try:
            then = node.subgraph("then_branch")
        except ModelLoadError as e:
            other = node.subgraph("else_branch")
            return {}, node.present_inputs(), [
                node.stand_in_subgraph("then_branch", str(e), other.output_shapes()), other]
        try:
            other = node.subgraph("else_branch")
        except ModelLoadError as e:
            other = node.stand_in_subgraph("else_branch", str(e), then.output_shapes())
        return {}, node.present_inputs(), [then, other]

    def shape(self, attrs, inputs, literals, module_inputs=()):
        then, other = (m.output_shapes() for m in module_inputs)
        if len(then) != len(other):
            raise ValueError("If branches return different numbers of results")
        return TupleShape(tuple(merge_shapes(a, b) for a, b in zip(then, other)))

    def compute_modules(self, attrs, run_module, modules, cond, context=None):
        branch = modules[0] if truth(cond) else modules[1]
        return tuple(run_module(branch, []))


@register_op
class UnreachableBranch(Op):
    """A result of an If branch that could not be built for the compiled input shapes
    (``If.from_onnx``): its shape is the other branch's, and computing it raises ``message``."""

    name = "unreachable_branch"
    foldable = False

    def shape(self, attrs, inputs, literals):
        return Shape(attrs["dtype"], [None if n < 0 else n for n in attrs["lens"]])

    def compute(self, attrs):
        raise BranchNotBuiltError(attrs["message"])


@register_op
class Loop(Op):
    """ONNX Loop: inputs [M?, cond?, carried...] (``has_max``/``has_cond`` say which are
    there); results: final carried values, then scan outputs stacked along a new first axis."""

    name = "Loop"
    foldable = False

    def from_onnx(self, node):
        m, cond = node.input(0), node.input(1)
        carried = node.inputs[2:]
        if any(c is None for c in carried):
            node.unsupported("omitted loop-carried value")
        shapes = [Shape("int64", ()), Shape("bool", ())] + [c.shape for c in carried]
        body = node.subgraph("body", shapes)
        inputs = [i for i in (m, cond) if i is not None] + list(carried)
        return {"has_max": m is not None, "has_cond": cond is not None,
                "carried": len(carried)}, inputs, [body]

    def shape(self, attrs, inputs, literals, module_inputs=()):
        body_out = module_inputs[0].output_shapes()
        n = attrs["carried"]
        first = int(attrs["has_max"]) + int(attrs["has_cond"])
        carried = [merge_shapes(s, b) for s, b in zip(inputs[first:], body_out[1:1 + n])]
        trips = None
        if attrs["has_max"] and not attrs["has_cond"] and literals[0] is not None:
            trips = scalar_int(literals[0])
        scans = [Shape(s.dtype, (trips, *s.lens)) for s in body_out[1 + n:]]
        return tuple_shape(*carried, *scans)

    def compute_modules(self, attrs, run_module, modules, *args, context=None):
        body = modules[0]
        args = list(args)
        max_trips = scalar_int(args.pop(0)) if attrs["has_max"] else None
        cond = truth(args.pop(0)) if attrs["has_cond"] else True
        values = args
        n = attrs["carried"]
        scan_shapes = body.output_shapes()[1 + n:]
        scans: list[list] = [[] for _ in scan_shapes]
        i = 0
        while cond and (max_trips is None or i < max_trips):
            outs = run_module(body, [np.array(i, dtype=np.int64), np.array(cond), *values])
            cond = truth(outs[0])
            values = list(outs[1:1 + n])
            for acc, piece in zip(scans, outs[1 + n:]):
                acc.append(piece if hasattr(piece, "shape") else np.asarray(piece))
            i += 1
        stacked = []
        for acc, s in zip(scans, scan_shapes):
            if acc:
                stacked.append(array_module(*acc).stack(acc))
            else:
                stacked.append(np.zeros((0, *[length or 0 for length in s.lens]), dtype=s.dtype))
        return tuple(values) + tuple(stacked)


def _stacking_axis(axis: int, piece: Shape) -> int:
    """A scan output's axis, non-negative: the outputs gain one axis, the one they are stacked on."""
    return axis + piece.ndim + 1 if axis < 0 else axis


@register_op
class Scan(Op):
    """ONNX Scan: inputs [states..., scanned...]; the body maps (states, one slice of each
    scanned input) to (new states, one slice of each scan output). The opset-8 form
    (``batched``) has a leading batch axis on everything, time on axis 1 of the scanned inputs,
    and optional per-batch sequence lengths as its first input (``has_lens``)."""

    name = "Scan"
    foldable = False

    def from_onnx(self, node):
        a = node.attrs
        n_scan = int(a["num_scan_inputs"])
        batched = node.opset < 9
        lens = node.input(0) if batched else None
        inputs = [i for i in (node.inputs[1:] if batched else node.inputs) if i is not None]
        n_state = len(inputs) - n_scan
        if batched:
            in_axes, skip = [0] * n_scan, 1
            directions = a.get("directions") or [0] * n_scan
        else:
            in_axes = [int(x) for x in a.get("scan_input_axes") or [0] * n_scan]
            in_axes = [x + inputs[n_state + k].shape.ndim if x < 0 else x for k, x in enumerate(in_axes)]
            skip, directions = 0, a.get("scan_input_directions") or [0] * n_scan
        states = [Shape(i.shape.dtype, i.shape.lens[skip:]) for i in inputs[:n_state]]
        slices = []
        for k, axis in enumerate(in_axes):
            s = inputs[n_state + k].shape
            lens_ = s.lens[skip:]
            slices.append(Shape(s.dtype, lens_[:axis] + lens_[axis + 1:]))
        body = node.subgraph("body", states + slices)
        n_out = len(body.output_shapes()) - n_state
        attrs = {"states": n_state, "input_axes": in_axes, "input_directions": [int(x) for x in directions],
                 "output_axes": [int(x) for x in a.get("scan_output_axes") or [0] * n_out],
                 "output_directions": [int(x) for x in a.get("scan_output_directions") or [0] * n_out],
                 "batched": batched, "has_lens": lens is not None}
        return attrs, ([lens] if lens is not None else []) + inputs, [body]

    def shape(self, attrs, inputs, literals, module_inputs=()):
        body_out = module_inputs[0].output_shapes()
        inputs = inputs[1:] if attrs.get("has_lens") else inputs
        n = attrs["states"]
        skip = 1 if attrs.get("batched") else 0
        first = inputs[n] if len(inputs) > n else None
        steps = first.lens[skip + attrs["input_axes"][0]] if first is not None else None
        outs = [merge_shapes(Shape(s.dtype, s.lens[skip:]), b) for s, b in zip(inputs[:n], body_out[:n])]
        for s, axis in zip(body_out[n:], attrs["output_axes"]):
            axis = _stacking_axis(axis, s)
            outs.append(Shape(s.dtype, s.lens[:axis] + (steps,) + s.lens[axis:]))
        if skip:
            batch = inputs[0].lens[0]
            outs = [Shape(o.dtype, (batch,) + o.lens) for o in outs]
        return tuple_shape(*outs)

    def compute_modules(self, attrs, run_module, modules, *args, context=None):
        if not attrs.get("batched"):
            return self.scan(attrs, run_module, modules[0], list(args))
        lens = args[0] if attrs["has_lens"] else None
        values = args[1:] if attrs["has_lens"] else args
        lens = None if lens is None else on_host(lens)
        per_batch = [self.scan(attrs, run_module, modules[0], [v[b] for v in values],
                               None if lens is None else int(lens[b])) for b in range(values[0].shape[0])]
        return tuple(array_module(*parts).stack(parts) for parts in zip(*per_batch))

    def scan(self, attrs, run_module, body, args, length=None):
        n = attrs["states"]
        states, scanned = list(args[:n]), args[n:]
        steps = scanned[0].shape[attrs["input_axes"][0]] if scanned else 0
        steps = steps if length is None else min(steps, length)
        pieces: list[list] = []
        for t in range(steps):
            slices = []
            for x, axis, reverse in zip(scanned, attrs["input_axes"], attrs["input_directions"]):
                slices.append(array_module(x).take(x, steps - 1 - t if reverse else t, axis=axis))
            outs = run_module(body, [*states, *slices])
            states = list(outs[:n])
            pieces.append([o if hasattr(o, "shape") else np.asarray(o) for o in outs[n:]])
        results = []
        body_out = body.output_shapes()[n:]
        for k, (axis, reverse) in enumerate(zip(attrs["output_axes"], attrs["output_directions"])):
            seq = [p[k] for p in pieces]
            if reverse:
                seq = seq[::-1]
            s = body_out[k]
            axis = _stacking_axis(axis, s)
            results.append(array_module(*seq).stack(seq, axis=axis) if seq else
                           np.zeros(s.lens[:axis] + (0,) + s.lens[axis:], dtype=s.dtype))
        return tuple(states) + tuple(results)
