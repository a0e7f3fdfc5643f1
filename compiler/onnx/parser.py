"""ONNX model → ``Program``.

Initializers and ``Constant`` nodes become ``@literal``s; a node whose inputs are all literals
is evaluated now (so PyTorch's Shape→Gather→Concat→Reshape chains fold away); If/Loop bodies
become submodules that read outer values directly. Each op's ``from_onnx`` hook normalises its
attributes (defaults, explicit pads, non-negative axes, constant inputs as attributes).
"""
from __future__ import annotations

import math
import re
from functools import partial
from typing import Sequence

import numpy as np
import onnx

from compiler.errors import ModelLoadError, UnboundDimensionError, UnsupportedOperatorError
from compiler.ir import Program, Shape, TupleShape
from compiler.ir.instruction import LITERAL, Instruction
from compiler.ops.common import ValueNeeded
from compiler.ops.registry import get_op, has_op, quiet_ieee

from . import dims as dims_formula
from .contrib import EXPANSION_DOMAIN, EXPANSION_OPSET, expand_contrib_ops, refusal_key
from .load import default_opset, inline_functions, load_for_import, one_line, upgrade
from .node import OnnxNode, RunTimeValueNeeded, check_attributes, check_input_count
from .sequences import SEQUENCE_OPS, SequenceBuilder, SequenceValue, loops_to_scan_outputs
from .types import attribute_value, dtype_name, tensor_value

STANDARD_DOMAINS = ("", "ai.onnx")
# The most elements a graph input may declare (16 GiB of fp32): more is a broken or hostile model.
MAX_ELEMENTS = 2**32


def parse_onnx(model_or_path, batch_size: int | None = None,
               dims: dict[str, int] | None = None) -> Program:
    """Load an ONNX model into a ``Program``.

    ``batch_size`` binds every symbolic dimension that is the first dimension of a graph input
    (1 when not given); ``dims`` binds other symbolic dimensions by name, or one axis of one input
    as ``"input:axis"`` (which wins over the axis's name).
    """
    loaded = load_for_import(model_or_path)
    refused: dict = {}      # contrib nodes whose form is not expanded -> why
    model = loops_to_scan_outputs(upgrade(expand_contrib_ops(inline_functions(loaded.model), refused)))
    with quiet_ieee():  # constants are folded on import
        return GraphImporter(model, loaded.base_dir, batch_size, dims or {}, loaded.weights, refused).program


def _weight(tensor, weights: dict):
    """The value read in place for ``tensor``, an initializer whose raw data the loader took out
    (it has no data of its own left), else None."""
    if tensor.name not in weights or tensor.HasField("raw_data") or tensor.data_location:
        return None
    return weights[tensor.name]


class Scope(dict):
    """ONNX value names visible in a graph: its own, then its enclosing graphs'."""

    def __init__(self, parent: "Scope | None" = None):
        super().__init__()
        self.parent = parent

    def lookup(self, name: str) -> Instruction | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope:
                return scope[name]
            scope = scope.parent
        return None


