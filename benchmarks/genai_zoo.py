"""Decoder LLMs as onnxruntime-genai's model builder writes them, run through the compiler against
ONNX Runtime at each step of generation.

The builder is how Llama, Qwen, Mistral, Phi, Gemma, Granite, OLMo, Nemotron and SmolLM reach ONNX Runtime users: one file per
model, its attention a GroupQueryAttention (key/value cache in and out, rotary embeddings inside,
query/key/value packed), its norms SkipSimplifiedLayerNormalization, its int4 weights MatMulNBits.
Each architecture here is a small configuration with random weights (Hugging Face transformers),
written by the builder in fp32 and int4 for the CPU, then run at four steps with random caches:

- prompt: 2 sequences of 5 tokens, empty cache;
- decode: 2 sequences, 1 token after 6 cached;
- chunk: 1 sequence, 3 tokens after 6 cached (a later chunk of a long prompt);
- long: 1 sequence, 1 token after 70 cached (past the sliding windows, and past Phi-3 LongRoPE's
  original context, where its long factors apply).

Error is max |ours - ORT| / max |ORT| over the logits and every present cache (≤ 1e-4 passes).
Gemma 2's sliding layers carry a window-sized cache (``sliding_window_cache``): its capacity is
the window (genai_config.json), and it holds the latest tokens only.
The int4 files ask for ``accuracy_level`` 4, which lets ONNX Runtime's CPU kernel quantize the
activations to int8 (about 1e-2 from the exact product); the reference for them is ONNX Runtime
on the same file with level 0, the exact dequantized product the compiler computes.

Run: ``python benchmarks/genai_zoo.py [--only NAME,...] [--exporters fp32,int4] [--targets cpu,ref]
[--out DIR] [--reuse]``. Needs torch, transformers and onnxruntime-genai (CPU); not part of CI.
Prints a table last; exits 1 when a file the builder wrote fails.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from export_check import against_targets, failure_row, finish, zoo_arguments  # noqa: E402

SMALL = {"hidden_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 256,
         "num_hidden_layers": 2, "vocab_size": 512, "max_position_embeddings": 256}
# name -> (model_type, config overrides)
ZOO = {
    "llama": ("llama", {}),
    "qwen2": ("qwen2", {}),
    "mistral": ("mistral", {"sliding_window": 8}),
    "qwen3": ("qwen3", {"head_dim": 32}),
    "gemma2": ("gemma2", {"head_dim": 32, "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
                          "sliding_window": 8, "query_pre_attn_scalar": 32}),
    "gemma": ("gemma", {"head_dim": 32}),
    "granite": ("granite", {}),
    "olmo": ("olmo", {}),
    "nemotron": ("nemotron", {"head_dim": 32}),
    "smollm3": ("smollm3", {"pad_token_id": 3, "bos_token_id": 1, "eos_token_id": 2}),
    "phi": ("phi", {"pad_token_id": 3}),
    # The builder takes a Phi-3 whose original context differs from its context for LongRoPE,
    # which without rope_scaling it cannot build: the plain one says they are equal.
    "phi3": ("phi3", {"pad_token_id": 3, "original_max_position_embeddings": 256}),
    # LongRoPE (Phi-3 mini 128k): short factors up to the original context, long ones past it
    # (the "long" step).
    "phi3_longrope": ("phi3", {"pad_token_id": 3, "original_max_position_embeddings": 64, "rope_scaling": {
        "type": "longrope", "long_factor": [1.0 + 0.25 * i for i in range(16)],
        "short_factor": [1.0 + 0.05 * i for i in range(16)]}}),
}
PRECISIONS = ("fp32", "int4")
# step -> (batch, new tokens, cached tokens); "long" goes past sliding windows and LongRoPE's
# original context
STEPS = {"prompt": (2, 5, 0), "decode": (2, 1, 6), "chunk": (1, 3, 6), "long": (1, 1, 70)}


def hugging_face_dir(name: str, root: str) -> str:
    """The architecture as a Hugging Face folder (config, random weights, a word-level tokenizer
    the builder copies): what the builder reads."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast
    folder = os.path.join(root, f"{name}_hf")
    torch.manual_seed(0)
    model_type, overrides = ZOO[name]
    config = AutoConfig.for_model(model_type, **SMALL, **overrides)
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    vocab = {f"t{i}": i for i in range(SMALL["vocab_size"])}
    words = Tokenizer(models.WordLevel(vocab=vocab, unk_token="t0"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=words, unk_token="t0", bos_token="t1", eos_token="t2",
                            pad_token="t3").save_pretrained(folder)
    return folder


def build(name: str, precision: str, root: str) -> str:
    """The builder's model.onnx for ``name`` in ``precision`` (CPU execution provider)."""
    out = os.path.join(root, f"{name}_{precision}")
    done = subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i",
                           hugging_face_dir(name, root), "-o", out, "-p", precision, "-e", "cpu",
                           "-c", os.path.join(root, "cache")], capture_output=True, text=True)
    path = os.path.join(out, "model.onnx")
    if done.returncode or not os.path.exists(path):
        raise RuntimeError((done.stderr.strip().splitlines() or ["no model.onnx"])[-1])
    return path


