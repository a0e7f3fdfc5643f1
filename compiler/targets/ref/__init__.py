"""The reference target: NumPy, plain and obviously correct; the definition of right."""
from compiler.targets.base import Target

from .interpreter import Interpreter


class RefTarget(Target):
    name = "ref"
    host = True

    def passes(self, options):
        return []

    def lower(self, program, root, options, context):
        return Interpreter(root, context)


def make_target() -> RefTarget:
    return RefTarget()