class GraphImporter:
    def __init__(self, model: onnx.ModelProto, base_dir: str | None, batch_size: int | None,
                 dims: dict[str, int], weights: dict | None = None, refused: dict | None = None):
        self.model = model
        self.refused = refused or {}
        self.base_dir = base_dir
        self.opsets = {o.domain or "": o.version for o in model.opset_import}
        self.opset = default_opset(model)
        self.dims = dict(dims)
        self.batch_size = batch_size
        self.program = Program()
        self.program.name = model.graph.name
        graph = model.graph
        self._bind_batch_symbols(graph)
        scope = Scope()
        main = self.program.main
        self._add_initializers(graph, main, scope, weights)   # main-graph values read in place
        for value in graph.input:
            if value.name in scope:
                continue  # an input with an initializer is a constant
            scope[value.name] = main.add_parameter(value.name, self._value_shape(value))
        self._add_nodes(graph, main, scope)
        self._add_return(graph, main, scope)
        self.program.output_names = [o.name for o in graph.output]

    # ----- values -----------------------------------------------------------------------------
    def _bind_batch_symbols(self, graph) -> None:
        inits = {t.name for t in graph.initializer}
        for value in graph.input:
            if value.name in inits or not value.type.HasField("tensor_type"):
                continue
            dims = value.type.tensor_type.shape.dim
            if dims and unknown_length(dims[0]):
                self.dims.setdefault(dim_key(value.name, 0, dims[0], self.dims), self.batch_size or 1)

    def _value_shape(self, value, fallback: Shape | None = None) -> Shape:
        if not value.type.HasField("tensor_type"):
            kind = value.type.WhichOneof("value")
            raise UnsupportedOperatorError(f"{kind} value", value.name, "", self.opset,
                                           "only tensor values are supported")
        ttype = value.type.tensor_type
        try:
            dtype = dtype_name(ttype.elem_type)
        except ValueError as e:
            raise UnsupportedOperatorError("tensor type", value.name, "", self.opset, str(e)) from None
        if not ttype.HasField("shape"):
            if fallback is not None:
                return fallback
            raise ModelLoadError(f"input {value.name!r} has no shape; the model must give its rank")
        lens = []
        for k, d in enumerate(ttype.shape.dim):
            if d.HasField("dim_value") and d.dim_value < -1:
                raise ModelLoadError(f"input {value.name!r} dimension {k} is {d.dim_value}; a length "
                                     "cannot be negative")
            if not unknown_length(d):
                lens.append(d.dim_value)
            elif fallback is not None and k < fallback.ndim:
                lens.append(fallback.lens[k])
            else:
                key = dim_key(value.name, k, d, self.dims)
                if key not in self.dims:
                    self.dims[key] = self._derived_dim(value.name, k, key, key == d.dim_param)
                lens.append(self.dims[key])
        _check_size(value.name, lens)
        return Shape(dtype, lens)

    def _derived_dim(self, input_name: str, k: int, key: str, named: bool) -> int:
        """A symbolic dimension given as a formula of bound ones (``8*height``)."""
        value = dims_formula.evaluate(key, self.dims) if named else None
        if value is not None:
            return value
        names = [n for n in dims_formula.symbols(key) if n not in self.dims] if named else []
        raise UnboundDimensionError(f"input {input_name!r} dimension {k} is symbolic "
                                    f"({key if named else 'unnamed'})", names or [key])

    def _add_initializers(self, graph, module, scope: Scope, weights: dict | None = None) -> None:
        """``graph``'s initializers as literals; ``weights``: values the loader read in place."""
        for tensor in graph.initializer:
            try:
                value = _weight(tensor, weights) if weights else None
                value = tensor_value(tensor, self.base_dir) if value is None else value
            except ValueError as e:
                raise UnsupportedOperatorError("initializer", tensor.name, "", self.opset, str(e)) from None
            scope[tensor.name] = module.add_literal(value, name=tensor.name)
        for sparse in graph.sparse_initializer:
            raise UnsupportedOperatorError("sparse initializer", sparse.values.name, "", self.opset)

    def _add_return(self, graph, module, scope: Scope) -> None:
        outputs = []
        for value in graph.output:
            ins = scope.lookup(value.name)
            if ins is None:
                raise ModelLoadError(f"graph output {value.name!r} is produced by no node")
            if isinstance(ins, SequenceValue):
                raise UnsupportedOperatorError("sequence value", value.name, "", self.opset,
                                               "graph outputs must be tensors")
            outputs.append(ins)
        module.add_return(outputs)

    # ----- nodes ------------------------------------------------------------------------------
    def _add_nodes(self, graph, module, scope: Scope) -> None:
        for proto in graph.node:
            self._add_node(proto, module, scope)

    def _add_node(self, proto, module, scope: Scope) -> None:
        domain = proto.domain or ""
        opset = self.opsets.get(domain, self.opset)
        op_domain = "" if domain in STANDARD_DOMAINS else domain
        if domain == EXPANSION_DOMAIN:  # a contrib node's expansion: standard ops at its opset
            op_domain, opset = "", EXPANSION_OPSET
        if proto.op_type in SEQUENCE_OPS and op_domain == "":
            def unsupported(detail):
                raise UnsupportedOperatorError(proto.op_type, proto.name, proto.domain, opset, detail)
            SequenceBuilder(self, proto, module, scope, unsupported).build()
            return
        if not has_op(proto.op_type) or get_op(proto.op_type).domain != op_domain:
            raise UnsupportedOperatorError(proto.op_type, proto.name, proto.domain, opset,
                                           self.refused.get(refusal_key(proto), ""))
        inputs = []
        for name in proto.input:
            if not name:
                inputs.append(None)
                continue
            ins = scope.lookup(name)
            if ins is None:
                raise ModelLoadError(f"node {proto.name or proto.op_type!r} reads {name!r}, which "
                                     "no earlier node, input or initializer defines")
            if isinstance(ins, SequenceValue):
                raise UnsupportedOperatorError(proto.op_type, proto.name, proto.domain, opset,
                                               f"input {name!r} is a sequence")
            inputs.append(ins)
        try:
            attrs = {a.name: attribute_value(a) for a in proto.attribute}
        except ValueError as e:
            raise UnsupportedOperatorError(proto.op_type, proto.name, proto.domain, opset, str(e)) from None
        if proto.op_type == "If" and inputs and inputs[0] is not None and inputs[0].op == LITERAL:
            self._inline_branch(proto, attrs, bool(np.asarray(inputs[0].value).reshape(-1)[0]), module, scope)
            return
        check_input_count(proto, opset, inputs)
        check_attributes(proto, opset)
        node = OnnxNode(proto, attrs, inputs, opset, build_subgraph=partial(self.build_subgraph, module, scope),
                        build_stand_in=partial(self.build_stand_in, module))
        op = get_op(proto.op_type)
        try:
            normalised = op.from_onnx(node)
        except ValueNeeded as e:
            raise RunTimeValueNeeded(f"node {_label(proto)}: {one_line(e)}") from None
        except KeyError as e:
            raise ModelLoadError(f"node {_label(proto)}: missing attribute {e.args[0]!r}") from None
        except (ValueError, TypeError, IndexError) as e:
            raise ModelLoadError(f"node {_label(proto)}: {one_line(e)}") from None
        attrs, inputs = normalised[0], list(normalised[1])
        modules = list(normalised[2]) if len(normalised) > 2 else []
        name = proto.name or (proto.output[0] if proto.output else "")
        results = self._fold(op, attrs, inputs, modules, module, name)
        if results is None:
            try:
                ins = module.add_instruction(proto.op_type, inputs, attrs, modules, name=name)
            except ValueNeeded as e:
                raise RunTimeValueNeeded(f"node {_label(proto)}: {one_line(e)}") from None
            except (ValueError, KeyError, TypeError, IndexError) as e:
                raise ModelLoadError(f"node {_label(proto)}: {one_line(e)}") from None
            results = self._unpack(ins, node, module)
        for out, ins in zip(proto.output, results):
            if out and ins is not None:
                scope[out] = ins

    def _inline_branch(self, proto, attrs, cond: bool, module, scope: Scope) -> None:
        """An If whose condition is a constant is the branch it takes, built in place."""
        branch = attrs["then_branch" if cond else "else_branch"]
        inner = Scope(scope)
        self._add_initializers(branch, module, inner)
        self._add_nodes(branch, module, inner)
        for out, value in zip(proto.output, branch.output):
            if out:
                scope[out] = inner.lookup(value.name)

    def _fold(self, op, attrs, inputs, modules, module, name) -> list | None:
        """Evaluate the op now when everything it reads is known; None when it is not."""
        if modules or not op.foldable:
            return None
        shapes = [i.shape for i in inputs]
        static = op.static_value(attrs, shapes) if all(isinstance(s, Shape) for s in shapes) else None
        if static is not None:
            return [module.add_literal(static, name=name)]
        if not all(i.op == LITERAL for i in inputs):
            return None
        try:
            shape = module_shape(op, attrs, inputs)
            value = op.compute(attrs, *(i.value for i in inputs))
        except (ValueError, KeyError, TypeError, IndexError) as e:
            raise ModelLoadError(f"node {name!r} ({op.name}): {one_line(e)}") from None
        if isinstance(shape, TupleShape):
            return [module.add_literal(np.asarray(v).astype(s.dtype, copy=False), name=name)
                    for v, s in zip(value, shape.elements)]
        return [module.add_literal(np.asarray(value).astype(shape.dtype, copy=False), name=name)]

    def _unpack(self, ins: Instruction, node: OnnxNode, module) -> list:
        if not isinstance(ins.shape, TupleShape):
            return [ins]
        outs: list = []
        for index, out in enumerate(node.outputs):
            if not out or index >= len(ins.shape):
                outs.append(None)
                continue
            outs.append(module.add_instruction("get_tuple_elem", [ins], {"index": index}, name=out))
        return outs

    # ----- subgraphs --------------------------------------------------------------------------
    def _body_input_shape(self, value, given: Shape | None) -> Shape:
        """A body input's shape: what the graph declares, where it agrees with what the op
        passes in (``given``: a Loop's initial values, a Scan's slices)."""
        if given is None:
            return self._value_shape(value)
        ttype = value.type.tensor_type if value.type.HasField("tensor_type") else None
        if ttype is None or not ttype.HasField("shape"):
            return given
        return _merge(self._value_shape(value, given), given)

    def build_subgraph(self, outer_module, outer_scope: Scope, node: OnnxNode, graph,
                       param_shapes: Sequence | None):
        """``graph`` (an attribute of ``node``, which stands in ``outer_module``) as a new module
        whose reads of outer values resolve in ``outer_scope``."""
        stem = _module_stem(f"{outer_module.name}_{node.name or node.op_type}_{graph.name or 'body'}")
        before = set(self.program.modules)
        module = self.program.create_module(self.program.unique_module_name(stem))
        scope = Scope(outer_scope)
        try:
            self._add_initializers(graph, module, scope)
            for k, value in enumerate(graph.input):
                given = param_shapes[k] if param_shapes and k < len(param_shapes) else None
                scope[value.name] = module.add_parameter(value.name or f"p{k}", self._body_input_shape(value, given))
            self._add_nodes(graph, module, scope)
            self._add_return(graph, module, scope)
        except Exception:
            # A half-built body (and the bodies nested in it) must not stay in the program, where
            # it would be checked and lowered; an op may build another form in its place.
            for name in set(self.program.modules) - before:
                del self.program.modules[name]
            raise
        return module

    def build_stand_in(self, outer_module, node: OnnxNode, attr: str, reason: str, shapes: Sequence[Shape]):
        """A module standing in for ``node``'s subgraph ``attr``, which cannot be built for the
        shapes being compiled: it returns results of ``shapes`` and running it raises ``reason``."""
        module = self.program.create_module(self.program.unique_module_name(
            _module_stem(f"{outer_module.name}_{node.name or node.op_type}_{attr}_unbuildable")))
        message = (f"node {_label(node.proto)}: its {attr} cannot run on inputs of the shapes the "
                   f"program was compiled for: {reason}")
        module.add_return([module.add_instruction("unreachable_branch", [], {
            "message": message, "dtype": s.dtype, "lens": [-1 if n is None else n for n in s.lens]})
            for s in shapes])
        return module


