"""Errors the compiler reports to its users.

Every error a user can cause (a bad model, a bad feed, an operator we do not support) derives from
``UserError`` (defined in ``common.errors``, which the bot shares; re-exported here) so that
front ends (the ``perfbot`` CLI) can print its one-line message and exit 2 instead of showing a
traceback.
"""

from common.errors import UserError

__all__ = ["UserError", "ModelLoadError", "UnboundDimensionError", "UnsupportedOperatorError",
           "FeedError", "CompileError"]


class ModelLoadError(UserError):
    """The model file is missing, truncated or not a valid ONNX model."""


class UnboundDimensionError(ModelLoadError):
    """A symbolic input dimension the caller gave no size for. ``subject`` says which one;
    ``names`` are the dimension names to give, through ``dims`` (the message says so) or a front
    end's own option."""

    def __init__(self, subject: str, names: list[str]):
        wanted = ", ".join(f"{n!r}: N" for n in names)
        super().__init__(f"{subject}; give its value (dims={{{wanted}}})")
        self.subject, self.names = subject, names


class UnsupportedOperatorError(UserError):
    """An ONNX node whose operator (or operator form) the compiler does not implement."""

    def __init__(self, op_type: str, node_name: str, domain: str, opset: int, detail: str = ""):
        self.op_type, self.node_name, self.domain, self.opset = op_type, node_name, domain, opset
        if op_type[:1].islower():
            # Not an operator but a kind of value ("tensor type", "initializer", "sequence
            # value"): name the value, not a node it is not.
            msg = f"unsupported {op_type} of value {node_name!r} (opset {opset})"
        else:
            where = f"node {node_name!r}" if node_name else "an unnamed node"
            dom = domain or "ai.onnx"
            msg = f"unsupported operator {op_type} (domain {dom}, opset {opset}) at {where}"
        super().__init__(f"{msg}: {detail}" if detail else msg)


class FeedError(UserError):
    """Inputs passed to ``Program.run`` do not match the program's parameters."""


class BranchNotBuiltError(FeedError):
    """An If took the branch that could not be built for the compiled input shapes: which branch
    runs depends on the inputs' values (a sample rate, a mode flag)."""


class CompileError(UserError):
    """The program cannot be compiled as asked (bad target name, bad assignment, ...)."""
