"""The gpu target's options: one frozen object, the only reader of ``PERFBOT_GPU_*`` variables.

``GpuOptions.of(compile_options)`` builds it from a compile's options (the pass list and each
root's lowering ask for it; ``Lowering.options`` holds it, every lowering reads it from there;
``program.compile("gpu", gpu_options=GpuOptions(...))`` hands one in whole, as tests do);
code outside a compile (the finder, the doctor, ``backend.load``) asks ``from_environment()``.
Every field is documented in the class docstring and in the README's configuration table;
``SWITCHES`` gives each variable's meaning to ``perfbot doctor``. The whole object is part of
the keys of kept cuDNN plans and path choices, so a plan made under other settings is never
taken for one made under these.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, replace

PREFIX = "PERFBOT_GPU_"
FP32_CONV_PATHS = ("auto", "split-cudnn", "split-gemm", "grouped", "gemm", "cudnn")

# variable -> (field, meaning): the variables the target reads, what ``perfbot doctor`` lists.
SWITCHES = {
    "PERFBOT_GPU_CACHE": ("cache_dir", "folder of built cuDNN plans and convolution choices"),
    "PERFBOT_GPU_PLAN_CACHE": ("plan_cache", "0: no built cuDNN plans kept on disk"),
    "PERFBOT_GPU_FP32_SPLIT": ("fp32_split", "0: fp32 convolutions and large products in exact fp32 arithmetic"),
    "PERFBOT_GPU_FP32_CONV": ("fp32_conv",
                              "one fp32 convolution path forced (split-cudnn|split-gemm|grouped|gemm|cudnn)"),
    "PERFBOT_GPU_AUTOTUNE": ("autotune", "1: cuDNN plans timed instead of the heuristic's first"),
    "PERFBOT_GPU_AUTOTUNE_PLANS": ("autotune_plans", "how many cuDNN plans are timed when autotuning"),
    "PERFBOT_GPU_TF32": ("tf32", "1: cuDNN may use TF32 in exact-path fp32 convolutions"),
    "PERFBOT_GPU_GRAPHS": ("graphs", "0: no CUDA-graph replay (the default of the cuda_graphs option)"),
    "PERFBOT_GPU_HIDE": ("hide", "libraries hidden from the finder (frontend, cudnn, cublas, cublaslt)"),
    "PERFBOT_GPU_EMULATE": ("emulate", "1: NumPy stands in for CuPy (tests of the plumbing)"),
}
HIDE_ENV = "PERFBOT_GPU_HIDE"


@dataclass(frozen=True)
class GpuOptions:
    """How the gpu target compiles and runs; each field with its variable:

    - ``cache_dir`` (PERFBOT_GPU_CACHE): folder of kept cuDNN plans (convolutions and attention)
      and convolution path choices;
      "" means the user cache folder.
    - ``plan_cache`` (PERFBOT_GPU_PLAN_CACHE=0 turns off): built cuDNN plans kept on disk.
    - ``fp32_split`` (PERFBOT_GPU_FP32_SPLIT=0 turns off): fp32 convolutions and large products
      may run as split-bf16 (three bf16 products, fp32 sums); off, every fp32 product is exact.
    - ``fp32_conv`` (PERFBOT_GPU_FP32_CONV): "auto" times the eligible fp32 convolution paths;
      split-cudnn, split-gemm, grouped, gemm or cudnn forces one (where it takes the convolution).
    - ``autotune`` (PERFBOT_GPU_AUTOTUNE=1): cuDNN plans timed instead of the heuristic's first.
    - ``autotune_plans`` (PERFBOT_GPU_AUTOTUNE_PLANS): how many plans are timed; 0 means 8 for
      fp32 and 4 otherwise.
    - ``tf32`` (PERFBOT_GPU_TF32=1): cuDNN may use TF32 in exact-path fp32 convolutions.
    - ``graphs`` (compile option ``cuda_graphs``, whose default PERFBOT_GPU_GRAPHS=0 turns off):
      CUDA-graph replay of a root from its third run on.
    - ``hide`` (PERFBOT_GPU_HIDE=frontend,cudnn,...): libraries the finder treats as missing
      (the doctor's check of the fallback paths; hidden cuDNN runs convolutions as im2col + GEMM).
    - ``emulate`` (PERFBOT_GPU_EMULATE=1): NumPy stands in for CuPy (tests without a GPU).
    """
    cache_dir: str = ""
    plan_cache: bool = True
    fp32_split: bool = True
    fp32_conv: str = "auto"
    autotune: bool = False
    autotune_plans: int = 0
    tf32: bool = False
    graphs: bool = True
    hide: tuple = ()
    emulate: bool = False

    @classmethod
    def from_environment(cls, environ=None) -> "GpuOptions":
        """The options the ``PERFBOT_GPU_*`` variables of ``environ`` (the process's) give."""
        env = os.environ if environ is None else environ
        return cls(cache_dir=env.get("PERFBOT_GPU_CACHE", ""),
                   plan_cache=env.get("PERFBOT_GPU_PLAN_CACHE", "1") != "0",
                   fp32_split=env.get("PERFBOT_GPU_FP32_SPLIT", "1") != "0",
                   fp32_conv=env.get("PERFBOT_GPU_FP32_CONV", "auto"),
                   autotune=env.get("PERFBOT_GPU_AUTOTUNE", "0") == "1",
                   autotune_plans=int(env.get("PERFBOT_GPU_AUTOTUNE_PLANS") or 0),
                   tf32=env.get("PERFBOT_GPU_TF32") == "1",
                   graphs=env.get("PERFBOT_GPU_GRAPHS", "1") != "0",
                   hide=hidden_names(env.get(HIDE_ENV, "")),
                   emulate=env.get("PERFBOT_GPU_EMULATE") == "1")

    @classmethod
    def of(cls, compile_options, environ=None) -> "GpuOptions":
        """The options of one compile: the compile option ``gpu_options`` (a ``GpuOptions``) when
        given, else the environment's; the compile option ``cuda_graphs`` (when given) decides
        graph replay."""
        extra = getattr(compile_options, "extra", None) or {}
        given = extra.get("gpu_options")
        opts = given if isinstance(given, cls) else cls.from_environment(environ)
        if "cuda_graphs" in extra:
            opts = replace(opts, graphs=bool(extra["cuda_graphs"]))
        return opts

    def candidates(self, dtype: str) -> int:
        """How many of the heuristics' best-ranked cuDNN plans are timed when autotuning: more for
        fp32, where the first ones are often tensor-core (TF32) plans that the gate turns down."""
        return self.autotune_plans or (8 if dtype == "float32" else 4)

    def key(self) -> str:
        """The options as text, for the keys of kept plans and choices (every field: a setting
        that does not change a plan costs at most a rebuild)."""
        return "|".join(f"{k}={v}" for k, v in sorted(asdict(self).items()))


def hidden_names(text: str) -> tuple:
    """PERFBOT_GPU_HIDE's names, lower case, sorted; hiding cuDNN hides the frontend too (it needs it)."""
    names = {n.strip().lower() for n in text.split(",") if n.strip()}
    return tuple(sorted(names | ({"frontend"} if "cudnn" in names else set())))


def set_switches(environ=None) -> tuple[dict, list]:
    """({variable: value} of the target's variables that are set, [PERFBOT_GPU_* names nothing reads])."""
    env = os.environ if environ is None else environ
    given = {k: v for k, v in env.items() if k.startswith(PREFIX)}
    return ({k: v for k, v in given.items() if k in SWITCHES},
            sorted(k for k in given if k not in SWITCHES))