def unknown_length(dim) -> bool:
    """No length given: a symbolic name, nothing at all, or the -1 some exporters (Paddle) write."""
    return not dim.HasField("dim_value") or dim.dim_value == -1


def dim_key(input_name: str, k: int, dim, bound=()) -> str:
    """The name that binds an unknown length: ``input:axis`` when ``bound`` binds that, else its
    symbol, else ``input:axis``. A symbol with no letter or digit in it is a placeholder, not a
    name: Paddle writes ``?`` for every unknown axis (height and width alike), which must not force
    them to one length."""
    axis = f"{input_name}:{k}"
    if axis not in bound and re.search(r"[A-Za-z0-9]", dim.dim_param):
        return dim.dim_param
    return axis


def _check_size(name: str, lens: list) -> None:
    """A declared shape no tensor could have is refused here, before anything allocates it."""
    count = math.prod(n for n in lens if n is not None)
    if count > MAX_ELEMENTS:
        raise ModelLoadError(f"input {name!r} has shape {lens}: {count} elements, more than the "
                             f"{MAX_ELEMENTS} (2**{MAX_ELEMENTS.bit_length() - 1}) a tensor may hold")


def module_shape(op, attrs, inputs):
    """The shape ``op`` gives for ``inputs`` (instructions)."""
    literals = [i.value if i.op == LITERAL else None for i in inputs]
    return op.shape(attrs, [i.shape for i in inputs], literals)


def _merge(declared: Shape, given: Shape) -> Shape:
    """A loop-carried value's shape: the declared one where it agrees with the initial value."""
    if declared.ndim != given.ndim:
        return given
    return Shape(given.dtype, [a if a == b else None for a, b in zip(declared.lens, given.lens)])


def _module_stem(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def _label(proto) -> str:
    return f"{proto.name!r} ({proto.op_type})" if proto.name else proto.op_type


__all__ = ["parse_onnx", "GraphImporter"]
