"""Hugging Face transformers architectures (small configurations, random weights) exported by
both of PyTorch's ONNX exporters and run through the compiler against ONNX Runtime.

Encoders, decoders with causal masks and rotary embeddings (grouped-query attention too),
encoder-decoders, speech and vision transformers: the attention forms real exports carry.
Inputs have padding in the attention mask where the model takes one. Error is
max |ours - ORT| / max |ORT| per output (≤ 1e-4 passes).

Run: ``python benchmarks/transformers_zoo.py [--only NAME,...] [--exporters legacy17,dynamo]
[--targets cpu,ref] [--out DIR] [--reuse]``. Needs torch, transformers and onnxscript (CPU); not part of
CI. Prints a table last; exits 1 when a file that exported fails.

An exporter named ``EXPORTER+ort`` (``--exporters legacy17+ort,dynamo+ort``) passes the export
through ONNX Runtime's transformer optimizer, as projects that ship optimized models do: the file
then carries its contrib operators (Attention, EmbedLayerNormalization, SkipLayerNormalization,
BiasGelu, FastGelu, QuickGelu), which the compiler expands on import (compiler/onnx/contrib).

On a machine without transformers (the GPU machine): ``--export-only DIR`` where transformers is,
then ``--from DIR --targets gpu --modes fp32,fp16`` there, which needs only the compiler (fp16:
compiled with the fp16 option, judged by the suite's fp16 tolerance; zoo_store.py).
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from export_check import (against_targets, export_quietly, failure_row, finish, ort_run,  # noqa: E402
                          zoo_arguments)
from zoo_store import run_stored, save_case  # noqa: E402

SMALL = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
         "vocab_size": 1000, "max_position_embeddings": 128}
SEQ = 16

# name -> (model_type, config overrides, inputs: "text", "text+types", "seq2seq", "audio" (mel
# frames), "waveform" (raw samples), "image")
ZOO = {
    "bert": ("bert", SMALL, "text+types"),
    "distilbert": ("distilbert", {"dim": 64, "n_layers": 2, "n_heads": 4, "hidden_dim": 128,
                                  "vocab_size": 1000, "max_position_embeddings": 128}, "text"),
    "roberta": ("roberta", SMALL, "text"),
    "albert": ("albert", {**SMALL, "embedding_size": 32}, "text+types"),
    "electra": ("electra", {**SMALL, "embedding_size": 32}, "text+types"),
    "deberta-v2": ("deberta-v2", {**SMALL, "relative_attention": True, "position_buckets": 32,
                                  "pos_att_type": ["p2c", "c2p"]}, "text"),
    "gpt2": ("gpt2", {"n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 1000, "n_positions": 128}, "text"),
    "llama": ("llama", {**SMALL, "num_key_value_heads": 2}, "text"),
    "mistral": ("mistral", {**SMALL, "num_key_value_heads": 2, "sliding_window": 8}, "text"),
    "qwen2": ("qwen2", {**SMALL, "num_key_value_heads": 2}, "text"),
    "phi": ("phi", {**SMALL, "partial_rotary_factor": 0.5}, "text"),
    "t5": ("t5", {"d_model": 64, "d_ff": 128, "num_layers": 2, "num_heads": 4, "d_kv": 16,
                  "vocab_size": 1000, "decoder_start_token_id": 0}, "seq2seq"),
    "bart": ("bart", {"d_model": 64, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4,
                      "decoder_attention_heads": 4, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128,
                      "vocab_size": 1000, "max_position_embeddings": 128}, "seq2seq"),
    "whisper": ("whisper", {"d_model": 64, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4,
                            "decoder_attention_heads": 4, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128,
                            "vocab_size": 1000, "num_mel_bins": 80, "max_source_positions": 32,
                            "max_target_positions": 64, "pad_token_id": 1, "bos_token_id": 2,
                            "eos_token_id": 2, "decoder_start_token_id": 2}, "audio"),
    "wav2vec2": ("wav2vec2", {**SMALL, "conv_dim": [32, 32, 32], "conv_stride": [5, 2, 2],
                              "conv_kernel": [10, 3, 3], "num_conv_pos_embeddings": 16,
                              "num_conv_pos_embedding_groups": 4}, "waveform"),
    "vit": ("vit", {**SMALL, "image_size": 32, "patch_size": 8}, "image"),
    "clip_vision": ("clip_vision_model", {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                                          "intermediate_size": 128, "image_size": 32, "patch_size": 8}, "image"),
    "convnext": ("convnext", {"hidden_sizes": [16, 32, 64, 128], "depths": [1, 1, 2, 1],
                              "image_size": 64}, "image"),
}
EXPORTERS = ("legacy17", "dynamo")
# ONNX Runtime's optimizer model type per architecture (``+ort`` exporters); others take "bert",
# its fusions for a plain encoder.
ORT_MODEL_TYPES = {"gpt2": "gpt2", "bart": "bart", "t5": "t5", "vit": "vit", "clip_vision": "clip"}


def wrapped(model, keys):
    """``model`` taking positional tensors, giving its first output (last hidden state)."""
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model, self.keys = model, keys

        def forward(self, *args):
            return self.model(**dict(zip(self.keys, args)))[0]
    return Wrapped()


def build(name: str):
    import torch
    from transformers import AutoConfig, AutoModel
    torch.manual_seed(0)
    model_type, overrides, _ = ZOO[name]
    config = AutoConfig.for_model(model_type, **overrides)
    if hasattr(config, "use_cache"):
        config.use_cache = False  # one forward pass, no key/value cache among the outputs
    return AutoModel.from_config(config, attn_implementation="eager").eval()


def inputs(name: str, config) -> dict:
    import torch
    g = torch.Generator().manual_seed(1)
    kind = ZOO[name][2]
    vocab = getattr(config, "vocab_size", 1000)
    ids = torch.randint(3, vocab, (2, SEQ), generator=g)
    mask = torch.ones(2, SEQ, dtype=torch.int64)
    mask[1, SEQ - 5:] = 0  # the second sequence is padded
    if kind == "text":
        return {"input_ids": ids, "attention_mask": mask}
    if kind == "text+types":
        types = torch.zeros(2, SEQ, dtype=torch.int64)
        types[:, SEQ // 2:] = 1
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    if kind == "seq2seq":
        return {"input_ids": ids, "attention_mask": mask,
                "decoder_input_ids": torch.randint(3, vocab, (2, SEQ // 2), generator=g)}
    if kind == "audio":
        frames = 2 * config.max_source_positions
        return {"input_features": torch.randn(2, config.num_mel_bins, frames, generator=g),
                "decoder_input_ids": torch.randint(3, vocab, (2, SEQ // 2), generator=g)}
    if kind == "waveform":
        return {"input_values": torch.randn(2, 400, generator=g)}
    size = config.image_size
    return {"pixel_values": torch.randn(2, 3, size, size, generator=g)}


def export(name: str, exporter: str, path: str, write: bool = True) -> dict:
    """The export's feeds, exporting to ``path`` unless ``write`` is off (--reuse)."""
    model = build(name)
    feeds = inputs(name, model.config)
    module = wrapped(model, list(feeds)).eval()
    if write:
        base, _, post = exporter.partition("+")
        raw = path + ".raw.onnx" if post else path
        export_quietly(module, tuple(feeds.values()), base, raw, input_names=list(feeds))
        if post == "ort":
            ort_optimized(raw, path, name)
            os.remove(raw)
    return {k: v.numpy() for k, v in feeds.items()}


