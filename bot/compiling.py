"""One model loaded, compiled and run for ``perfbot compile`` and ``perfbot verify``: a file or a
suite row found, symbolic dimensions bound, what the compiler made summed up per root, seeded
inputs made. A failure the user can fix (a missing file, an unbound dimension, a model too large
for memory, an input it cannot take) is a one-line ``UserError``."""
from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np

from common.errors import UserError


def check_model_file(path: str) -> None:
    if not path.strip():  # Path("") is the current folder: say what is really wrong
        raise UserError("the model path is empty")
    if Path(path).is_dir():
        raise UserError(f"model {path} is a folder; give an .onnx file")
    if not Path(path).is_file():
        raise UserError(f"no such model file: {path}")


def check_batch_binds(path: str, batch: int) -> None:
    """--batch binds the symbolic first dimension of the graph inputs; a model without one would
    silently keep its own batch, so say so instead."""
    from compiler.onnx.load import load_structure
    from compiler.onnx.parser import unknown_length

    graph = load_structure(path).graph     # the graph's inputs only: large weights not read
    inits = {t.name for t in graph.initializer}
    fixed = set()
    for value in graph.input:
        dims = value.type.tensor_type.shape.dim if value.type.HasField("tensor_type") else []
        if value.name in inits or not dims:
            continue
        if unknown_length(dims[0]):
            return
        fixed.add(dims[0].dim_value)
    if fixed and fixed != {batch}:
        raise UserError(f"--batch {batch}: {path} has no symbolic batch dimension (its inputs' first "
                        f"dimensions are fixed: {', '.join(map(str, sorted(fixed)))})")


def load_program(path: str, batch: int | None, dims: dict[str, int] | None = None):
    import compiler
    check_model_file(path)
    if batch is not None and batch < 1:
        raise UserError("--batch must be at least 1")
    from compiler.errors import UnboundDimensionError
    try:
        with out_of_memory_is_one_line(f"importing {path}"):  # constants are folded on import
            return compiler.parse_onnx(path, batch_size=batch, dims=dims)
    except UnboundDimensionError as exc:
        flags = " ".join(f"--dim {n}=N" for n in exc.names)
        raise UserError(f"{exc.subject}; give its size with {flags}") from None


@contextlib.contextmanager
def out_of_memory_is_one_line(doing: str):
    """A model whose tensors do not fit (a huge constant folded at compile time) is the model's
    problem, told in one line; ``perfbot run`` makes it that row's error the same way."""
    try:
        yield
    except MemoryError as exc:
        raise UserError(f"out of host memory {doing}: {' '.join(str(exc).split())[:200]}") from None


def root_summary(program) -> list[dict]:
    rows = []
    for name, target in program.roots.items():
        m = program.modules[name]
        params = m.parameters()
        rows.append({
            "module": name, "target": target,
            "instructions": sum(not i.is_builtin for i in m.instructions),
            "parameters": [p.name for p in params],
            "returns": len(m.output_shapes()),
            "literals": len(m.literals()),
            "copies_to_device": sum(i.op == "copy_to_device" for i in m.instructions),
            "copies_from_device": sum(i.op == "copy_from_device" for i in m.instructions),
        })
    return rows


def random_feeds(program, seed: int, int_high: int = 2, draws: dict | None = None) -> dict[str, np.ndarray]:
    """Seeded inputs from the program's parameter types: floats standard normal, integers in
    [0, int_high) (the default 2 is a valid index of any table, id of any vocabulary and token
    type), booleans fair coins; an input named in ``draws`` (``models.manifest.InputSpec``) as
    that says."""
    from models.inputs import draw

    rng = np.random.default_rng(seed)
    feeds = {}
    for p in program.compiled.inputs() if program.compiled else program.main.parameters():
        lens, dtype = tuple(p.shape.lens), np.dtype(p.shape.dtype)
        if draws and p.name in draws:
            feeds[p.name] = draw(rng, draws[p.name], lens, dtype)
        elif dtype.kind == "f":
            feeds[p.name] = rng.standard_normal(lens).astype(dtype)
        elif dtype.kind in "iu":
            feeds[p.name] = rng.integers(0, int_high, size=lens).astype(dtype)
        elif dtype.kind == "b":
            feeds[p.name] = rng.random(lens) < 0.5
        else:
            raise UserError(f"cannot make random values for input {p.name!r} of type {dtype.name}")
    return feeds


def resolve_model(model: str, batch: int | None):
    """(path, manifest row or None, batch) of a file or a manifest row name."""
    if Path(model).is_file():
        return model, None, batch
    if not model.strip() or model.endswith(".onnx") or "/" in model or Path(model).is_dir():
        check_model_file(model)
    try:
        from models.cache import build_model
        from models.manifest import load_manifest
    except ImportError as exc:
        raise UserError(f"{model!r} is not a file and the model manifest is unavailable ({exc})") from None
    from bot.outfiles import check_model_cache

    manifest = load_manifest()
    if model in manifest.suites:
        raise UserError(f"{model!r} is a suite; give one row name or an .onnx file")
    row = manifest.get(model)
    check_model_cache()
    path = build_model(row)
    return str(path), row, batch if batch is not None else getattr(row, "batch", None)


def run_checked(program, feeds) -> list:
    """Run once; an input the model cannot take (an index past a table's end) is the user's to fix,
    so it gets one line rather than a traceback."""
    from compiler.errors import BranchNotBuiltError

    try:
        with out_of_memory_is_one_line("running the model"):
            return program.run(feeds)
    except BranchNotBuiltError as exc:
        raise UserError(f"{exc}; the branch an If takes depends on the inputs' values: give the input "
                        "that chooses it a value with --input NAME=VALUE (a sample rate, say)") from exc
    except (IndexError, ValueError) as exc:
        raise UserError(f"the model failed on the generated inputs ({type(exc).__name__}: {exc}); "
                        "integer inputs come from [0, --int-high)") from exc
