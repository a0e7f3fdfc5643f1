"""``perfbot compile`` (show how a model is partitioned and compiled) and ``perfbot verify``
(run a model on one target and compare every output with ONNX Runtime)."""
from __future__ import annotations

import argparse
import contextlib
import json
import time
from pathlib import Path

import numpy as np

from compiler.errors import UserError

from bot.cli.options import add_devices, add_format


def register(subparsers) -> None:
    c = subparsers.add_parser(
        "compile", help="compile an ONNX model; show its target roots (and the program)",
        description="Parse an ONNX model, partition it over the targets and compile every root "
        "module with its target's passes. Example: perfbot compile model.onnx --targets gpu,cpu "
        "--assign Softmax=cpu --print")
    c.add_argument("model", help="an .onnx file or a row name of the model manifest")
    c.add_argument("--batch", type=int, metavar="N", help="bind the symbolic batch dimension")
    add_dim(c)
    c.add_argument("--targets", default="cpu", help="comma-separated targets, first preferred "
                   "(default cpu; known: ref, cpu, gpu)")
    c.add_argument("--assign", action="append", default=[], metavar="OP=TARGET",
                   help="run an op type or a node name on a target (repeatable; TARGET may be a "
                   "nesting path like gpu/cpu)")
    c.add_argument("--offload-copy", action=argparse.BooleanOptionalAction, default=True,
                   help="roots of device targets take and return host data (default on)")
    c.add_argument("--fp16", action="store_true", help="compute in half precision where the target can")
    c.add_argument("--no-lower", action="store_true", help="partition and run the passes only "
                   "(needs no device)")
    c.add_argument("--print", action="store_true", help="print the compiled program")
    add_format(c)
    c.set_defaults(func=compile_command)

    v = subparsers.add_parser(
        "verify", help="compare a model's outputs on a target with ONNX Runtime",
        description="Compile the model for one target, run it on seeded random inputs and "
        "compare every output with ONNX Runtime (CPU). Exit 0 PASSED, 1 FAILED.")
    v.add_argument("model", help="an .onnx file or a row name of the model manifest")
    v.add_argument("--target", default="cpu", help="target to verify (default cpu)")
    v.add_argument("--batch", type=int, metavar="N", help="bind the symbolic batch dimension")
    add_dim(v)
    v.add_argument("--fp16", action="store_true", help="compile in half precision")
    v.add_argument("--rtol", type=float, help="relative tolerance (default: the row's, else by dtype)")
    v.add_argument("--atol", type=float, help="absolute tolerance (default: the row's, else by dtype)")
    v.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    v.add_argument("--int-high", type=int, default=2, metavar="N",
                   help="integer inputs of a plain model file are drawn from [0, N) (default 2: valid "
                        "for any index or id input; a suite row uses its manifest's ranges)")
    add_format(v)
    add_devices(v)
    v.set_defaults(func=verify_command)


def add_dim(parser) -> None:
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=N",
                        help="size of another symbolic input dimension (an exporter's seq, say); "
                             "repeatable")