def step_feeds(path: str, step: str, seed: int = 0) -> dict:
    """Token ids, a full attention mask and random caches for ``step``; the caches' shape from
    the genai_config.json the builder wrote beside the model."""
    import json

    import onnx
    batch, new, cached = STEPS[step]
    with open(os.path.join(os.path.dirname(path), "genai_config.json")) as f:
        decoder = json.load(f)["model"]["decoder"]
    cache_shape = (batch, decoder["num_key_value_heads"], cached, decoder["head_size"])
    window = decoder.get("sliding_window") or {}
    capacity = window.get("window_size", 0) + window.get("cache_slack", 0)   # a window-sized cache
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in onnx.load(path, load_external_data=False).graph.input:
        if value.name == "input_ids":
            feeds[value.name] = rng.integers(4, SMALL["vocab_size"], (batch, new)).astype(np.int64)
        elif value.name == "attention_mask":
            feeds[value.name] = np.ones((batch, cached + new), np.int64)
        elif value.name == "position_ids":
            feeds[value.name] = np.tile(np.arange(cached, cached + new), (batch, 1)).astype(np.int64)
        elif value.name.startswith("past_key_values"):
            sliding = value.type.tensor_type.shape.dim[2].dim_param == "past_sliding_length"
            shape = cache_shape[:2] + (capacity,) + cache_shape[3:] if sliding else cache_shape
            feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
        else:
            raise ValueError(f"input {value.name!r}: no feed for it")
    return feeds


def exact_reference(path: str) -> str:
    """``path`` with every MatMulNBits at accuracy level 0 (the exact dequantized product), saved
    beside it; ``path`` itself when it has none."""
    import onnx
    model = onnx.load(path)
    nodes = [n for n in model.graph.node if n.op_type == "MatMulNBits"]
    if not nodes:
        return path
    for node in nodes:
        for attr in node.attribute:
            if attr.name == "accuracy_level":
                attr.i = 0
    exact = path.replace(".onnx", "_exact.onnx")
    onnx.save(model, exact, save_as_external_data=True, location=os.path.basename(exact) + ".data")
    return exact


def reference(exact: str, feeds: dict) -> list:
    """ONNX Runtime's outputs on ``exact`` (``exact_reference``), with the elements it leaves
    unwritten (a window-sized cache's rows past the ones it holds; the runner's accuracy check
    masks them) as zeros, as the compiler writes them: what is compared is what the operator
    defines."""
    from bot.runner.accuracy import reference_outputs
    return [np.ma.filled(v, 0) for v in reference_outputs(exact, feeds).values()]


def check(path: str, targets: list[str]) -> list[tuple[str, dict]]:
    """Each step of ``path`` on every target, against ONNX Runtime on its exact reference."""
    from bot.runner.worker import symbolic_dims
    exact = exact_reference(path)
    rows = []
    for step in STEPS:
        feeds = step_feeds(path, step)
        want = reference(exact, feeds)
        rows.append((step, against_targets(path, feeds, want, targets, dims=symbolic_dims(path, feeds))))
    return rows


def main(argv=None) -> int:
    args, names, precisions, targets = zoo_arguments(argv, __doc__, "benchmarks/results/genai_zoo", list(ZOO),
                                                     PRECISIONS)
    import onnxruntime_genai
    import transformers
    transformers.logging.set_verbosity_error()
    rows = []
    for name in names:
        for precision in precisions:
            path = os.path.join(args.out, f"{name}_{precision}", "model.onnx")
            try:
                if not (args.reuse and os.path.exists(path)):
                    path = build(name, precision, args.out)
            except Exception as exc:  # noqa: BLE001 - the table reports it
                rows.append((name, precision, failure_row("BUILD-FAIL", exc)))
                continue
            try:
                for step, row in check(path, targets):
                    rows.append((name, f"{precision} {step}", row))
                    print(name, precision, step, row, flush=True)
            except Exception as exc:  # noqa: BLE001 - ONNX Runtime refused the file
                rows.append((name, precision, failure_row("ORT-FAIL", exc)))
    return finish(rows, targets, 10, f"\nonnxruntime-genai {onnxruntime_genai.__version__}, transformers "
                                     f"{transformers.__version__}; error = max|ours-ORT|/max|ORT|")


if __name__ == "__main__":
    sys.exit(main())
