"""If and Loop: ops that run submodules. Bodies read outer values directly; their parameters
are the ONNX graph inputs (Loop: iteration number, condition, loop-carried values)."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape, TupleShape

from .common import ValueNeeded, tuple_shape
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
        then = node.subgraph("then_branch")
        other = node.subgraph("else_branch")
        return {}, node.present_inputs(), [then, other]

    def shape(self, attrs, inputs, literals, module_inputs=()):
        then, other = (m.output_shapes() for m in module_inputs)
        if len(then) != len(other):
            raise ValueError("If branches return different numbers of results")
        return TupleShape(tuple(merge_shapes(a, b) for a, b in zip(then, other)))

    def compute_modules(self, attrs, run_module, modules, cond, context=None):
        branch = modules[0] if bool(np.asarray(cond).reshape(-1)[0]) else modules[1]
        return tuple(run_module(branch, []))


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
            trips = int(np.asarray(literals[0]).reshape(-1)[0])
        scans = [Shape(s.dtype, (trips, *s.lens)) for s in body_out[1 + n:]]
        return tuple_shape(*carried, *scans)

    def compute_modules(self, attrs, run_module, modules, *args, context=None):
        body = modules[0]
        args = list(args)
        max_trips = int(np.asarray(args.pop(0)).reshape(-1)[0]) if attrs["has_max"] else None
        cond = bool(np.asarray(args.pop(0)).reshape(-1)[0]) if attrs["has_cond"] else True
        values = args
        n = attrs["carried"]
        scan_shapes = body.output_shapes()[1 + n:]
        scans: list[list] = [[] for _ in scan_shapes]
        i = 0
        while cond and (max_trips is None or i < max_trips):
            outs = run_module(body, [np.array(i, dtype=np.int64), np.array(cond), *values])
            cond = bool(np.asarray(outs[0]).reshape(-1)[0])
            values = list(outs[1:1 + n])
            for acc, piece in zip(scans, outs[1 + n:]):
                acc.append(np.asarray(piece))
            i += 1
        stacked = []
        for acc, s in zip(scans, scan_shapes):
            if acc:
                stacked.append(np.stack(acc))
            else:
                stacked.append(np.zeros((0, *[n or 0 for n in s.lens]), dtype=s.dtype))
        return tuple(values) + tuple(stacked)


@register_op
class Scan(Op):
    """ONNX Scan (opset 9+): inputs [states..., scanned...]; the body maps (states, one slice of
    each scanned input) to (new states, one slice of each scan output)."""

    name = "Scan"
    foldable = False

    def from_onnx(self, node):
        a = node.attrs
        n_scan = int(a["num_scan_inputs"])
        inputs = node.present_inputs()
        n_state = len(inputs) - n_scan
        in_axes = [int(x) for x in a.get("scan_input_axes") or [0] * n_scan]
        in_axes = [x + inputs[n_state + k].shape.ndim if x < 0 else x for k, x in enumerate(in_axes)]
        slices = []
        for k, axis in enumerate(in_axes):
            s = inputs[n_state + k].shape
            slices.append(Shape(s.dtype, s.lens[:axis] + s.lens[axis + 1:]))
        body = node.subgraph("body", [i.shape for i in inputs[:n_state]] + slices)
        n_out = len(body.output_shapes()) - n_state
        return {"states": n_state, "input_axes": in_axes,
                "input_directions": [int(x) for x in a.get("scan_input_directions") or [0] * n_scan],
                "output_axes": [int(x) for x in a.get("scan_output_axes") or [0] * n_out],
                "output_directions": [int(x) for x in a.get("scan_output_directions") or [0] * n_out]}, inputs, [body]

    def shape(self, attrs, inputs, literals, module_inputs=()):
        body_out = module_inputs[0].output_shapes()
        n = attrs["states"]
        first = inputs[n] if len(inputs) > n else None
        steps = first.lens[attrs["input_axes"][0]] if first is not None else None
        outs = [merge_shapes(s, b) for s, b in zip(inputs[:n], body_out[:n])]
        for s, axis in zip(body_out[n:], attrs["output_axes"]):
            axis = axis + s.ndim + 1 if axis < 0 else axis
            outs.append(Shape(s.dtype, s.lens[:axis] + (steps,) + s.lens[axis:]))
        return tuple_shape(*outs)

    def compute_modules(self, attrs, run_module, modules, *args, context=None):
        n = attrs["states"]
        states, scanned = list(args[:n]), args[n:]
        steps = scanned[0].shape[attrs["input_axes"][0]] if scanned else 0
        pieces: list[list] = []
        for t in range(steps):
            slices = []
            for x, axis, reverse in zip(scanned, attrs["input_axes"], attrs["input_directions"]):
                slices.append(np.take(x, steps - 1 - t if reverse else t, axis=axis))
            outs = run_module(modules[0], [*states, *slices])
            states = list(outs[:n])
            pieces.append([np.asarray(o) for o in outs[n:]])
        results = []
        body_out = modules[0].output_shapes()[n:]
        for k, (axis, reverse) in enumerate(zip(attrs["output_axes"], attrs["output_directions"])):
            seq = [p[k] for p in pieces]
            if reverse:
                seq = seq[::-1]
            s = body_out[k]
            axis = axis + s.ndim + 1 if axis < 0 else axis
            results.append(np.stack(seq, axis=axis) if seq else
                           np.zeros(s.lens[:axis] + (0,) + s.lens[axis:], dtype=s.dtype))
        return tuple(states) + tuple(results)
