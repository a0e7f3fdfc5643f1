"""The CPU target: host memory, fast NumPy/BLAS kernels (im2col convolution, fused epilogues),
the reference computation for everything else."""
from compiler.targets.base import Target

from .plan import CpuPlan
from .threads import single_threaded_blas


class CpuTarget(Target):
    name = "cpu"
    host = True

    def passes(self, options):
        from compiler.passes.pipelines import host_passes

        from .fuse import cpu_rewrites
        return host_passes(self.name, options, extra=cpu_rewrites())

    def lower(self, program, root, options, context):
        from .kernels import pick_kernel
        return CpuRoot(CpuPlan(root, context, pick_kernel))

    def supports(self, ins) -> bool:
        from compiler.targets.base import get_target
        return get_target("ref").supports(ins)


class CpuRoot:
    """A lowered cpu root: its plan, run with BLAS single-threaded (the kernels split the work
    over the target's own threads; see ``threads``)."""

    def __init__(self, plan: CpuPlan):
        self.plan = plan

    def run(self, args):
        with single_threaded_blas():
            return self.plan.run(args)


def make_target() -> CpuTarget:
    return CpuTarget()
