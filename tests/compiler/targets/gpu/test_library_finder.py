"""The gpu target's library finder (``compiler.targets.gpu.libraries``), without a GPU: fake
site-packages trees laid out as the nvidia wheels lay out theirs, and a stand-in for dlopen that
opens any file of those trees and the sonames a fake "system" has."""
from __future__ import annotations

import os
import sys
import types

import pytest

from compiler.targets.gpu import libraries


class FakeLib:
    def __init__(self, name: str):
        self.name = name


@pytest.fixture
def system(monkeypatch):
    """The sonames the fake system's linker finds, and the ones already loaded in the process."""
    state = {"sonames": set(), "loaded": set(), "opened": []}

    def dlopen(name, already_loaded=False):
        state["opened"].append((name, already_loaded))
        if already_loaded:
            if name in state["loaded"]:
                return FakeLib(name)
            raise OSError(f"{name}: not loaded")
        if os.sep in name and os.path.isfile(name):
            return FakeLib(name)
        if name in state["sonames"]:
            return FakeLib(name)
        raise OSError(f"{name}: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(libraries, "_dlopen", dlopen)
    monkeypatch.setattr(libraries, "loaded_path", lambda lib: f"/usr/lib/x86_64-linux-gnu/{lib.name}")
    monkeypatch.delenv(libraries.HIDE_ENV, raising=False)
    libraries.forget()
    yield state
    libraries.forget()


def wheel_tree(root, *files):
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    return str(root)


CUDNN = libraries.LIBRARIES["cudnn"]
CUBLAS = libraries.LIBRARIES["cublas"]
CUBLASLT = libraries.LIBRARIES["cublaslt"]


def test_the_wheel_comes_before_the_system(system, tmp_path):
    root = wheel_tree(tmp_path / "site-packages", "nvidia/cudnn/lib/libcudnn.so.9")
    system["sonames"].add("libcudnn.so.9")
    lib, found = libraries.find(CUDNN, [root])
    assert found.source == "wheel" and found.found
    assert found.path == os.path.join(root, "nvidia/cudnn/lib/libcudnn.so.9")
    assert lib.name == found.path and found.fallback is None


def test_cuda13_cublas_wheel_layout_and_cuda12s(system, tmp_path):
    cu13 = wheel_tree(tmp_path / "a", "nvidia/cu13/lib/libcublasLt.so.13")
    cu12 = wheel_tree(tmp_path / "b", "nvidia/cublas/lib/libcublasLt.so.12")
    assert libraries.find(CUBLASLT, [cu13])[1].path.endswith("nvidia/cu13/lib/libcublasLt.so.13")
    assert libraries.find(CUBLASLT, [cu12])[1].path.endswith("nvidia/cublas/lib/libcublasLt.so.12")


def test_the_system_when_no_wheel_has_it(system, tmp_path):
    root = wheel_tree(tmp_path / "site-packages", "nvidia/cudnn/lib/libcudnn.so.9")
    system["sonames"].add("libcublas.so.12")
    _, found = libraries.find(CUBLAS, [root])
    assert found.source == "system"
    assert found.path == "/usr/lib/x86_64-linux-gnu/libcublas.so.12"


def test_a_copy_already_loaded_is_used_and_placed(system, tmp_path):
    """CuPy loads its cuBLAS (the frontend its cuDNN) before the target's own calls: the target
    must call that copy, and the finding says which file it is."""
    root = wheel_tree(tmp_path / "site-packages", "nvidia/cu13/lib/libcublas.so.13")
    system["loaded"].add("libcublas.so.13")
    lib, found = libraries.find(CUBLAS, [root])
    assert system["opened"][0] == ("libcublas.so.13", True) and lib.name == "libcublas.so.13"
    assert found.source == "system"    # the fake linker placed it under /usr/lib


def test_missing_names_the_fallback_and_why(system, tmp_path):
    lib, found = libraries.find(CUDNN, [str(tmp_path)])
    assert lib is None and not found.found and found.source == "missing"
    assert found.fallback == libraries.CONV_FALLBACK
    assert "libcudnn.so.9" in found.detail and "No such file" not in found.detail


def test_hide_switch_hides_a_library_that_is_there(system, tmp_path, monkeypatch):
    root = wheel_tree(tmp_path / "site-packages", "nvidia/cu13/lib/libcublasLt.so.13")
    monkeypatch.setenv(libraries.HIDE_ENV, " cuBLASLt ,frontend")
    lib, found = libraries.find(CUBLASLT, [root])
    assert lib is None and found.source == "hidden" and libraries.HIDE_ENV in found.detail
    assert system["opened"] == []      # not even looked at
    assert libraries.hidden() == {"cublaslt", "frontend"}


def test_hiding_cudnn_hides_the_frontend_too(system, monkeypatch):
    monkeypatch.setenv(libraries.HIDE_ENV, "cudnn")
    assert libraries.frontend() is None
    found = libraries.finding("frontend")
    assert found.source == "hidden" and found.fallback.startswith(libraries.CONV_FALLBACK)


def test_unknown_hide_names_are_reported(system, monkeypatch):
    monkeypatch.setenv(libraries.HIDE_ENV, "frontend,cudnm")
    assert libraries.unknown_hidden() == ["cudnm"]


def test_frontend_loads_cudnn_first_and_is_recorded(system, tmp_path, monkeypatch):
    """The frontend module is imported after cuDNN is loaded, so its own search (LD_LIBRARY_PATH,
    its site-packages) finds the copy the finder chose."""
    order = []
    module = types.ModuleType("cudnn")
    module.__file__ = str(tmp_path / "site-packages" / "cudnn" / "__init__.py")
    module.__version__ = "1.32.0"
    module.backend_version = lambda: order.append("frontend") or 92800
    monkeypatch.setitem(sys.modules, "cudnn", module)
    system["sonames"].add("libcudnn.so.9")
    real_load = libraries.load
    monkeypatch.setattr(libraries, "load", lambda key: order.append(key) or real_load(key))
    assert libraries.frontend() is module
    assert order == ["cudnn", "frontend"]
    found = libraries.finding("frontend")
    assert found.found and found.source == "wheel" and found.version == "1.32.0"


def test_frontend_that_does_not_import_is_missing(system, monkeypatch):
    monkeypatch.setitem(sys.modules, "cudnn", None)   # import cudnn raises ImportError
    assert libraries.frontend() is None
    found = libraries.finding("frontend")
    assert found.source == "missing" and "ModuleNotFoundError" in found.detail


def test_load_remembers_and_fallbacks_name_what_was_taken(system, tmp_path, monkeypatch):
    root = wheel_tree(tmp_path / "site-packages", "nvidia/cu13/lib/libcublas.so.13")
    monkeypatch.setattr(libraries, "site_roots", lambda: [root])
    monkeypatch.setenv(libraries.HIDE_ENV, "frontend")
    monkeypatch.setitem(sys.modules, "cupy", None)
    found = {f.key: f for f in libraries.probe()}
    assert found["cublas"].source == "wheel"
    assert found["cudnn"].source == "missing" and found["frontend"].source == "hidden"
    assert [f.key for f in libraries.fallbacks()] == ["cudnn", "cublaslt", "frontend"]
    line = libraries.fallback_line(libraries.fallbacks())
    assert "cuDNN not found, cuDNN frontend hidden: convolutions run as im2col" in line   # one fallback, said once
    assert line.count(libraries.CONV_FALLBACK) == 1
    assert "cuBLASLt not found: GEMM convolutions add bias" in line
    opened = len(system["opened"])
    assert libraries.load("cublas") is not None and len(system["opened"]) == opened   # remembered


def test_site_roots_keep_only_folders_with_an_nvidia_tree(tmp_path, monkeypatch):
    with_tree = wheel_tree(tmp_path / "venv", "nvidia/cudnn/lib/libcudnn.so.9")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "plain"), with_tree, with_tree])
    assert libraries.site_roots().count(with_tree) == 1
    assert str(tmp_path / "plain") not in libraries.site_roots()


def test_loaded_path_names_a_real_library_file():
    """dlinfo on a library opened by soname gives its file (libc is on every machine)."""
    import ctypes
    path = libraries.loaded_path(ctypes.CDLL("libc.so.6"))
    assert path is not None and os.path.basename(path).startswith("libc")