def ort_optimized(source: str, path: str, name: str) -> None:
    """``source`` through ONNX Runtime's transformer optimizer (its fusions, no graph rewrites of
    its runtime: opt_level 0), written to ``path``."""
    from onnxruntime.transformers.optimizer import optimize_model
    heads, hidden = SMALL["num_attention_heads"], SMALL["hidden_size"]
    optimized = optimize_model(source, model_type=ORT_MODEL_TYPES.get(name, "bert"), num_heads=heads,
                               hidden_size=hidden, opt_level=0)
    optimized.save_model_to_file(path)


def reference(path: str, feeds: dict) -> tuple[dict, list]:
    """The feeds the file takes (an exporter may drop an input the graph ignores) and ONNX
    Runtime's outputs on them."""
    import onnx

    graph_inputs = [i.name for i in onnx.load(path, load_external_data=False).graph.input]
    feeds = {n: feeds[n] for n in graph_inputs}
    return feeds, ort_run(path, feeds)


def check(path: str, feeds: dict, targets: list[str]) -> dict:
    feeds, want = reference(path, feeds)
    return against_targets(path, feeds, want, targets)


def store(root: str, name: str, exporter: str, path: str, feeds: dict) -> dict:
    """--export-only: the file's feeds and ONNX Runtime's outputs stored beside it."""
    feeds, want = reference(path, feeds)
    save_case(root, name, exporter, path, feeds, want)
    return {"status": "STORED", "error": ""}


def main(argv=None) -> int:
    args, names, exporters, targets = zoo_arguments(argv, __doc__, "benchmarks/results/transformers_zoo",
                                                    list(ZOO), EXPORTERS, stored=True)
    if args.from_dir:
        modes = [m for m in args.modes.split(",") if m]
        rows = run_stored(args.from_dir, targets, modes, names=set(args.only.split(",")) - {""})
        return finish(rows, targets, 14, f"\nstored in {args.from_dir}; error = max|ours-ORT|/max|ORT| (fp16 "
                                         "passes within the suite's fp16 rtol/atol)")
    import torch
    import transformers
    transformers.logging.set_verbosity_error()
    rows = []
    for name in names:
        for exporter in exporters:
            path = os.path.join(args.export_only or args.out, f"{name}_{exporter}.onnx")
            try:
                feeds = export(name, exporter, path, write=not (args.reuse and os.path.exists(path)))
            except Exception as exc:  # noqa: BLE001
                rows.append((name, exporter, failure_row("EXPORT-FAIL", exc)))
                print(name, exporter, rows[-1][2], flush=True)
                continue
            try:
                row = (store(args.export_only, name, exporter, path, feeds) if args.export_only
                       else check(path, feeds, targets))
            except Exception as exc:  # noqa: BLE001 - ONNX Runtime refused the export
                row = failure_row("ORT-FAIL", exc)
            rows.append((name, exporter, row))
            print(name, exporter, row, flush=True)
    return finish(rows, targets, 14, f"\ntorch {torch.__version__}, transformers {transformers.__version__}; "
                                     "error = max|ours-ORT|/max|ORT|")


if __name__ == "__main__":
    sys.exit(main())
