"""The reference target: NumPy, plain and obviously correct; the definition of right.

It also compiles ``main`` of a multi-target program (the host orchestrator): its passes only
add the copies where ``main`` calls a root that takes device memory.
"""
from compiler.targets.base import Target

from .plan import Plan, reference_kernel


class RefTarget(Target):
    name = "ref"
    host = True

    def passes(self, options):
        from compiler.passes.boundary_copies import InsertBoundaryCopies
        from compiler.passes.dead_code_elimination import DeadCodeElimination
        return [InsertBoundaryCopies(self.name, options.offload_copy), DeadCodeElimination()]

    def lower(self, program, root, options, context):
        # Each instruction bound to its op's reference computation once; the interpreter
        # (``interpreter.evaluate``) is the same semantics without the preparation.
        return Plan(root, context, reference_kernel)

    def supports(self, ins) -> bool:
        from compiler.ops.registry import get_op, Op
        try:
            op = get_op(ins.op)
        except KeyError:
            return False
        return type(op).compute is not Op.compute or hasattr(op, "compute_modules")


def make_target() -> RefTarget:
    return RefTarget()
