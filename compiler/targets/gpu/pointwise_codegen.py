"""CUDA source for a ``fused_pointwise`` body: one statement per step, one thread per element.

The source is plain text built here without CuPy, so its generation is tested on any machine;
``kernels.pointwise`` compiles it (CuPy ``ElementwiseKernel``, cached by source hash).

Half-precision values are widened to ``float`` for arithmetic and narrowed once at the store, so a
fused chain rounds to fp16 only where the stored result must.
"""
from __future__ import annotations

import math

# NumPy dtype name -> C type CuPy kernels know, and the type arithmetic happens in.
C_TYPE = {"float16": "float16", "float32": "float", "float64": "double", "int8": "signed char",
          "int16": "short", "int32": "int", "int64": "long long", "uint8": "unsigned char",
          "uint16": "unsigned short", "uint32": "unsigned int", "uint64": "unsigned long long",
          "bool": "bool"}
COMPUTE_TYPE = {**C_TYPE, "float16": "float"}


class UnsupportedPointwise(Exception):
    pass


def _is_float(dtype: str) -> bool:
    return dtype.startswith("float")


def _literal(dtype: str, value) -> str:
    ctype = COMPUTE_TYPE[dtype]
    if dtype == "bool":
        return "true" if value else "false"
    if _is_float(dtype):
        return f"(({ctype}){float(value)!r})"
    return f"(({ctype}){int(value)}{'ull' if dtype.startswith('uint') else 'll'})"


def _f(x: float) -> str:
    """A float constant in the step's compute type (written as double, narrowed by C)."""
    if math.isinf(x):
        return "(1.0/0.0)" if x > 0 else "(-1.0/0.0)"
    return repr(float(x))


def _arithmetic(op: str, attrs: dict, a: list[str], dtype: str, in_dtypes: list[str]) -> str | None:
    """Arithmetic and NaN-propagating Min/Max, or None for another op."""
    t = COMPUTE_TYPE[dtype]
    fl = _is_float(dtype)
    x = a[0] if a else None
    if op in ("Identity", "Dropout"):
        return x
    if op == "Add":
        return f"({a[0]} + {a[1]})"
    if op == "Sub":
        return f"({a[0]} - {a[1]})"
    if op == "Mul":
        return f"({a[0]} * {a[1]})"
    if op == "Div":
        if fl:
            return f"({a[0]} / {a[1]})"
        return f"({t})({a[0]} / {a[1]})"
    if op == "Mod":
        if fl:
            r = f"({t})fmod(({t}){a[0]}, ({t}){a[1]})"
            if attrs.get("fmod", 0):
                return r
            # fmod=0 on floats is NumPy's mod: a non-zero remainder takes the divisor's sign.
            return f"(({r}) != 0 && (({r}) < 0) != ((({t}){a[1]}) < 0) ? ({t})(({r}) + ({t}){a[1]}) : ({r}))"
        if attrs.get("fmod", 0):
            return f"({t})({a[0]} % {a[1]})"
        return f"({t})((({a[0]} % {a[1]}) + {a[1]}) % {a[1]})"
    if op == "Pow":
        if fl:
            return f"({t})pow(({t}){a[0]}, ({t}){a[1]})"
        return f"({t})pow((double){a[0]}, (double){a[1]})"
    if op == "Sum":
        return "(" + " + ".join(a) + ")"
    if op == "Mean":
        return "((" + " + ".join(a) + f") / ({t}){len(a)})"
    if op in ("Min", "Max"):
        cmp = "<" if op == "Min" else ">"
        out = a[0]
        for b in a[1:]:
            # x != x is NaN: it propagates, as in NumPy's minimum/maximum.
            out = (f"(({out}) != ({out}) ? ({t})({out}) : (({b}) != ({b}) ? ({t})({b}) : "
                   f"(({out}) {cmp} ({b}) ? ({t})({out}) : ({t})({b}))))")
        return out
    return None