def parse_dims(items: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        for part in filter(None, (p.strip() for p in item.split(","))):
            key, sep, value = part.partition("=")
            if not sep or not key.strip() or not value.strip().isdigit() or int(value) < 1:
                raise UserError(f"bad --dim {part!r}: expected NAME=N with N at least 1 (e.g. seq=128)")
            out[key.strip()] = int(value)
    return out


# ----- compile ------------------------------------------------------------------------------------
def parse_assign(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        for part in filter(None, (p.strip() for p in item.split(","))):
            key, sep, value = part.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise UserError(f"bad --assign {part!r}: expected OP=TARGET (e.g. Softmax=cpu)")
            out[key.strip()] = value.strip()
    return out


def _check_model_file(path: str) -> None:
    if not path.strip():  # Path("") is the current folder: say what is really wrong
        raise UserError("the model path is empty")
    if Path(path).is_dir():
        raise UserError(f"model {path} is a folder; give an .onnx file")
    if not Path(path).is_file():
        raise UserError(f"no such model file: {path}")


def _check_batch_binds(path: str, batch: int) -> None:
    """--batch binds the symbolic first dimension of the graph inputs; a model without one would
    silently keep its own batch, so say so instead."""
    from compiler.onnx.load import load_model
    from compiler.onnx.parser import unknown_length

    graph = load_model(path)[0].graph
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


def _load(path: str, batch: int | None, dims: dict[str, int] | None = None):
    import compiler
    _check_model_file(path)
    if batch is not None and batch < 1:
        raise UserError("--batch must be at least 1")
    from compiler.errors import UnboundDimensionError
    try:
        with _out_of_memory_is_one_line(f"importing {path}"):  # constants are folded on import
            return compiler.parse_onnx(path, batch_size=batch, dims=dims)
    except UnboundDimensionError as exc:
        flags = " ".join(f"--dim {n}=N" for n in exc.names)
        raise UserError(f"{exc.subject}; give its size with {flags}") from None


@contextlib.contextmanager
def _out_of_memory_is_one_line(doing: str):
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


def compile_command(args) -> int:
    from compiler.compile import prepare_program
    assign = parse_assign(args.assign)
    path, row, batch = _resolve(args.model, args.batch)  # a row is built first, as verify does
    fp16 = _row_fp16(args, row)
    start = time.perf_counter()
    program = _load(path, batch, _row_dims(args, row))
    parse_seconds = time.perf_counter() - start
    if args.batch is not None:
        _check_batch_binds(path, args.batch)
    parsed = time.perf_counter()  # the checks above are neither parse nor compile time
    with _out_of_memory_is_one_line(f"compiling {args.model}"):
        if args.no_lower:
            prepare_program(program, args.targets, offload_copy=args.offload_copy, assign=assign,
                            fp16=fp16)
        else:
            program.compile(args.targets, offload_copy=args.offload_copy, fp16=fp16, assign=assign)
    done = time.perf_counter()
    doc = {"model": args.model, "targets": program.options["targets"],
           "offload_copy": args.offload_copy, "fp16": fp16, "assign": assign,
           "lowered": not args.no_lower, "parse_seconds": round(parse_seconds, 4),
           "compile_seconds": round(done - parsed, 4), "roots": root_summary(program)}
    if args.print:
        doc["program"] = str(program)
    print(render_compile(doc, args.format))
    return 0


def render_compile(doc: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(doc, indent=2)
    head = (f"{doc['model']}: targets {','.join(doc['targets'])}, offload_copy "
            f"{'on' if doc['offload_copy'] else 'off'}{', fp16' if doc['fp16'] else ''}; "
            f"parse {doc['parse_seconds']:.3f} s, compile {doc['compile_seconds']:.3f} s")
    cols = ("module", "target", "instructions", "parameters", "returns", "copies in/out")
    rows = [(r["module"], r["target"], str(r["instructions"]), str(len(r["parameters"])),
             str(r["returns"]), f"{r['copies_to_device']}/{r['copies_from_device']}")
            for r in doc["roots"]]
    if fmt == "markdown":
        lines = [f"**{head}**", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        if "program" in doc:
            lines += ["", "```", doc["program"].rstrip(), "```"]
        return "\n".join(lines)
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    lines = [head, "  ".join(c.ljust(w) for c, w in zip(cols, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in rows]
    if "program" in doc:
        lines += ["", doc["program"].rstrip()]
    return "\n".join(lines)


# ----- verify -------------------------------------------------------------------------------------
def random_feeds(program, seed: int, int_high: int = 2) -> dict[str, np.ndarray]:
    """Seeded inputs from the program's parameter types: floats standard normal, integers in
    [0, int_high) (the default 2 is a valid index of any table, id of any vocabulary and token
    type), booleans fair coins."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for p in program.compiled.inputs() if program.compiled else program.main.parameters():
        lens, dtype = tuple(p.shape.lens), np.dtype(p.shape.dtype)
        if dtype.kind == "f":
            feeds[p.name] = rng.standard_normal(lens).astype(dtype)
        elif dtype.kind in "iu":
            feeds[p.name] = rng.integers(0, int_high, size=lens).astype(dtype)
        elif dtype.kind == "b":
            feeds[p.name] = rng.random(lens) < 0.5
        else:
            raise UserError(f"cannot make random values for input {p.name!r} of type {dtype.name}")
    return feeds


def _resolve(model: str, batch: int | None):
    """(path, manifest row or None, batch) of a file or a manifest row name."""
    if Path(model).is_file():
        return model, None, batch
    if not model.strip() or model.endswith(".onnx") or "/" in model or Path(model).is_dir():
        _check_model_file(model)
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


def _row_fp16(args, row) -> bool:
    """--fp16, or a suite row of fp16 mode (its fp32 file compiled in half precision)."""
    return args.fp16 or (row is not None and getattr(row, "mode", "") == "fp16")


def _row_dims(args, row) -> dict[str, int] | None:
    """A suite row's other symbolic dims, and the command line's over them."""
    return {**(getattr(row, "dims", None) or {}), **parse_dims(args.dim)} or None


def _tolerance(args, row, fp16: bool) -> tuple[float, float]:
    """The command line's, else the manifest row's, else the runner's default for the dtype."""
    from bot.runner.accuracy import DEFAULT_TOLERANCE
    rtol, atol = DEFAULT_TOLERANCE["fp16" if fp16 else "fp32"]
    if row is not None:
        rtol, atol = getattr(row, "rtol", rtol), getattr(row, "atol", atol)
    return (args.rtol if args.rtol is not None else float(rtol),
            args.atol if args.atol is not None else float(atol))


def _check_verify_options(args) -> None:
    if args.seed < 0:
        raise UserError(f"--seed must be at least 0, got {args.seed}")
    if args.int_high < 1:
        raise UserError(f"--int-high must be at least 1 (integer inputs come from [0, N)), got {args.int_high}")
    for flag, value in (("--rtol", args.rtol), ("--atol", args.atol)):
        if value is not None and not value >= 0:  # also refuses nan
            raise UserError(f"{flag} must be a non-negative number, got {value}")


def verify_command(args) -> int:
    from bot.runner.accuracy import compare_outputs, reference_outputs
    _check_verify_options(args)
    if args.devices is not None:
        from bot.cli.verify_devices import verify_on_devices

        return verify_on_devices(args)
    path, row, batch = _resolve(args.model, args.batch)
    fp16 = _row_fp16(args, row)
    program = _load(path, batch, _row_dims(args, row))
    if args.batch is not None:
        _check_batch_binds(path, args.batch)
    with _out_of_memory_is_one_line(f"compiling {args.model}"):
        program.compile(args.target, fp16=fp16)
    if row is not None:
        from models.inputs import make_feeds
        feeds = make_feeds(row, path, batch=batch, seed=args.seed)
    else:
        feeds = random_feeds(program, args.seed, args.int_high)
    ours = _run_checked(program, feeds)
    reference = reference_outputs(path, feeds)
    rtol, atol = _tolerance(args, row, fp16)
    result = compare_outputs(ours, reference, rtol, atol)
    doc = {"model": args.model, "target": args.target, "fp16": fp16, **result.as_row(),
           "problem": result.problem}
    print(render_verify(doc, args.format))
    return 0 if result.status == "PASSED" else 1


def _run_checked(program, feeds) -> list:
    """Run once; an input the model cannot take (an index past a table's end) is the user's to fix,
    so it gets one line rather than a traceback."""
    try:
        with _out_of_memory_is_one_line("running the model"):
            return program.run(feeds)
    except (IndexError, ValueError) as exc:
        raise UserError(f"the model failed on the generated inputs ({type(exc).__name__}: {exc}); "
                        "integer inputs come from [0, --int-high)") from exc


def render_verify(doc: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(doc, indent=2)
    def num(v):
        return "n/a" if v is None else f"{v:.3g}"
    verdict = ("meets tolerance" if doc["status"] == "PASSED" else "is not within tolerance")
    line = (f"{doc['status']}: {doc['model']} on {doc['target']} {verdict} "
            f"(rtol {doc['rtol']:g}, atol {doc['atol']:g}): max abs error {num(doc['max_abs_err'])}, "
            f"max rel error {num(doc['max_rel_err'])}")
    if doc.get("worst_output"):  # quoted: an output is often named "output"
        line += f", largest error in output {doc['worst_output']!r}"
        if doc.get("worst_index") is not None:
            line += f" at {doc['worst_index']}"
    if doc.get("problem"):
        line += f"; {doc['problem']}"
    if fmt == "markdown":
        icon = ":white_check_mark:" if doc["status"] == "PASSED" else ":red_circle:"
        return f"{icon} {line}"
    return line
