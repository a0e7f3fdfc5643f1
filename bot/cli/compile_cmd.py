"""``perfbot compile`` (show how a model is partitioned and compiled) and ``perfbot verify``
(run a model on one target and compare every output with ONNX Runtime)."""
from __future__ import annotations

import argparse
import dataclasses
import time

from common.errors import UserError

from bot.cli.options import add_devices, add_format
from bot.compiling import (check_batch_binds, load_program, out_of_memory_is_one_line, random_feeds,
                           resolve_model, root_summary, run_checked)
from reports.compile import render_compile, render_verify


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
    v.add_argument("--input", action="append", default=[], metavar="NAME=DRAW",
                   help="how to draw one input, over the row's or the default: int:LOW:HIGH, "
                        "uniform:LOW:HIGH, normal:MEAN:STD, or an integer for that value everywhere "
                        "(a sample rate: sr=16000); repeatable")
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


def parse_inputs(items: list[str], path: str) -> dict:
    """--input NAME=DRAW options as {input name: InputSpec}; a name the model has no input of is
    refused, naming the ones it has."""
    if not items:
        return {}  # no second read of the model file
    from models.inputs import graph_inputs
    from models.manifest import input_from_text

    names = [vi.name for vi in graph_inputs(path)]
    draws = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise UserError(f"bad --input {item!r}: expected NAME=DRAW (e.g. sr=16000 or x=uniform:0:1)")
        if name.strip() not in names:
            raise UserError(f"--input {item!r}: the model has no input {name.strip()!r}; its inputs: {', '.join(names)}")
        draws[name.strip()] = input_from_text(text, f"--input {item!r}")
    return draws


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


def compile_command(args) -> int:
    from compiler.compile import prepare_program
    assign = parse_assign(args.assign)
    path, row, batch = resolve_model(args.model, args.batch)  # a row is built first, as verify does
    fp16 = _row_fp16(args, row)
    start = time.perf_counter()
    program = load_program(path, batch, _row_dims(args, row))
    parse_seconds = time.perf_counter() - start
    if args.batch is not None:
        check_batch_binds(path, args.batch)
    parsed = time.perf_counter()  # the checks above are neither parse nor compile time
    with out_of_memory_is_one_line(f"compiling {args.model}"):
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


# ----- verify -------------------------------------------------------------------------------------
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
        from bot.verify_devices import verify_on_devices

        return verify_on_devices(args)
    path, row, batch = resolve_model(args.model, args.batch)
    fp16 = _row_fp16(args, row)
    program = load_program(path, batch, _row_dims(args, row))
    if args.batch is not None:
        check_batch_binds(path, args.batch)
    with out_of_memory_is_one_line(f"compiling {args.model}"):
        program.compile(args.target, fp16=fp16)
    draws = parse_inputs(args.input, path)
    if row is not None:
        from models.inputs import make_feeds
        feeds = make_feeds(dataclasses.replace(row, inputs={**row.inputs, **draws}), path, batch=batch, seed=args.seed)
    else:
        feeds = random_feeds(program, args.seed, args.int_high, draws)
    ours = run_checked(program, feeds)
    reference = reference_outputs(path, feeds)
    rtol, atol = _tolerance(args, row, fp16)
    result = compare_outputs(ours, reference, rtol, atol)
    doc = {"model": args.model, "target": args.target, "fp16": fp16, **result.as_row(),
           "problem": result.problem}
    print(render_verify(doc, args.format))
    return 0 if result.status == "PASSED" else 1


