"""Transformer architectures in plain PyTorch for peers.py's `tx:<model>:<batch>:<dtype>` rows.

No transformers dependency (the GPU machine lacks it); each module follows the op structure the
real model's TorchScript export has: attention as MatMul / Softmax over an additive or selected
mask (never the fused scaled-dot-product path), activations written out as their formulas.

- bert: BERT-base encoder, hidden 768, 12 layers, 12 heads, post-LN, GELU (erf), padding mask
  added to the scores, token types; sequence 128.
- gpt2: GPT-2 small, 768, 12 layers, pre-LN, causal mask by selection, GELU-tanh ("gelu_new"),
  language-model head tied to the token embedding; sequence 256.
- llama: Llama-style decoder, hidden 1024, 8 layers, 16 heads, grouped-query attention with 4
  key/value heads, RMSNorm, rotary embeddings, SwiGLU MLP, causal; sequence 256.
- whisper: Whisper-base encoder, 2 convolutions over 80 mel bins x 3000 frames, sinusoidal
  positions, 6 pre-LN layers of 8 heads, GELU.

Weights are drawn as Hugging Face initialises them (normal, std 0.02; zero biases), seeded.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

# Additive mask value for padded keys (BERT's exports carry -10000, which fp16 holds).
MASK_VALUE = -10000.0


def _init(model: nn.Module) -> nn.Module:
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Embedding, nn.Conv1d)):
            nn.init.normal_(m.weight, std=0.02)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)
    return model


def _heads(x, n):
    """[B, S, n*d] -> [B, n, S, d]."""
    b, s, _ = x.shape
    return x.view(b, s, n, -1).transpose(1, 2)


def _merge(x):
    """[B, n, S, d] -> [B, S, n*d]."""
    b, n, s, d = x.shape
    return x.transpose(1, 2).reshape(b, s, n * d)


def _attend(q, k, v, bias=None, causal=None):
    """softmax(q k^T / sqrt(d) + bias, masked where ``causal`` is False) v, as MatMul/Softmax."""
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal is not None:
        scores = torch.where(causal, scores, torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype))
    if bias is not None:
        scores = scores + bias
    return torch.matmul(torch.softmax(scores, dim=-1), v)


def _causal(s: int) -> torch.Tensor:
    return torch.tril(torch.ones(s, s, dtype=torch.bool)).view(1, 1, s, s)


class BertLayer(nn.Module):
    def __init__(self, d=768, heads=12, ff=3072):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
        self.up, self.down = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x, bias):
        ctx = _attend(_heads(self.q(x), self.heads), _heads(self.k(x), self.heads),
                      _heads(self.v(x), self.heads), bias=bias)
        x = self.ln1(x + self.o(_merge(ctx)))
        return self.ln2(x + self.down(F.gelu(self.up(x))))


class Bert(nn.Module):
    def __init__(self, vocab=30522, d=768, layers=12, positions=512):
        super().__init__()
        self.words, self.positions = nn.Embedding(vocab, d), nn.Embedding(positions, d)
        self.types = nn.Embedding(2, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(d) for _ in range(layers))

    def forward(self, input_ids, attention_mask, token_type_ids):
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.ln(self.words(input_ids) + self.positions(pos)[None] + self.types(token_type_ids))
        bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * MASK_VALUE
        for layer in self.layers:
            x = layer(x, bias)
        return x


def _gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Gpt2Block(nn.Module):
    def __init__(self, d=768, heads=12):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x, causal):
        q, k, v = self.qkv(self.ln1(x)).split(x.shape[-1], dim=2)
        ctx = _attend(_heads(q, self.heads), _heads(k, self.heads), _heads(v, self.heads), causal=causal)
        x = x + self.proj(_merge(ctx))
        return x + self.out(_gelu_new(self.fc(self.ln2(x))))


class Gpt2(nn.Module):
    def __init__(self, vocab=50257, d=768, layers=12, positions=1024):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(positions, d)
        self.blocks = nn.ModuleList(Gpt2Block(d) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.register_buffer("causal", _causal(positions), persistent=False)

    def forward(self, input_ids):
        s = input_ids.shape[1]
        x = self.wte(input_ids) + self.wpe(torch.arange(s, device=input_ids.device))[None]
        causal = self.causal[:, :, :s, :s]
        for block in self.blocks:
            x = block(x, causal)
        return torch.matmul(self.ln_f(x), self.wte.weight.t())  # the tied language-model head


class RmsNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def _rotate(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class LlamaLayer(nn.Module):
    def __init__(self, d=1024, heads=16, kv_heads=4, ff=2816):
        super().__init__()
        self.heads, self.kv_heads, hd = heads, kv_heads, d // heads
        self.q, self.o = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.k, self.v = nn.Linear(d, kv_heads * hd, bias=False), nn.Linear(d, kv_heads * hd, bias=False)
        self.gate, self.up = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False)
        self.down = nn.Linear(ff, d, bias=False)
        self.norm1, self.norm2 = RmsNorm(d), RmsNorm(d)

    def _repeat(self, x):
        """Grouped-query attention: each key/value head serves heads / kv_heads query heads."""
        b, n, s, d = x.shape
        rep = self.heads // self.kv_heads
        return x[:, :, None].expand(b, n, rep, s, d).reshape(b, n * rep, s, d)

    def forward(self, x, cos, sin, bias):
        h = self.norm1(x)
        q = _rotate(_heads(self.q(h), self.heads), cos, sin)
        k = _rotate(_heads(self.k(h), self.kv_heads), cos, sin)
        ctx = _attend(q, self._repeat(k), self._repeat(_heads(self.v(h), self.kv_heads)), bias=bias)
        x = x + self.o(_merge(ctx))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Llama(nn.Module):
    def __init__(self, vocab=32000, d=1024, layers=8, heads=16, positions=2048, theta=10000.0):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(LlamaLayer(d, heads) for _ in range(layers))
        self.norm, self.head = RmsNorm(d), nn.Linear(d, vocab, bias=False)
        hd = d // heads
        inv = 1.0 / theta ** (torch.arange(0, hd, 2).float() / hd)
        angles = torch.outer(torch.arange(positions).float(), inv)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, input_ids):
        s = input_ids.shape[1]
        x = self.embed(input_ids)
        cos, sin = self.cos[:s].to(x.dtype), self.sin[:s].to(x.dtype)
        bias = torch.triu(torch.full((s, s), MASK_VALUE, dtype=x.dtype, device=x.device), 1)
        for layer in self.layers:
            x = layer(x, cos, sin, bias)
        return self.head(self.norm(x))


def _sinusoids(length, channels):
    step = math.log(10000) / (channels // 2 - 1)
    inv = torch.exp(-step * torch.arange(channels // 2).float())
    t = torch.arange(length).float()[:, None] * inv[None]
    return torch.cat([t.sin(), t.cos()], dim=1)


class WhisperLayer(nn.Module):
    def __init__(self, d=512, heads=8, ff=2048):
        super().__init__()
        self.heads = heads
        self.q, self.v, self.o = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.k = nn.Linear(d, d, bias=False)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x):
        h = self.ln1(x)
        ctx = _attend(_heads(self.q(h), self.heads), _heads(self.k(h), self.heads), _heads(self.v(h), self.heads))
        x = x + self.o(_merge(ctx))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class WhisperEncoder(nn.Module):
    def __init__(self, mels=80, d=512, layers=6, positions=1500):
        super().__init__()
        self.conv1 = nn.Conv1d(mels, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.register_buffer("positions", _sinusoids(positions, d), persistent=False)
        self.layers = nn.ModuleList(WhisperLayer(d) for _ in range(layers))
        self.ln = nn.LayerNorm(d)

    def forward(self, input_features):
        x = F.gelu(self.conv2(F.gelu(self.conv1(input_features)))).transpose(1, 2)
        x = x + self.positions[:x.shape[1]].to(x.dtype)
        for layer in self.layers:
            x = layer(x)
        return self.ln(x)


def _tokens(batch, seq, vocab, g):
    return torch.randint(0, vocab, (batch, seq), generator=g)


def build(model: str, batch: int, seq: int):
    """(module in eval mode, example inputs, input names) of one architecture."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    if model == "bert":
        mask = torch.ones(batch, seq, dtype=torch.int64)
        mask[1::2, seq - seq // 4:] = 0  # every other sequence is padded
        types = torch.zeros(batch, seq, dtype=torch.int64)
        types[:, seq // 2:] = 1
        return (_init(Bert()).eval(), (_tokens(batch, seq, 30522, g), mask, types),
                ["input_ids", "attention_mask", "token_type_ids"])
    if model == "gpt2":
        return _init(Gpt2()).eval(), (_tokens(batch, seq, 50257, g),), ["input_ids"]
    if model == "llama":
        return _init(Llama()).eval(), (_tokens(batch, seq, 32000, g),), ["input_ids"]
    if model == "whisper":
        return _init(WhisperEncoder()).eval(), (torch.randn(batch, 80, seq, generator=g),), ["input_features"]
    raise ValueError(f"unknown transformer {model!r}")
