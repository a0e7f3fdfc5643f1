"""The operator registry: one ``Op`` subclass per operator, each a shape rule plus a reference
computation (NumPy, plain and obviously correct: the definition of right for every target).

An op's ``shape`` sees the input shapes and, for inputs that are ``@literal``s, their values
(Reshape's target shape, Slice's starts, ...), so static shapes follow through the program.
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from compiler.ir.instruction import LITERAL, Instruction
from compiler.ir.shape import Shape, TupleShape

_REGISTRY: dict[str, "Op"] = {}


def is_device_array(value) -> bool:
    """Whether ``value`` is a device array (CuPy's): control flow on the gpu target runs the
    reference code over such values."""
    return type(value).__module__.startswith("cupy")


def _as_array(value):
    """``value`` as an ndarray; a device array stays one rather than being pulled to the host.
    Nearly every compute returns an ndarray: that is checked first (about 1 us a call less, for
    every op a cpu-target program computes)."""
    if type(value) is np.ndarray or is_device_array(value):
        return value
    return np.asarray(value)


def quiet_ieee():
    """A context in which NumPy does not warn about floating-point exceptions.

    They are IEEE arithmetic doing its job, as ONNX Runtime computes it silently: a sigmoid of
    -1000 is exp's inf turned into 0, T5's relative-position buckets take log(0) = -inf on a branch
    a Where then drops. A NaN or inf that reaches an output is the accuracy check's to report.
    Entered once per import, pass run, lowering and run (not per op: ~1 us each, 6-20 % of a
    small model's cpu-target inference)."""
    return np.errstate(all="ignore")


def _returns_arrays(fn):
    """Wrap a compute function so that it always gives ndarrays (NumPy ufuncs turn 0-d arrays
    into scalars), one or a tuple of them."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        if isinstance(out, (tuple, list)):
            return tuple(_as_array(o) for o in out)
        return _as_array(out)
    return wrapper


class Op:
    """Base class of every operator definition.

    ``name``: the IR op name (the ONNX op type for ONNX operators).
    ``pointwise``: the op maps elements independently with NumPy broadcasting (fusion candidate).
    """

    name: str = ""
    pointwise: bool = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for method in ("compute", "compute_modules"):
            if method in cls.__dict__:
                setattr(cls, method, _returns_arrays(cls.__dict__[method]))
    #: the ONNX domain of the operator ("" for ai.onnx)
    domain: str = ""

    def shape(self, attrs: dict[str, Any], inputs: Sequence[Shape],
              literals: Sequence[np.ndarray | None]) -> Shape | TupleShape:
        raise NotImplementedError(f"{self.name}: no shape rule")

    def compute(self, attrs: dict[str, Any], *args: np.ndarray):
        raise NotImplementedError(f"{self.name}: no reference computation")

    # ----- optional hooks (defaults suit most ops) ---------------------------------------------
    #: whether an instruction whose inputs are all literals may be evaluated ahead of time
    foldable: bool = True

    def static_value(self, attrs: dict[str, Any], inputs: Sequence[Shape]) -> np.ndarray | None:
        """The op's result when it follows from input *shapes* alone (Shape, Size), else None."""
        return None

    def from_onnx(self, node):
        """Normalise an ONNX node (``compiler.onnx.node.OnnxNode``) into ``(attrs, inputs)`` or
        ``(attrs, inputs, modules)``: defaults filled, constant optional inputs folded into
        attributes. The default keeps the node's attributes and present inputs as they are."""
        return dict(node.attrs), node.present_inputs()


def register_op(cls: type[Op]) -> type[Op]:
    """Class decorator: register one instance of ``cls`` under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    if cls.name in _REGISTRY:
        raise ValueError(f"operator {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls()
    return cls


def get_op(name: str) -> Op:
    _load_all()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no operator {name!r} in the registry") from None


def has_op(name: str) -> bool:
    _load_all()
    return name in _REGISTRY


def registered_ops() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


def compute_shape(op: str, attrs: dict, inputs: Sequence[Instruction], module_inputs=()) -> Shape | TupleShape:
    """The shape of ``op`` applied to ``inputs`` (used when an instruction is added)."""
    definition = get_op(op)
    shapes = [i.shape for i in inputs]
    literals = [i.value if i.op == LITERAL else None for i in inputs]
    if module_inputs:
        return definition.shape(attrs, shapes, literals, module_inputs=module_inputs)  # type: ignore[call-arg]
    return definition.shape(attrs, shapes, literals)


_loaded = False


def _load_all() -> None:
    # Importing the package imports every op module, which registers its op.
    global _loaded
    if not _loaded:
        _loaded = True
        import compiler.ops  # noqa: F401
