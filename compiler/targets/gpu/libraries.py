"""Where the gpu target's native libraries come from: the nvidia wheels first, then the system.

``pip install '.[gpu]'`` brings cuDNN (``nvidia-cudnn-cu13``: site-packages/nvidia/cudnn/lib),
cuBLAS and cuBLASLt (``nvidia-cublas``: nvidia/cu13/lib; CUDA 12's wheels used nvidia/cublas/lib)
and the cuDNN frontend module (``nvidia-cudnn-frontend``). Those folders are on no library path, so
a bare ``dlopen("libcudnn.so.9")`` finds them only where another package (PyTorch) loaded them
first, and without them the target quietly takes slower paths. ``load`` looks for each library:

1. already loaded in this process (one copy per process: CuPy loads its cuBLAS, the frontend its
   cuDNN, and the target must call the same one);
2. in the wheels' folders under every site-packages folder on ``sys.path``;
3. by soname on the system (``LD_LIBRARY_PATH``, the linker's cache).

Every outcome is kept (``findings``): where each library was loaded from, or why not and which
fallback the target takes instead. ``perfbot doctor`` prints them and ``perfbot run`` records them.
``PERFBOT_GPU_HIDE=frontend,cudnn,cublas,cublaslt`` (any of them) hides libraries from the finder,
so a machine that has everything can show what the target does without them.
"""
from __future__ import annotations

import ctypes
import os
import site
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from .options import HIDE_ENV, GpuOptions


@dataclass(frozen=True)
class Spec:
    key: str                  # the name PERFBOT_GPU_HIDE and the findings use
    title: str
    sonames: tuple[str, ...]  # newest first
    wheel_dirs: tuple[str, ...]
    package: str              # the wheel that ships it
    fallback: str             # what the target does without it


CONV_FALLBACK = "convolutions run as im2col + GEMM on CuPy instead of as cuDNN graphs"
LIBRARIES = {
    "cudnn": Spec("cudnn", "cuDNN", ("libcudnn.so.9",), ("nvidia/cudnn/lib",), "nvidia-cudnn-cu13",
                  CONV_FALLBACK),
    "cublas": Spec("cublas", "cuBLAS", ("libcublas.so.13", "libcublas.so.12"),
                   ("nvidia/cu13/lib", "nvidia/cublas/lib"), "nvidia-cublas",
                   "matrix products run through cupy.matmul: no split-bf16 tensor-core GEMMs and no "
                   "CUDA-graph capture of them"),
    "cublaslt": Spec("cublaslt", "cuBLASLt", ("libcublasLt.so.13", "libcublasLt.so.12"),
                     ("nvidia/cu13/lib", "nvidia/cublas/lib"), "nvidia-cublas",
                     "GEMM convolutions add bias, residual and ReLU in a separate kernel"),
}
# cuDNN graphs are built through the frontend's module: without it, no cuDNN convolutions either.
FRONTEND = Spec("frontend", "cuDNN frontend", (), (), "nvidia-cudnn-frontend", CONV_FALLBACK)
KNOWN = (*LIBRARIES, FRONTEND.key)


@dataclass
class Finding:
    key: str
    title: str
    package: str
    source: str                 # "wheel", "system", "hidden" or "missing"
    path: str | None = None     # the file (or, for the frontend, the module's folder) loaded
    version: str | None = None
    fallback: str | None = None  # set when not found: what the target does instead
    detail: str | None = None    # why not found

    @property
    def found(self) -> bool:
        return self.source in ("wheel", "system")

    def as_dict(self) -> dict:
        return {**asdict(self), "found": self.found}


_findings: dict[str, Finding] = {}
_loaded: dict[str, object] = {}


def hidden() -> set[str]:
    """The libraries PERFBOT_GPU_HIDE names; hiding cuDNN hides the frontend too (it needs it)."""
    return set(GpuOptions.from_environment().hide)


def unknown_hidden() -> list[str]:
    return sorted(hidden() - set(KNOWN))


