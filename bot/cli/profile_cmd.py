"""``perfbot profile MODEL|ROW``: compile a model on one target and show where its time goes,
instruction by instruction (``compiler.profiling``)."""
from __future__ import annotations

from common.errors import UserError

from bot.cli.options import add_format
from bot.compiling import (check_batch_binds, load_program, out_of_memory_is_one_line, random_feeds,
                           resolve_model)
from reports.profile import render_profile


DESCRIPTION = ("Compile an ONNX model or a suite row on one target, replay it with a clock around "
               "every instruction and print the slowest (a gpu root runs step by step for it, each "
               "step replayed as a CUDA graph of its own where it can be recorded).")


def register(subparsers) -> None:
    p = subparsers.add_parser("profile", description=DESCRIPTION,
                              help="time each instruction (or fused kernel) of a compiled model")
    p.add_argument("model", help="an .onnx file or a row name of the model manifest")
    p.add_argument("--target", default="cpu", choices=("ref", "cpu", "gpu"),
                   help="target to profile (default cpu)")
    p.add_argument("--batch", type=int, metavar="N", help="bind the symbolic batch dimension")
    p.add_argument("--fp16", action="store_true",
                   help="compile in half precision (a suite row of fp16 mode always is)")
    p.add_argument("--runs", type=int, default=5, metavar="N", help="profiled runs (default 5)")
    p.add_argument("--top", type=int, default=20, metavar="N",
                   help="instructions shown in text and Markdown (default 20; JSON has all)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    add_format(p)
    p.set_defaults(func=profile_command)


def profile_command(args) -> int:
    from compiler.profiling import place, profile, run_seconds
    for flag, value in (("--runs", args.runs), ("--top", args.top)):
        if value < 1:
            raise UserError(f"{flag} must be at least 1, got {value}")
    path, row, batch = resolve_model(args.model, args.batch)
    program = load_program(path, batch, getattr(row, "dims", None) or None)
    fp16 = args.fp16 or getattr(row, "mode", "") == "fp16"
    if args.batch is not None:
        check_batch_binds(path, args.batch)
    with out_of_memory_is_one_line(f"compiling {args.model}"):
        program.compile(args.target, fp16=fp16)
    if row is not None:
        from models.inputs import make_feeds
        feeds = make_feeds(row, path, batch=batch, seed=args.seed)
    else:
        feeds = random_feeds(program, args.seed)
    with out_of_memory_is_one_line(f"profiling {args.model}"):
        placed = place(program, feeds)     # copied to the device once for both
        entries = profile(program, placed, runs=args.runs)
        run_us = run_seconds(program, placed) * 1e6
    doc = {"model": args.model, "target": args.target, "batch": batch, "fp16": fp16, "runs": args.runs,
           "run_us": run_us, "entries": entries}
    print(render_profile(doc, args.format, top=args.top))
    return 0
