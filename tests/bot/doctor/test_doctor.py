"""``perfbot doctor`` on the CPU: the JSON document's shape, the list of what is missing with its
fixes, the hide switch, the self-check; and ``perfbot run`` naming the gpu fallback it records."""
from __future__ import annotations

import json

import pytest

from bot.cli import main
from bot.doctor import advice, facts, selfcheck
from compiler.targets.gpu import libraries


@pytest.fixture(autouse=True)
def fresh_finder(monkeypatch):
    for name in [*facts.GPU_OPTIONS, "PERFBOT_GPU_GRPAHS"]:
        monkeypatch.delenv(name, raising=False)
    libraries.forget()
    yield
    libraries.forget()


def doctor_json(capsys, *args) -> tuple[int, dict]:
    code = main(["doctor", "--format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_json_document_shape(capsys):
    code, doc = doctor_json(capsys, "--no-self-check")
    assert set(doc) == {"python", "packages", "requirements", "gpu", "libraries", "gpu_options",
                        "self_check", "missing", "ok"}
    assert doc["python"]["version"].count(".") == 2
    assert {"numpy", "onnxruntime", *facts.GPU_PACKAGES} <= set(doc["packages"])
    assert {r["name"] for r in doc["requirements"]} >= {"jsonschema", "SQLAlchemy", "PyGithub"}
    assert set(doc["gpu"]) == {"usable", "devices", "driver", "cuda_driver", "cuda_runtime", "problems"}
    assert [lib["key"] for lib in doc["libraries"]] == ["cudnn", "cublas", "cublaslt", "frontend"]
    for lib in doc["libraries"]:
        assert {"title", "package", "source", "path", "version", "fallback", "found"} <= set(lib)
        assert lib["found"] == (lib["source"] in ("wheel", "system"))
    assert doc["self_check"] == [] and doc["ok"] is (code == 0)
    assert all(set(item) == {"what", "fix", "blocking", "scope"} for item in doc["missing"])


def no_gpu_doc(**changes) -> dict:
    """A doctor document of a machine with no GPU, no gpu extra, and everything else in place."""
    doc = {"packages": {name: None for name in facts.GPU_PACKAGES}, "requirements": [],
           "gpu": {"usable": False, "devices": [], "driver": None, "problems": ["CuPy does not import"]},
           "libraries": [libraries._missing(spec, "missing", "not found").as_dict()
                         for spec in (*libraries.LIBRARIES.values(), libraries.FRONTEND)],
           "gpu_options": {"set": [], "unknown": [], "unknown_hidden": []}, "self_check": []}
    doc.update(changes)
    return doc


def test_without_a_gpu_the_gpu_items_are_listed_but_do_not_fail():
    items = advice.missing(no_gpu_doc())
    assert [i["fix"] for i in items] == [advice.DRIVER, advice.GPU_EXTRA]   # one line per fix
    assert "cupy-cuda13x" in items[1]["what"] and "nvidia-cudnn-frontend" in items[1]["what"]
    assert not any(i["blocking"] for i in items)
    assert all(i["blocking"] for i in advice.missing(no_gpu_doc(), expect_gpu=True))


def test_a_gpu_without_the_wheels_is_blocking_and_names_each_fallback():
    """The newcomer's machine: driver and CuPy, but neither cuDNN, the frontend nor cuBLAS."""
    packages = {name: None for name in facts.GPU_PACKAGES} | {"cupy-cuda13x": "14.2.0", "nvidia-cublas": "13.1"}
    doc = no_gpu_doc(packages=packages, gpu={"usable": True, "devices": [{"index": 0}], "driver": "580",
                                             "problems": []})
    items = advice.missing(doc)
    assert all(i["blocking"] and i["fix"] == advice.GPU_EXTRA for i in items)
    assert "nvidia-cudnn-cu13" in items[0]["what"] and "cupy-cuda13x" not in items[0]["what"]
    # cuBLAS's wheel is installed but its libraries were not found: each says what the target does instead
    assert any(i["what"].startswith("cuBLASLt (nvidia-cublas)") and "separate kernel" in i["what"] for i in items)
    assert not any(i["what"].startswith("cuDNN (") for i in items)     # covered by the package line


def test_driver_fix_only_when_no_driver_is_loaded():
    with_driver = no_gpu_doc(gpu={"usable": False, "devices": [], "driver": "580.159.04", "problems": []})
    assert advice.missing(with_driver)[0]["fix"] == advice.GPU_EXTRA


def test_requirements_and_failed_self_checks_block(capsys):
    doc = no_gpu_doc(requirements=[{"name": "jsonschema", "wanted": ">=4.20", "installed": None, "ok": False}],
                     self_check=[{"target": "cpu", "row": "smoke-resnet", "status": "FAILED", "detail": "x"}])
    items = [i for i in advice.missing(doc) if i["blocking"]]
    assert items[0]["what"] == "jsonschema >=4.20 (installed: none)" and items[0]["fix"] == advice.INSTALL
    assert items[1]["fix"].startswith("perfbot verify smoke-resnet --target cpu")


def test_hide_switch_is_named_with_its_fallback_and_fix(capsys, monkeypatch):
    monkeypatch.setenv(libraries.HIDE_ENV, "frontend")
    code, doc = doctor_json(capsys, "--no-self-check")
    front = doc["libraries"][-1]
    assert front["source"] == "hidden" and front["fallback"].startswith(libraries.CONV_FALLBACK)
    assert {"name": libraries.HIDE_ENV, "value": "frontend",
            "meaning": facts.GPU_OPTIONS[libraries.HIDE_ENV]} in doc["gpu_options"]["set"]
    hidden = [i for i in doc["missing"] if i["what"].startswith("cuDNN frontend")]
    assert hidden[0]["fix"] == f"unset {libraries.HIDE_ENV}" and "hidden by" in hidden[0]["what"]
    main(["doctor", "--no-self-check"])
    text = capsys.readouterr().out
    assert f"cuDNN frontend: hidden; fallback: {libraries.CONV_FALLBACK}" in text


def test_misspelt_switches_are_reported(capsys, monkeypatch):
    monkeypatch.setenv("PERFBOT_GPU_GRPAHS", "0")
    monkeypatch.setenv(libraries.HIDE_ENV, "frontnd")
    _, doc = doctor_json(capsys, "--no-self-check")
    assert doc["gpu_options"]["unknown"] == ["PERFBOT_GPU_GRPAHS"]
    assert doc["gpu_options"]["unknown_hidden"] == ["frontnd"]
    fixes = [i["fix"] for i in doc["missing"]]
    assert "unset PERFBOT_GPU_GRPAHS" in fixes and any(f.startswith("export PERFBOT_GPU_HIDE=") for f in fixes)


def test_self_check_verifies_a_small_model_on_each_cpu_target(capsys):
    code, doc = doctor_json(capsys)
    assert [c["target"] for c in doc["self_check"]] == selfcheck.targets(doc["gpu"]["usable"])
    for c in doc["self_check"]:
        assert c["row"] == selfcheck.ROW and c["status"] == "PASSED", c
        assert c["max_abs_err"] < 1e-4
    assert code == (0 if doc["ok"] else 1)


def test_self_check_reports_an_error_in_one_line():
    out = selfcheck.check("cpu", "no-such-row")
    assert out["status"] == "error" and "no-such-row" in out["detail"] and "\n" not in out["detail"]


def test_markdown_and_text_name_every_section(capsys):
    main(["doctor", "--no-self-check", "--format", "markdown"])
    md = capsys.readouterr().out
    for heading in ("## versions", "## GPU", "## gpu target libraries", "## gpu switches", "## missing"):
        assert heading in md
    main(["doctor", "--no-self-check"])
    assert "## " not in capsys.readouterr().out


def test_kernel_driver_version_from_proc(tmp_path):
    version = tmp_path / "version"
    version.write_text("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build\n")
    assert facts.kernel_driver(str(version)) == "580.159.04"
    assert facts.kernel_driver(str(tmp_path / "none")) is None


def test_run_names_the_fallback_and_records_it(tmp_path, monkeypatch):
    """``perfbot run`` on the gpu target prints one line naming the fallback and keeps it in the
    run's machine record (and so in the results document, which still validates)."""
    from bot.results_doc import validate_results
    from bot.runner import machine, suite
    from bot.store import open_store

    monkeypatch.setenv(libraries.HIDE_ENV, "frontend")
    monkeypatch.setattr(machine, "choose_target", lambda asked: asked)
    monkeypatch.setattr(machine, "_gpu_device", lambda: {"gpu": "test"})
    monkeypatch.setattr(suite, "select_rows", lambda *a: [])
    monkeypatch.chdir(tmp_path)
    said = []
    with open_store(f"sqlite:///{tmp_path / 'r.db'}") as store:
        run_id = suite.run_suite(store, suite.RunRequest(suite="smoke", target="gpu", quiet=True,
                                                         commit="unknown"), announce=said.append)
        doc = store.get_run(run_id)
    lines = [s for s in said if "fallback" in s]
    assert len(lines) == 1 and "cuDNN frontend hidden: convolutions run as im2col" in lines[0]
    assert doc["run"]["machine"]["gpu_fallback"] in lines[0] and "gpu_libraries" in doc["run"]["machine"]
    validate_results(doc)