# ----- where to look ------------------------------------------------------------------------------
def site_roots() -> list[str]:
    """Every folder that may hold an ``nvidia/`` wheel tree: the import path (a venv's or the
    user's site-packages included), in import order, without repeats."""
    roots = [*sys.path, *site.getsitepackages(), site.getusersitepackages()]
    seen, out = set(), []
    for root in roots:
        if root and root not in seen and os.path.isdir(os.path.join(root, "nvidia")):
            seen.add(root)
            out.append(root)
    return out


def wheel_candidates(spec: Spec, roots: list[str]) -> list[str]:
    """The wheel files that would provide ``spec``, in search order."""
    return [os.path.join(root, sub, name) for root in roots for sub in spec.wheel_dirs
            for name in spec.sonames if os.path.isfile(os.path.join(root, sub, name))]


def in_wheel(path: str, roots: list[str]) -> bool:
    resolved = Path(path).resolve()
    return any(resolved.is_relative_to(Path(root, "nvidia").resolve()) for root in roots)


# ----- loading ------------------------------------------------------------------------------------
def _dlopen(name: str, already_loaded: bool = False):
    """ctypes.CDLL; with ``already_loaded`` only a copy the process has (RTLD_NOLOAD), else OSError.
    A later dlopen of the soname (the frontend's, cuDNN's own) resolves to the copy opened here."""
    return ctypes.CDLL(name, mode=ctypes.DEFAULT_MODE | (os.RTLD_NOLOAD if already_loaded else 0))


class _LinkMap(ctypes.Structure):
    _fields_ = [("l_addr", ctypes.c_void_p), ("l_name", ctypes.c_char_p)]


def loaded_path(lib) -> str | None:
    """The file a loaded library came from (dlinfo RTLD_DI_LINKMAP), for a library opened by
    soname."""
    try:
        libdl = _libdl()
        info = ctypes.POINTER(_LinkMap)()
        if libdl is None or libdl.dlinfo(ctypes.c_void_p(lib._handle), 2, ctypes.byref(info)) != 0:
            return None
        name = info.contents.l_name
        return os.path.realpath(name.decode()) if name else None
    except (AttributeError, OSError, ValueError):
        return None


def _libdl():
    """The C library that has dlinfo: libc itself since glibc 2.34, libdl before."""
    for name in (None, "libdl.so.2"):
        try:
            lib = ctypes.CDLL(name)
            lib.dlinfo  # noqa: B018 - AttributeError where this one lacks it
            return lib
        except (AttributeError, OSError):
            continue
    return None


def _attempts(spec: Spec, roots: list[str]):
    """(name to open, whether it must be loaded already) in search order."""
    for name in spec.sonames:
        yield name, True
    for path in wheel_candidates(spec, roots):
        yield path, False
    for name in spec.sonames:
        yield name, False


def find(spec: Spec, roots: list[str] | None = None):
    """(library or None, Finding) for ``spec``; nothing is remembered."""
    if spec.key in hidden():
        return None, _missing(spec, "hidden", f"hidden by {HIDE_ENV}")
    roots = site_roots() if roots is None else roots
    errors = []
    for name, already in _attempts(spec, roots):
        try:
            lib = _dlopen(name, already)
        except OSError as exc:
            if not already:
                errors.append(" ".join(str(exc).split())[:200])
            continue
        path = name if os.sep in name else (loaded_path(lib) or name)
        source = "wheel" if os.sep in path and in_wheel(path, roots) else "system"
        return lib, Finding(spec.key, spec.title, spec.package, source, path, _version(spec, lib))
    # A file that is there but does not load (a missing dependency, another machine's build) says why.
    why = [e for e in errors if "No such file" not in e]
    return None, _missing(spec, "missing", f"no {' or '.join(spec.sonames)} in the nvidia wheels' folders or on "
                          f"the system's library path{f' ({why[-1]})' if why else ''}")


def _missing(spec: Spec, source: str, detail: str) -> Finding:
    return Finding(spec.key, spec.title, spec.package, source, fallback=spec.fallback, detail=detail)


def load(key: str):
    """The library ``key`` of ``LIBRARIES`` (a ctypes.CDLL), or None; the outcome is remembered."""
    if key not in _findings:
        _loaded[key], _findings[key] = find(LIBRARIES[key])
    return _loaded[key]