def _activation(op: str, attrs: dict, a: list[str], dtype: str, in_dtypes: list[str]) -> str | None:
    """Activations (ReLU family, sigmoid-like, Softplus, GELU, Clip, Swish, Shrink), or None."""
    t = COMPUTE_TYPE[dtype]
    fl = _is_float(dtype)
    x = a[0] if a else None
    if op == "Relu":
        return f"({x} > ({t})0 ? {x} : ({t})0)" if not fl else f"({x} < 0 ? ({t})0 : {x})"
    if op == "LeakyRelu":
        alpha = attrs.get("alpha", 0.01)
        return f"({x} >= 0 ? {x} : ({t}){_f(alpha)} * {x})"
    if op == "PRelu":
        return f"({a[0]} < 0 ? {a[1]} * {a[0]} : {a[0]})"
    if op == "Elu":
        alpha = attrs.get("alpha", 1.0)
        return f"({x} >= 0 ? {x} : ({t}){_f(alpha)} * (exp({x}) - ({t})1))"
    if op == "Selu":
        alpha = attrs.get("alpha", 1.67326319217681884765625)
        gamma = attrs.get("gamma", 1.05070102214813232421875)
        return f"(({t}){_f(gamma)} * ({x} > 0 ? {x} : ({t}){_f(alpha)} * (exp({x}) - ({t})1)))"
    if op == "Celu":
        alpha = attrs.get("alpha", 1.0)
        return (f"(max(({t})0, {x}) + min(({t})0, ({t}){_f(alpha)} * "
                f"(exp({x} / ({t}){_f(alpha)}) - ({t})1)))")
    if op == "ThresholdedRelu":
        alpha = attrs.get("alpha", 1.0)
        return f"({x} > ({t}){_f(alpha)} ? {x} : ({t})0)"
    if op == "Sigmoid":
        return f"(({t})1 / (({t})1 + exp(-{x})))"
    if op == "HardSigmoid":
        alpha, beta = attrs.get("alpha", 0.2), attrs.get("beta", 0.5)
        return f"max(({t})0, min(({t})1, ({t}){_f(alpha)} * {x} + ({t}){_f(beta)}))"
    if op == "HardSwish":
        return f"({x} * max(({t})0, min(({t})1, {x} / ({t})6 + ({t})0.5)))"
    if op == "Softplus":
        # max(x, 0) + log1p(exp(-|x|)): log1p(exp(x)) overflows to inf above x ~ 89 in fp32.
        if fl:
            return f"(max({x}, ({t})0) + log1p(exp(-fabs({x}))))"
        return f"({t})log1p(exp((double){x}))"
    if op == "Softsign":
        return f"({x} / (({t})1 + fabs({x})))"
    if op == "Mish":
        return f"({x} * tanh(log1p(exp({x}))))"
    if op == "Gelu":
        if attrs.get("approximate", "none") == "tanh":
            return (f"(({t})0.5 * {x} * (({t})1 + tanh(({t})0.7978845608028654 * "
                    f"({x} + ({t})0.044715 * {x} * {x} * {x}))))")
        return f"(({t})0.5 * {x} * (({t})1 + erf({x} * ({t})0.7071067811865476)))"
    if op == "Clip":
        # Bounds are attributes, or run-time inputs listed in attrs["dynamic"] (in order).
        bounds = {"min": attrs.get("min"), "max": attrs.get("max")}
        for name, arg in zip(attrs.get("dynamic", ()), a[1:]):
            bounds[name] = arg
        out = x
        for name, fn in (("min", "max"), ("max", "min")):
            b = bounds[name]
            if b is None:
                continue
            if not isinstance(b, str):
                b = _f(b) if fl else str(int(b))
            out = f"{fn}(({t}){out}, ({t}){b})"
        return out
    if op == "Swish":
        alpha = attrs.get("alpha", 1.0)
        return f"({x} / (({t})1 + exp(-({t}){_f(alpha)} * {x})))"
    if op == "Shrink":
        lambd, bias = attrs.get("lambd", 0.5), attrs.get("bias", 0.0)
        return (f"({x} < -({t}){_f(lambd)} ? ({t})({x} + ({t}){_f(bias)}) : "
                f"({x} > ({t}){_f(lambd)} ? ({t})({x} - ({t}){_f(bias)}) : ({t})0))")
    return None


def _math(op: str, attrs: dict, a: list[str], dtype: str, in_dtypes: list[str]) -> str | None:
    """Unary math functions, rounding, sign, reciprocal, or None."""
    t = COMPUTE_TYPE[dtype]
    fl = _is_float(dtype)
    x = a[0] if a else None
    if op in ("Tanh", "Exp", "Log", "Sqrt", "Erf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
              "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Floor", "Ceil"):
        fn = op.lower()
        return f"{fn}({x})" if fl else f"({t}){fn}((double){x})"
    if op == "Round":
        return f"rint({x})" if fl else x
    if op == "Neg":
        return f"(-{x})"
    if op == "Abs":
        return f"fabs({x})" if fl else f"({x} < 0 ? ({t})(-{x}) : {x})"
    if op == "Sign":
        return f"({t})(({x} > 0) - ({x} < 0))"
    if op == "Reciprocal":
        return f"(({t})1 / {x})"
    return None


