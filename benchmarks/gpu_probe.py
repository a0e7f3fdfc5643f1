"""Print what the GPU machine offers the gpu target (CuPy, cuDNN frontend) and try one conv."""
import sys
import time

import numpy as np

sys.path.insert(0, "tests")


def main():
    import cupy
    print("cupy", cupy.__version__, "device", cupy.cuda.runtime.getDeviceProperties(0)["name"])
    from compiler.targets.gpu.kernels import conv as convk
    cudnn = convk.cudnn_module()
    print("cudnn frontend:", None if cudnn is None else cudnn.backend_version())
    import compiler
    from gpu_cases import build, feeds_for
    for name in ("conv3x3", "conv_grouped", "conv_depthwise"):
        p = compiler.parse_onnx(build(name)).compile("gpu")
        root = p.compiled.context.roots["main"]
        paths = [getattr(fn, "path", "") for _ins, fn, _i, _d in root.body.steps]
        print(name, [x for x in paths if x])
    print("cudnn failures:", convk.failures[:5])


if __name__ == "__main__":
    t = time.time()
    main()
    print(f"probe {time.time() - t:.1f}s")