class _FrontendHandle:
    handle = None


def frontend_handle():
    """The process's cuDNN frontend handle (convolutions and attention share it), bound to the
    current CuPy stream: a handle keeps the stream it last ran on, and that stream may since have
    been destroyed (a program's recording stream, the path-timing stream); building or loading a
    plan on a handle bound to a destroyed stream crashed cuDNN (a segfault in deserialize on the
    H200 machine, in a second GPU test run)."""
    import cupy
    cudnn = frontend()
    if _FrontendHandle.handle is None:
        _FrontendHandle.handle = cudnn.create_handle()
    cudnn.set_stream(handle=_FrontendHandle.handle, stream=cupy.cuda.get_current_stream().ptr)
    return _FrontendHandle.handle


def frontend():
    """The cuDNN frontend module, or None. cuDNN is loaded through ``load`` first: the frontend
    looks only in ``LD_LIBRARY_PATH``, its own site-packages folder and the linker's path, and
    uses a copy already loaded under the soname."""
    if FRONTEND.key in _findings:
        return _loaded[FRONTEND.key]
    module, finding = None, _missing(FRONTEND, "hidden", f"hidden by {HIDE_ENV}")
    if FRONTEND.key not in hidden():
        load("cudnn")
        try:
            import cudnn
            cudnn.backend_version()
            module = cudnn
            path = os.path.dirname(cudnn.__file__)
            finding = Finding(FRONTEND.key, FRONTEND.title, FRONTEND.package,
                              "wheel" if in_wheel_module(path) else "system", path,
                              getattr(cudnn, "__version__", None))
        except Exception as exc:  # noqa: BLE001 - no module, or no cuDNN under it
            finding = _missing(FRONTEND, "missing", f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
    _loaded[FRONTEND.key], _findings[FRONTEND.key] = module, finding
    return module


def in_wheel_module(path: str) -> bool:
    return any(part in ("site-packages", "dist-packages") for part in Path(path).parts)


def _version(spec: Spec, lib) -> str | None:
    """The library's own version (none of these calls needs a device)."""
    try:
        if spec.key == "cudnn":
            v = int(lib.cudnnGetVersion())
            return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"
        if spec.key == "cublaslt":
            v = int(lib.cublasLtGetVersion())
            return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"
        parts = []
        for prop in range(3):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
            value = ctypes.c_int()
            if lib.cublasGetProperty(prop, ctypes.byref(value)) != 0:
                return None
            parts.append(str(value.value))
        return ".".join(parts)
    except (AttributeError, OSError, ValueError):
        return None


# ----- what was found -----------------------------------------------------------------------------
def probe() -> list[Finding]:
    """Load everything the target may use, in the order the target does (CuPy first: it brings
    its own cuBLAS, which the direct calls must share), and return the findings."""
    try:
        import cupy  # noqa: F401
        from cupy_backends.cuda.libs import cublas  # noqa: F401
    except Exception:  # noqa: BLE001 - no CuPy: the libraries are still looked for
        pass
    for key in LIBRARIES:
        load(key)
    frontend()
    return findings()


def findings() -> list[Finding]:
    order = [*LIBRARIES, FRONTEND.key]
    return [_findings[k] for k in order if k in _findings]


def finding(key: str) -> Finding | None:
    return _findings.get(key)


def fallbacks() -> list[Finding]:
    """The libraries looked for and not had, each with the fallback the target takes."""
    return [f for f in findings() if not f.found]


def fallback_line(items: list[Finding]) -> str:
    """One line naming each missing library and the fallback taken, for ``perfbot run``; libraries
    with the same fallback share it."""
    by_fallback: dict[str, list[str]] = {}
    for f in items:
        by_fallback.setdefault(f.fallback, []).append(f"{f.title} {'hidden' if f.source == 'hidden' else 'not found'}")
    return "; ".join(f"{', '.join(names)}: {fallback}" for fallback, names in by_fallback.items())


def forget() -> None:
    """Forget every outcome (tests; a changed PERFBOT_GPU_HIDE)."""
    _findings.clear()
    _loaded.clear()