# Two-operand ops written as one C operator: comparisons and logic (bool results), and the
# bitwise ones (cast back to the operands' type, as C promotes them to int).
_INFIX = {"Equal": "==", "Less": "<", "Greater": ">", "LessOrEqual": "<=", "GreaterOrEqual": ">=",
          "And": "&&", "Or": "||"}
_BITWISE = {"BitwiseAnd": "&", "BitwiseOr": "|", "BitwiseXor": "^"}


def _logic(op: str, attrs: dict, a: list[str], dtype: str, in_dtypes: list[str]) -> str | None:
    """Where, comparisons, logical and bitwise ops, NaN/Inf tests, Cast, or None."""
    t = COMPUTE_TYPE[dtype]
    fl = _is_float(dtype)
    x = a[0] if a else None
    if op == "Where":
        return f"({a[0]} ? ({t}){a[1]} : ({t}){a[2]})"
    if op in _INFIX:
        return f"({a[0]} {_INFIX[op]} {a[1]})"
    if op in _BITWISE:
        return f"({t})({a[0]} {_BITWISE[op]} {a[1]})"
    if op == "Not":
        return f"(!{x})"
    if op == "Xor":
        return f"(({a[0]} != 0) != ({a[1]} != 0))"
    if op == "BitwiseNot":
        return f"({t})(~{x})"
    if op == "IsNaN":
        return f"isnan((double){x})" if _is_float(in_dtypes[0]) else "false"
    if op == "IsInf":
        pos, neg = attrs.get("detect_positive", 1), attrs.get("detect_negative", 1)
        if not _is_float(in_dtypes[0]):
            return "false"
        parts = []
        if pos:
            parts.append(f"(isinf((double){x}) && {x} > 0)")
        if neg:
            parts.append(f"(isinf((double){x}) && {x} < 0)")
        return "(" + (" || ".join(parts) or "false") + ")"
    if op in ("Cast", "CastLike"):
        if dtype == "bool":
            return f"({x} != 0)"
        if not fl and _is_float(in_dtypes[0]):
            # float -> int truncates toward zero, as NumPy's astype does
            return f"({t})({x})"
        return f"({t})({x})"
    return None


def _expr(op: str, attrs: dict, a: list[str], dtype: str, in_dtypes: list[str]) -> str:
    """C expression of one elementwise op over already-typed operands ``a``."""
    for family in (_arithmetic, _activation, _math, _logic):
        out = family(op, attrs, a, dtype, in_dtypes)
        if out is not None:
            return out
    raise UnsupportedPointwise(op)


def generate(body: list[dict], in_dtypes: list[str], name: str = "fused") -> tuple[str, str, str]:
    """(in_params, out_params, operation) for ``cupy.ElementwiseKernel``."""
    for d in in_dtypes:
        if d not in C_TYPE:
            raise UnsupportedPointwise(f"dtype {d}")
    in_params = ", ".join(f"{'float16' if d == 'float16' else d} x{i}" for i, d in enumerate(in_dtypes))
    out_dtype = body[-1]["dtype"]
    out_params = f"{out_dtype} out"
    lines: list[str] = []
    dtypes_of: dict[str, str] = {}

    def operand(arg: str) -> tuple[str, str]:
        if arg.startswith("x"):
            d = in_dtypes[int(arg[1:])]
            return (f"(({COMPUTE_TYPE[d]}){arg})" if d == "float16" else arg), d
        if arg.startswith("t"):
            return arg, dtypes_of[arg]
        dtype, text = arg[1:].split(":", 1)
        return _literal(dtype, eval(text, {"__builtins__": {}}, {"True": True, "False": False})), dtype

    for j, step in enumerate(body):
        ops = [operand(a) for a in step["args"]]
        expr = _expr(step["op"], step["attrs"], [o[0] for o in ops], step["dtype"], [o[1] for o in ops])
        name_j = f"t{j}"
        dtypes_of[name_j] = step["dtype"]
        lines.append(f"{COMPUTE_TYPE[step['dtype']]} {name_j} = ({COMPUTE_TYPE[step['dtype']]})({expr});")
    last = f"t{len(body) - 1}"
    lines.append(f"out = ({C_TYPE[out_dtype]})({last});")
    return in_params, out_params, "\n".join(lines)
