"""Our gpu target against PyTorch on the same machine, interleaved.

For each row with a PyTorch counterpart: build the PyTorch model (random weights), export it to
ONNX here, compile that file with our compiler in a process of its own (``ours_process``: in
PyTorch's process our replays ran in the slow state PyTorch's side-stream warm-up leaves), then
time in rounds, alternating: ours (device buffers in and out, as PyTorch is timed, the child
asked for each sample), torch eager, torch eager replayed as a CUDA graph (batch
1 rows) and torch.compile(mode="reduce-overhead") unless --no-compile. Prints medians and
ratios. fp32 rows: PyTorch as it runs by default (TF32 convolutions, eager and compiled) and eager
with exact fp32 arithmetic; with --torch-exact all of PyTorch runs with TF32 off from the start
(cuDNN and cuBLAS), torch.compile included, so its fp32 figures are exact fp32 against exact fp32
(a process of its own: what torch.compile captured under one setting it keeps).

Rows: the fixed ROWS, torchvision models as `tv:<model>:<batch>:<dtype>` (the video classifiers of
VIDEO too, on clips of 16 frames), transformers in plain
PyTorch (transformer_models.py) as `tx:<bert|gpt2|llama|whisper>:<batch>:<dtype>` at the sequence
length TRANSFORMERS gives. `compile_s` is ours, parse + compile, per row.

    source benchmarks/gpu_env.sh; python3 benchmarks/peers.py [--rows a,b] [--no-compile]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ours_process import OursProcess, host_timer  # noqa: E402
from peers_table import geomean  # noqa: E402


# torchvision's video classifiers: clips of 16 frames at the side their weights were trained on.
VIDEO = {"r3d_18": 112, "mc3_18": 112, "r2plus1d_18": 112, "s3d": 224, "mvit_v2_s": 224, "swin3d_t": 224}
FRAMES = 16


def _vision(name, batch, size=224):
    import torch
    import torchvision
    import torchvision.models.video  # noqa: F401 (the video classifiers' namespace)
    kwargs = {"weights": None}
    if name == "inception_v3":
        kwargs.update(aux_logits=False, init_weights=False)
    if name in VIDEO:
        model = getattr(torchvision.models.video, name)(**kwargs)
        x = torch.randn(batch, 3, FRAMES, VIDEO[name], VIDEO[name])
    else:
        model = getattr(torchvision.models, name)(**kwargs)
        x = torch.randn(batch, 3, size, size)
    _no_zero_parameters(torch, model)
    return model, (x,), ["input"]


def _no_zero_parameters(torch, model):
    """Give parameters initialised to zero (ViT's and Swin's classifier heads) small random values:
    with a zero head every output is the bias, and the accuracy check against PyTorch would pass
    whatever the layers before it computed."""
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1 and not p.any():
                p.copy_(torch.randn(p.shape, generator=generator) * 0.02)


def _bert(batch, seq=128):
    import torch
    from transformers import BertConfig, BertForSequenceClassification
    config = BertConfig(num_labels=2)
    config._attn_implementation = "eager"
    model = BertForSequenceClassification(config)
    ids = torch.randint(0, config.vocab_size, (batch, seq))
    mask = torch.ones(batch, seq, dtype=torch.int64)
    types = torch.zeros(batch, seq, dtype=torch.int64)
    return model, (ids, mask, types), ["input_ids", "attention_mask", "token_type_ids"]


def _wlang(kind, batch, seq=35, vocab=33278, emb=200, hidden=200, layers=2):
    import torch
    from torch import nn

    class WordLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Embedding(vocab, emb)
            self.rnn = getattr(nn, kind)(emb, hidden, layers)
            self.decoder = nn.Linear(hidden, vocab)

        def forward(self, tokens):
            out, _ = self.rnn(self.encoder(tokens))
            return self.decoder(out)
    return WordLM(), (torch.randint(0, vocab, (seq, batch)),), ["tokens"]


# row: (builder, batch, dtype)
ROWS = {
    "torchvision-resnet50": (lambda b: _vision("resnet50", b), 64, "fp32"),
    "torchvision-resnet50_fp16": (lambda b: _vision("resnet50", b), 64, "fp16"),
    "torchvision-densenet121": (lambda b: _vision("densenet121", b), 32, "fp32"),
    "torchvision-densenet121_fp16": (lambda b: _vision("densenet121", b), 32, "fp16"),
    "torchvision-inceptionv3": (lambda b: _vision("inception_v3", b, 299), 32, "fp32"),
    "torchvision-inceptionv3_fp16": (lambda b: _vision("inception_v3", b, 299), 32, "fp16"),
    "torchvision-resnet50_1": (lambda b: _vision("resnet50", b), 1, "fp32"),
    "slim-vgg16_1": (lambda b: _vision("vgg16", b), 1, "fp32"),
    "bert-mrpc-onnx": (lambda b: _bert(b), 8, "fp32"),
    "pytorch-examples-wlang-lstm": (lambda b: _wlang("LSTM", b), 1, "fp32"),
    "pytorch-examples-wlang-gru": (lambda b: _wlang("GRU", b), 1, "fp32"),
}


# Torchvision classification families beyond the suite, one model each: `tv:<model>:<batch>:<dtype>`.
FAMILIES = ["alexnet", "convnext_tiny", "densenet121", "efficientnet_b0", "efficientnet_v2_s", "googlenet",
            "inception_v3", "maxvit_t", "mnasnet1_0", "mobilenet_v2", "mobilenet_v3_large", "regnet_y_400mf",
            "resnet18", "resnext50_32x4d", "shufflenet_v2_x1_0", "squeezenet1_1", "swin_t", "vgg11",
            "vit_b_16", "wide_resnet50_2"]


# The large batch of each family in the grid (issue 24's table where it named one), else 64.
LARGE_BATCH = {"convnext_tiny": 16, "maxvit_t": 16, "swin_t": 16, "vit_b_16": 32, "efficientnet_b0": 32,
               "efficientnet_v2_s": 32, "inception_v3": 32, "densenet121": 32, "resnext50_32x4d": 32,
               "wide_resnet50_2": 32, "vgg11": 32}


GRID_DTYPES = ("fp32", "fp16")


def grid_rows(dtypes=GRID_DTYPES) -> list[str]:
    """Every family at batch 1 and its large batch, in ``dtypes`` (fp32 and fp16): the breadth
    grid. fp32 alone is what the TF32 column needs (PyTorch's default against our fp32)."""
    return [f"tv:{m}:{b}:{d}" for m in FAMILIES for b in (1, LARGE_BATCH.get(m, 64)) for d in GRID_DTYPES
            if d in dtypes]


def grid_part(spec: str, dtypes=GRID_DTYPES) -> list[str]:
    """Part K of N of the grid (``K/N``, K from 1): every N-th row from the K-th, so that each part
    holds small and large models alike and fits one device command. With N odd the parts mix
    batch sizes and dtypes too (each family has four rows in a row)."""
    try:
        k, n = (int(x) for x in spec.split("/"))
    except ValueError:
        raise ValueError(f"--grid wants K/N with 1 <= K <= N, got {spec!r}") from None
    if not 1 <= k <= n:
        raise ValueError(f"--grid wants K/N with 1 <= K <= N, got {spec!r}")
    return grid_rows(dtypes)[k - 1::n]


# Transformers in plain PyTorch (transformer_models.py): `tx:<model>:<batch>:<dtype>`, each at a
# fixed sequence length (Whisper: mel frames).
TRANSFORMERS = {"bert": 128, "gpt2": 256, "llama": 256, "whisper": 3000}


def _transformer(model, batch):
    from transformer_models import build
    return build(model, batch, TRANSFORMERS[model])


def row_spec(name):
    """(builder, batch, dtype) of a fixed row, or of a `tv:<model>:<batch>:<dtype>` or
    `tx:<model>:<batch>:<dtype>` row."""
    if name in ROWS:
        return ROWS[name]
    parts = name.split(":")
    kind, model, batch, dtype = parts if len(parts) == 4 else ("", "", "", "")
    if kind not in ("tv", "tx") or dtype not in ("fp32", "fp16") or not batch.isdigit() or int(batch) < 1 \
            or (kind == "tx" and model not in TRANSFORMERS):
        raise ValueError(f"unknown row {name!r}: a row of ROWS, tv:<model>:<batch>:<fp32|fp16> or "
                         f"tx:<{'|'.join(TRANSFORMERS)}>:<batch>:<fp32|fp16>")
    if kind == "tx":
        return (lambda b: _transformer(model, b)), int(batch), dtype
    size = 299 if model == "inception_v3" else 224
    return (lambda b: _vision(model, b, size)), int(batch), dtype


def decomposed_attention(path):
    """The exported file's op types, checked to hold attention as MatMul + Softmax (the pattern
    the compiler matches), not a fused attention op."""
    import onnx
    ops = {n.op_type for n in onnx.load(path, load_external_data=False).graph.node}
    fused = ops & {"Attention", "MultiHeadAttention", "GroupQueryAttention", "ScaledDotProductAttention"}
    if fused or not {"MatMul", "Softmax"} <= ops:
        raise ValueError(f"{os.path.basename(path)}: attention is not MatMul/Softmax (ops {sorted(ops)})")
    return ops


def on_device(torch, model, inputs, dtype):
    """The model and its inputs on the GPU at the row's dtype (fp16 vision and video models
    channels-last, as PyTorch runs them fastest)."""
    dev = torch.device("cuda")
    model = model.to(dev)
    tin = [t.to(dev) for t in inputs]
    if dtype == "fp16":
        model = model.half()
        tin = [t.half() if t.is_floating_point() else t for t in tin]
        layout = {4: torch.channels_last, 5: torch.channels_last_3d}.get(tin[0].dim())
        if layout is not None:
            model = model.to(memory_format=layout)
            tin = [t.to(memory_format=layout) if t.dim() == tin[0].dim() else t for t in tin]
    return model, tin


def _graphed(torch, fn):
    """``fn`` captured once into a CUDA graph (after warm-up on a side stream); returns replay."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def export_path(name, export_dir=None):
    """Where row ``name``'s ONNX file goes: a fresh folder, or ``export_dir`` when exports are
    kept for the timing process (``--export-dir``, filled by ``--prewarm``)."""
    folder = export_dir or tempfile.mkdtemp()
    return os.path.join(folder, f"{name.replace(':', '_')}.onnx")


def export(name, export_dir=None):
    """Row ``name``'s PyTorch model (eval mode), its inputs, input names, the ONNX file exported at
    opset 17 with the TorchScript exporter, the batch and the dtype. The model and its inputs are
    seeded, so every process builds the same weights: a file exported earlier into ``export_dir``
    (by a warm-up process) is the model this process times, and is not exported again."""
    import torch
    builder, batch, dtype = row_spec(name)
    torch.manual_seed(0)
    model, inputs, input_names = builder(batch)
    model.eval()
    path = export_path(name, export_dir)
    if os.path.exists(path) and os.path.getsize(path) > 0:
        return model, inputs, input_names, path, batch, dtype
    # Eval-mode nn.MultiheadAttention takes a fused fast path the exporter cannot write (ViT).
    if hasattr(torch.backends, "mha"):
        torch.backends.mha.set_fastpath_enabled(False)
    partial = f"{path}.{os.getpid()}.part"    # renamed when whole: a reader never sees half a file
    with torch.no_grad():
        try:
            torch.onnx.export(model, inputs, partial, input_names=input_names, opset_version=17, dynamo=False)
        except TypeError:
            torch.onnx.export(model, inputs, partial, input_names=input_names, opset_version=17)
    if name.startswith("tx:"):
        decomposed_attention(partial)
    os.replace(partial, path)
    return model, inputs, input_names, path, batch, dtype


def warm(name, export_dir, use_compile):
    """Row ``name`` exported into ``export_dir`` and, unless ``use_compile`` is off, compiled by
    torch.compile with three calls, which fills the compile caches (Inductor's FX graph and
    AOTAutograd caches, on disk) that the timing process then reads instead of compiling anew."""
    import torch
    model, inputs, _, _, _, dtype = export(name, export_dir)
    if use_compile:
        tmodel, tin = on_device(torch, model, inputs, dtype)
        with torch.no_grad():
            compiled = torch.compile(tmodel, mode="reduce-overhead")
            for _ in range(3):
                compiled(*tin)
        torch.cuda.synchronize()


def prewarm(names, jobs, export_dir, use_compile, torch_exact):
    """``warm`` for every row, in ``jobs`` processes side by side (round robin), before any row
    is timed: the exports and torch.compile's compilations are CPU work that one process would do
    row after row, about 20 s a torchvision row. Returns the rows whose warm-up failed (the
    timing process then exports and compiles those itself, and reports their errors)."""
    import subprocess
    os.makedirs(export_dir, exist_ok=True)
    env = dict(os.environ)
    # each process runs its own compile workers: a few each, not one per core each
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", str(max(1, (os.cpu_count() or 2) // max(jobs, 1))))
    procs = []
    for k in range(jobs):
        chunk = names[k::jobs]
        if not chunk:
            continue
        cmd = [sys.executable, os.path.abspath(__file__), "--warm-only", "--rows", ",".join(chunk),
               "--export-dir", export_dir] + (["--no-compile"] if not use_compile else []) \
            + (["--torch-exact"] if torch_exact else [])
        procs.append((chunk, subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                              text=True)))
    failed = []
    for chunk, proc in procs:
        out, _ = proc.communicate()
        failed += [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("warm-failed ")]
        if proc.returncode:     # the process itself died (memory, a crash in a library)
            failed.append(f"{','.join(chunk)}: warm-up process exited with {proc.returncode}")
    return failed


def measure(name, rounds, reps, use_compile, log, export_dir=None):
    """One row: ours in a process of its own (``ours_process``), PyTorch here, timed in rounds."""
    model, inputs, input_names, path, batch, dtype = export(name, export_dir)
    with OursProcess(path, batch, dtype, {n: t.numpy() for n, t in zip(input_names, inputs)}) as ours:
        return _measure_against(name, ours, model, inputs, batch, dtype, rounds, reps, use_compile, log)


def _measure_against(name, ours, model, inputs, batch, dtype, rounds, reps, use_compile, log):
    import torch

    result = {"row": name, "batch": batch, "dtype": dtype}
    if name.startswith("tx:"):
        result["seq"] = TRANSFORMERS[name.split(":")[1]]
    # ours parsed and compiled in its own process, the compiler imported before the clock
    result["compile_s"] = ours.compile_s
    if ours.replaced:
        result["ours_replaced_after_tuning"] = True
    tmodel, tin = on_device(torch, model, inputs, dtype)
    with torch.no_grad():
        def eager():
            return tmodel(*tin)
        ref = eager()
        ref = ref.logits if hasattr(ref, "logits") else ref
        mine = ours.output().astype(np.float64)
        result["max_abs_vs_torch"] = float(np.max(np.abs(mine - ref.float().cpu().numpy())))
        # the output's own scale, so that the difference above reads as a relative error too
        result["max_abs_torch_output"] = float(ref.float().abs().max())
        methods = {"eager": eager}
        tf32 = torch.backends.cudnn.allow_tf32      # off for the whole process with --torch-exact
        result["torch_tf32"] = tf32 if dtype == "fp32" else None
        if dtype == "fp32":
            # PyTorch runs fp32 convolutions on TF32 tensor cores by default; our fp32 rows keep
            # fp32 arithmetic (their tolerance needs it). Time PyTorch both ways.
            def eager_exact():
                torch.backends.cudnn.allow_tf32 = False
                try:
                    return tmodel(*tin)
                finally:
                    torch.backends.cudnn.allow_tf32 = tf32
            exact = eager_exact()
            exact = exact.logits if hasattr(exact, "logits") else exact
            result["torch_tf32_vs_exact_max_abs"] = float((ref.float() - exact.float()).abs().max())
            result["max_abs_vs_torch_exact"] = float(np.max(np.abs(mine - exact.float().cpu().numpy())))
            methods["eager_exact"] = eager_exact
        if batch == 1:
            methods["eager_graph"] = _graphed(torch, eager)
            if dtype == "fp32":
                torch.backends.cudnn.allow_tf32 = False
                try:
                    methods["eager_exact_graph"] = _graphed(torch, eager)
                finally:
                    torch.backends.cudnn.allow_tf32 = tf32
        if use_compile:
            t0 = time.perf_counter()
            compiled = torch.compile(tmodel, mode="reduce-overhead")
            for _ in range(3):
                compiled(*tin)
            torch.cuda.synchronize()
            result["torch_compile_s"] = round(time.perf_counter() - t0, 1)
            methods["torch_compile"] = lambda: compiled(*tin)
        sync = torch.cuda.synchronize
        timers = {"ours": lambda: ours.seconds(reps),
                  **{k: (lambda fn=fn: host_timer(fn, sync, reps)) for k, fn in methods.items()}}
        samples = {k: [] for k in timers}
        for _ in range(rounds):
            for k, take in timers.items():
                samples[k].append(take())
    for k, v in samples.items():
        med = statistics.median(v)
        result[f"{k}_rate"] = round(batch / med, 1)
    for k in methods:
        result[f"ratio_vs_{k}"] = round(result["ours_rate"] / result[f"{k}_rate"], 2)
    log.write(json.dumps(result) + "\n")
    log.flush()
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--grid", metavar="K/N", help="part K of N of the family grid instead of --rows "
                    "(grid_rows: every family at batch 1 and its large batch, fp32 and fp16)")
    ap.add_argument("--grid-dtypes", default=",".join(GRID_DTYPES), metavar="D,...",
                    help="the grid's dtypes (fp32 alone: the TF32 column, PyTorch's default against our fp32)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--torch-exact", action="store_true",
                    help="PyTorch with TF32 off for the whole process (eager and torch.compile)")
    ap.add_argument("--export-dir", help="keep each row's ONNX file here and reuse one found there")
    ap.add_argument("--prewarm", type=int, default=0, metavar="J",
                    help="first export every row and run torch.compile on it in J processes side by side "
                    "(fills the compile caches), then time the rows one by one; needs --export-dir")
    ap.add_argument("--warm-only", action="store_true", help=argparse.SUPPRESS)  # a --prewarm process
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args(argv)
    if args.prewarm and not args.export_dir:
        ap.error("--prewarm needs --export-dir")
    if args.torch_exact:
        import torch
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    results = []
    dtypes = tuple(d for d in args.grid_dtypes.split(",") if d)
    if not dtypes or set(dtypes) - set(GRID_DTYPES):
        ap.error(f"--grid-dtypes takes some of {','.join(GRID_DTYPES)}")
    names = grid_part(args.grid, dtypes) if args.grid else args.rows.split(",")
    if args.warm_only:
        for name in names:
            try:
                warm(name, args.export_dir, not args.no_compile)
            except Exception as exc:  # noqa: BLE001 - the timing process measures the row anyway
                print(f"warm-failed {name}: {type(exc).__name__}: {exc}"[:300], flush=True)
        return 0
    if args.prewarm:
        t = time.perf_counter()
        failed = prewarm(names, args.prewarm, args.export_dir, not args.no_compile, args.torch_exact)
        print(f"[{time.perf_counter() - t:6.1f}s] warm-up of {len(names)} rows in {args.prewarm} processes"
              + (f"; failed: {'; '.join(failed)}" if failed else ""), flush=True)
    with open(os.path.join(args.out, "peers.log"), "a") as log:
        for name in names:
            t = time.perf_counter()
            try:
                r = measure(name, args.rounds, args.reps, not args.no_compile, log, args.export_dir)
            except Exception as exc:  # noqa: BLE001 - one row's failure is that row's line
                r = {"row": name, "error": f"{type(exc).__name__}: {exc}"[:300]}
                log.write(json.dumps(r) + "\n")
            print(f"[{time.perf_counter() - t:6.1f}s] {json.dumps(r)}", flush=True)
            results.append(r)
    cols = ["ours_rate", "eager_rate", "eager_exact_rate", "eager_graph_rate", "eager_exact_graph_rate",
            "torch_compile_rate", "ratio_vs_eager", "ratio_vs_eager_exact", "ratio_vs_eager_graph",
            "ratio_vs_eager_exact_graph", "ratio_vs_torch_compile", "compile_s", "torch_compile_s"]
    print(f"{'row':30s} " + " ".join(f"{c.replace('_rate', '').replace('ratio_vs_', '/')[:12]:>12s}" for c in cols))
    for r in results:
        print(f"{r['row']:30s} " + " ".join(f"{r.get(c, '-')!s:>12s}" for c in cols))
    for key in ("ratio_vs_eager", "ratio_vs_eager_exact", "ratio_vs_torch_compile"):
        ratios = [r[key] for r in results if key in r]
        if ratios:
            print(f"geomean ours{key[5:]} over {len(ratios)} rows: {geomean(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
