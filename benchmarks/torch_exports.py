"""Real PyTorch exports through the compiler: small torch.nn models exported with the legacy
TorchScript exporter (opsets 9, 13 and 17; plain, unfolded, with local functions; scripted models
too) and the dynamo exporter (its default opset 20, opset 23, unoptimised), each parsed, compiled
on ``ref`` and ``cpu`` and compared with ONNX Runtime (rtol = atol = 1e-4; with torch's own
result where ONNX Runtime cannot run the file).

Run: ``python benchmarks/torch_exports.py [--out DIR] [--only NAME,...] [--exporters ...]
[--reuse] [--fixtures MODEL_EXPORTER,...]``. Exits 1 when a file that exported fails.
Needs torch (CPU) and onnxscript; not part of CI (``tests/compiler/onnx/test_torch_exports.py`` replays saved
exports without torch). Weights come from ``torch.manual_seed(0)``; models are in eval mode.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import sys
import traceback
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

RTOL = ATOL = 1e-4
# legacyN: TorchScript exporter at opset N (9: converted to 13 on import); dynamo: the dynamo
# exporter at its default opset; dynamo23: at opset 23 (Attention, RMSNormalization);
# dynamo-raw: without its graph optimiser (sequence ops, unfolded shape chains).
# legacy17-fn: every submodule a model-local function (export_modules_as_functions);
# legacy13-nofold: no constant folding, initializers listed as graph inputs too.
EXPORTERS = ("legacy9", "legacy13", "legacy13-nofold", "legacy17", "legacy17-fn", "dynamo",
             "dynamo23", "dynamo-raw")


# ----- models ---------------------------------------------------------------------------------
class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNetTiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 7, 2, 3, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
        self.layer1 = BasicBlock(8, 8, 1)
        self.layer2 = BasicBlock(8, 16, 2)
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


class MobileBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU6())
        self.dw = nn.Sequential(nn.Conv2d(16, 16, 3, 1, 1, groups=16, bias=False),
                                nn.BatchNorm2d(16), nn.Hardswish())
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(16, 4, 1), nn.ReLU(),
                                nn.Conv2d(4, 16, 1), nn.Hardsigmoid())
        self.pw = nn.Sequential(nn.Conv2d(16, 24, 1, bias=False), nn.BatchNorm2d(24))
        self.head = nn.Linear(24, 5)

    def forward(self, x):
        x = self.stem(x)
        y = self.dw(x)
        y = y * self.se(y)
        y = self.pw(y)
        return self.head(F.adaptive_avg_pool2d(y, 1).flatten(1))


class DenseTiny(nn.Module):
    def __init__(self, growth=4, layers=3):
        super().__init__()
        self.conv0 = nn.Conv2d(3, 8, 3, 1, 1)
        self.layers = nn.ModuleList()
        c = 8
        for _ in range(layers):
            self.layers.append(nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(),
                                             nn.Conv2d(c, growth, 3, 1, 1, bias=False)))
            c += growth
        self.trans = nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, 8, 1),
                                   nn.AvgPool2d(2, 2))

    def forward(self, x):
        feats = [self.conv0(x)]
        for layer in self.layers:
            feats.append(layer(torch.cat(feats, 1)))
        return self.trans(torch.cat(feats, 1))


class InceptionTiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.b1 = nn.Conv2d(4, 4, 1)
        self.b2 = nn.Sequential(nn.Conv2d(4, 3, 1), nn.ReLU(),
                                nn.Conv2d(3, 4, (1, 3), padding=(0, 1)),
                                nn.Conv2d(4, 4, (3, 1), padding=(1, 0)))
        self.b3 = nn.Sequential(nn.AvgPool2d(3, 1, 1, count_include_pad=False), nn.Conv2d(4, 4, 1))
        self.b4 = nn.Sequential(nn.MaxPool2d(3, 1, 1), nn.Conv2d(4, 2, 1))
        self.reduce = nn.AvgPool2d(3, 2, ceil_mode=True)
        self.reduce2 = nn.AvgPool2d(3, 2, padding=1, ceil_mode=True, count_include_pad=True)
        self.reduce3 = nn.MaxPool2d(3, 2, ceil_mode=True)

    def forward(self, x):
        y = torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], 1)
        return self.reduce(y), self.reduce2(y), self.reduce3(y)


class TransformerTiny(nn.Module):
    def __init__(self, d=32, heads=4, activation="gelu"):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d, heads, 64, dropout=0.0, batch_first=True,
                                                activation=activation)
        self.layer2 = nn.TransformerEncoderLayer(d, heads, 64, dropout=0.0, batch_first=True,
                                                 norm_first=True)
        self.mha = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm = nn.LayerNorm(d)
        self.approx = activation == "tanh"

    def forward(self, x, pad_mask):
        # pad_mask: bool [B, S], True = padding
        s = x.shape[1]
        causal = torch.triu(torch.full((s, s), float("-inf")), diagonal=1)
        y = self.layer(x, src_key_padding_mask=pad_mask)
        y = self.layer2(y, src_mask=causal)
        z, w = self.mha(y, y, y, key_padding_mask=pad_mask, need_weights=True)
        z = F.gelu(z, approximate="tanh") if self.approx else F.gelu(z)
        return self.norm(y + z), w


class TransformerTanh(TransformerTiny):
    def __init__(self):
        super().__init__(activation="relu")
        self.approx = True


class BertEmbed(nn.Module):
    def __init__(self, vocab=50, d=32, maxlen=16, types=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(maxlen, d)
        self.typ = nn.Embedding(types, d)
        self.norm = nn.LayerNorm(d, eps=1e-12)
        self.enc = nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, batch_first=True,
                                              activation="gelu")
        self.pool = nn.Linear(d, d)

    def forward(self, input_ids, token_type_ids, attention_mask):
        s = input_ids.shape[1]
        pos = torch.arange(s, device=input_ids.device).unsqueeze(0).expand_as(input_ids)
        h = self.norm(self.tok(input_ids) + self.pos(pos) + self.typ(token_type_ids))
        h = self.enc(h, src_key_padding_mask=attention_mask == 0)
        return h, torch.tanh(self.pool(h[:, 0]))


class LSTMModel(nn.Module):
    def __init__(self, vocab=40, d=16, hidden=24, layers=2, batch_first=True, bidirectional=True):
        super().__init__()
        self.batch_first = batch_first
        self.emb = nn.Embedding(vocab, d)
        self.rnn = nn.LSTM(d, hidden, layers, batch_first=batch_first, bidirectional=bidirectional)
        self.dec = nn.Linear(hidden * (2 if bidirectional else 1), vocab)

    def forward(self, ids):
        x = self.emb(ids if self.batch_first else ids.t())
        y, (h, c) = self.rnn(x)
        return self.dec(y), h, c


class LSTMSeqFirst(LSTMModel):
    def __init__(self):
        super().__init__(batch_first=False, bidirectional=False)


class GRUModel(nn.Module):
    def __init__(self, vocab=40, d=16, hidden=24, layers=2, batch_first=False, bidirectional=True):
        super().__init__()
        self.batch_first = batch_first
        self.emb = nn.Embedding(vocab, d)
        self.rnn = nn.GRU(d, hidden, layers, batch_first=batch_first, bidirectional=bidirectional)
        self.dec = nn.Linear(hidden * (2 if bidirectional else 1), vocab)

    def forward(self, ids, h0):
        x = self.emb(ids if self.batch_first else ids.t())
        y, h = self.rnn(x, h0)
        return self.dec(y), h


class DLRMTiny(nn.Module):
    def __init__(self, tables=3, rows=20, d=8):
        super().__init__()
        self.bot = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, d), nn.ReLU())
        self.bags = nn.ModuleList([nn.EmbeddingBag(rows, d, mode="sum") for _ in range(tables)])
        self.weights = nn.Parameter(torch.randn(rows, d))
        n = tables + 2
        self.register_buffer("li", torch.triu_indices(n, n, offset=1)[0], persistent=False)
        self.register_buffer("lj", torch.triu_indices(n, n, offset=1)[1], persistent=False)
        self.top = nn.Sequential(nn.Linear(d + n * (n - 1) // 2, 16), nn.ReLU(), nn.Linear(16, 1),
                                 nn.Sigmoid())

    def forward(self, dense, sparse, offsets, extra):
        x = self.bot(dense)
        ly = [bag(sparse[i], offsets[i]) for i, bag in enumerate(self.bags)]
        ly.append(torch.index_select(self.weights, 0, extra))
        t = torch.cat([x] + ly, 1).view(x.shape[0], -1, x.shape[1])
        z = torch.bmm(t, t.transpose(1, 2))
        zflat = z[:, self.li, self.lj]
        return self.top(torch.cat([x, zflat], 1))


class UNetTiny(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.inc = nn.Sequential(nn.Conv2d(3, c, 3, 1, 1), nn.GroupNorm(2, c), nn.SiLU())
        self.down = nn.Sequential(nn.Conv2d(c, 2 * c, 3, 2, 1), nn.GroupNorm(4, 2 * c), nn.SiLU())
        self.qkv = nn.Conv2d(2 * c, 6 * c, 1)
        self.up_t = nn.ConvTranspose2d(2 * c, c, 4, 2, 1)
        self.up_t2 = nn.ConvTranspose2d(2 * c, c, 3, 2, 1, output_padding=1)
        self.out = nn.Conv2d(4 * c, 3, 1)
        self.ps = nn.Conv2d(c, 12, 1)

    def forward(self, x):
        a = self.inc(x)
        b = self.down(a)
        n, ch, h, w = b.shape
        q, k, v = self.qkv(b).flatten(2).transpose(1, 2).chunk(3, dim=-1)
        q, k, v = (t.reshape(n, h * w, 2, ch // 2).transpose(1, 2) for t in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v)
        b = b + att.transpose(1, 2).reshape(n, h * w, ch).transpose(1, 2).reshape(n, ch, h, w)
        u1 = F.interpolate(b, scale_factor=2, mode="nearest")[:, :a.shape[1]]
        u2 = F.interpolate(b, size=a.shape[2:], mode="bilinear", align_corners=True)[:, a.shape[1]:]
        u3 = self.up_t(b)
        u4 = self.up_t2(b)
        y = self.out(torch.cat([u1 + u2, u3, u4, a], 1))
        y2 = F.interpolate(y, scale_factor=0.5, mode="bilinear", align_corners=False)
        return y, y2, F.pixel_shuffle(self.ps(a), 2)


class MiscOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, idx, mask):
        y = self.lin(x)                                     # [B, 6, 8]
        y = torch.where(y > 0, y, 0.1 * y).clamp(-1.5, 2.0)
        c = torch.cumsum(y, dim=1)
        vals, ind = torch.topk(c, 3, dim=-1)
        am = torch.argmax(y, dim=-1)
        g = torch.gather(y, 2, idx)                         # idx [B, 6, 2]
        m = y.masked_fill(mask, -3.0)                       # mask [B, 6, 8]
        a, b = torch.chunk(m, 2, dim=-1)
        p, q, r = torch.split(y, [2, 3, 3], dim=-1)
        e = torch.einsum("bij,bkj->bik", a, b)
        rep = p.repeat(1, 1, 2) + q[..., :1].expand(-1, -1, 4)
        s = F.softmax(e, -1) @ r
        return vals, ind, am, g, rep, s, c.mean(dim=(1, 2), keepdim=True)


class DynamicMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 32), nn.LayerNorm(32), nn.GELU(), nn.Linear(32, 4))

    def forward(self, x):
        y = self.net(x)
        return y.reshape(x.shape[0], 2, 2).sum(-1), F.log_softmax(y, -1)


class Audio1d(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 8, 5, padding=2)
        self.bn = nn.BatchNorm1d(8)
        self.prelu = nn.PReLU(8)
        self.inorm = nn.InstanceNorm1d(8, affine=True)
        self.conv2 = nn.Conv1d(8, 8, 3, dilation=2, padding=2, groups=2)
        self.up = nn.Upsample(scale_factor=2, mode="linear")

    def forward(self, x):
        y = self.prelu(self.bn(self.conv(F.pad(x, (2, 2), mode="reflect"))))
        y = F.elu(self.inorm(y)) + F.softplus(y) + F.leaky_relu(y, 0.2)
        y = self.conv2(F.pad(y, (1, 1), mode="replicate"))
        return self.up(y), F.adaptive_max_pool1d(y, 1).squeeze(-1), F.normalize(y, dim=1)


class MiscOps2(nn.Module):
    def forward(self, x, idx):
        # x [B, 4, 6, 6], idx [B, 3] ids in [0, 6)
        f = torch.flip(x, dims=[2]) + torch.roll(x, shifts=2, dims=3)
        srt, order = torch.sort(x.flatten(2), dim=-1, descending=True)
        mx, amx = torch.max(x, dim=1)
        sd = torch.std(x, dim=(2, 3)) + torch.var(x, dim=1).mean((1, 2)).unsqueeze(1)
        y = x.clone()
        y[:, :, 0, :] = 0.5
        upd = torch.zeros(x.shape[0], 6).scatter_add(1, idx, torch.ones(x.shape[0], 3))
        fl = torch.floor(x * 3) + torch.round(x) - torch.remainder(x, 0.7) + torch.sign(x)
        return srt, order, mx, amx, sd, f + y + fl, upd


class FoldUnfold(nn.Module):
    """Im2col / col2im (ONNX Col2Im from opset 18)."""

    def forward(self, x):
        cols = F.unfold(x, kernel_size=2, stride=2)                     # [B, 16, 9]
        cols2 = F.unfold(x, kernel_size=3, padding=1, dilation=1)
        back = F.fold(cols, output_size=(6, 6), kernel_size=2, stride=2)
        back2 = F.fold(cols2, output_size=(6, 6), kernel_size=3, padding=1)
        return back, back2


class LlamaBlock(nn.Module):
    def __init__(self, d=32, heads=4, kv_heads=2):
        super().__init__()
        self.h, self.kv, self.hd = heads, kv_heads, d // heads
        self.norm1 = nn.RMSNorm(d, eps=1e-6)
        self.norm2 = nn.RMSNorm(d, eps=1e-6)
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.gate = nn.Linear(d, 64, bias=False)
        self.upp = nn.Linear(d, 64, bias=False)
        self.down = nn.Linear(64, d, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        self.register_buffer("inv_freq", inv, persistent=False)

    def rope(self, t, cos, sin):
        a, b = t[..., : self.hd // 2], t[..., self.hd // 2:]
        return t * cos + torch.cat([-b, a], -1) * sin

    def forward(self, x):
        bsz, s, d = x.shape
        pos = torch.arange(s, dtype=torch.float32)
        freqs = torch.outer(pos, self.inv_freq)
        emb = torch.cat([freqs, freqs], -1)
        cos, sin = emb.cos(), emb.sin()
        h = self.norm1(x)
        q = self.q(h).view(bsz, s, self.h, self.hd).transpose(1, 2)
        k = self.k(h).view(bsz, s, self.kv, self.hd).transpose(1, 2)
        v = self.v(h).view(bsz, s, self.kv, self.hd).transpose(1, 2)
        q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
        k = k.repeat_interleave(self.h // self.kv, dim=1)
        v = v.repeat_interleave(self.h // self.kv, dim=1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(bsz, s, d))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.upp(h))


class ViTTiny(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.patch = nn.Conv2d(3, d, 4, 4)
        self.cls = nn.Parameter(torch.randn(1, 1, d))
        self.pos = nn.Parameter(torch.randn(1, 17, d) * 0.1)
        layer = nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, batch_first=True,
                                           activation="gelu", norm_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        p = self.patch(x).flatten(2).transpose(1, 2)
        p = torch.cat([self.cls.expand(x.shape[0], -1, -1), p], 1) + self.pos
        h = self.enc(p)
        attn_mask = torch.ones(17, 17, dtype=torch.bool).tril()
        q = h.unsqueeze(1)
        g = F.scaled_dot_product_attention(q, q, q, attn_mask=attn_mask, scale=0.3).squeeze(1)
        return self.head(h[:, 0]), g.mean(1), F.interpolate(x, scale_factor=1.5, mode="bicubic",
                                                            align_corners=False)


class Seq2Seq(nn.Module):
    """Encoder-decoder nn.Transformer with causal and padding masks."""

    def __init__(self, vocab=30, d=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=0)
        self.tf = nn.Transformer(d, 4, 1, 1, 64, dropout=0.0, batch_first=True)
        self.out = nn.Linear(d, vocab)

    def forward(self, src, tgt):
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        h = self.tf(self.emb(src), self.emb(tgt), tgt_mask=causal, src_key_padding_mask=src == 0,
                    memory_key_padding_mask=src == 0, tgt_is_causal=True)
        return F.log_softmax(self.out(h), -1)


class VisionOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1)
        self.lrn = nn.LocalResponseNorm(3)
        self.unshuffle = nn.PixelUnshuffle(2)
        self.bil = nn.Bilinear(8, 8, 4)

    def forward(self, x, grid):
        y = self.lrn(F.relu(self.conv(x)))
        a = F.adaptive_avg_pool2d(y, (3, 3))           # 8x8 -> 3x3: uneven windows
        m = F.adaptive_max_pool2d(y, (2, 2))
        g = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        g2 = F.grid_sample(x, grid, mode="nearest", padding_mode="border", align_corners=True)
        u = self.unshuffle(y)
        pooled = y.mean((2, 3))
        b = self.bil(pooled, pooled.flip(1))
        cs = F.cosine_similarity(pooled, pooled.roll(1, 0), dim=1)
        return a, m, g, g2, u, b, cs, torch.logsumexp(y, dim=1), y.amax((2, 3))


class DetectionOps(nn.Module):
    def forward(self, scores, boxes):
        # scores [B, N], boxes [B, N, 4]
        keep = scores > 0.2
        oh = F.one_hot(scores.argmax(-1), scores.shape[-1])
        cnt = keep.sum(-1)
        anyk = keep.any(-1) & ~keep.all(-1)
        wh = (boxes[..., 2:] - boxes[..., :2]).clamp(min=0)
        area = wh.prod(-1)
        top = boxes.gather(1, scores.topk(3, -1).indices.unsqueeze(-1).expand(-1, -1, 4))
        idx = torch.nonzero(keep[0]).squeeze(1)
        sel = boxes[0].index_select(0, idx)
        lin = torch.linspace(0, 1, 5)
        xs, ys = torch.meshgrid(lin, lin, indexing="ij")
        sc = torch.zeros_like(scores).scatter_reduce(1, scores.argsort(-1)[:, :4],
                                                     scores[:, :4], reduce="amax")
        angle = torch.atan2(boxes[..., 0], boxes[..., 1] + 2)
        return oh, cnt, anyk, area, top, sel, xs + ys, sc, angle


class GreedyDecoder(nn.Module):
    """Scripted control flow (exported by the legacy exporter from torch.jit.script): a
    decoding loop that appends to a list, a data-dependent branch."""

    def __init__(self, vocab: int = 20, d: int = 16):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.cell = nn.Linear(2 * d, d)
        self.out = nn.Linear(d, vocab)

    def forward(self, h):
        tok = torch.zeros_like(h[:, 0]).long()
        outs: list[torch.Tensor] = []
        toks: list[torch.Tensor] = []
        for _ in range(h.size(0) + 3):  # a run-time trip count: an ONNX Loop
            h = torch.tanh(self.cell(torch.cat([self.emb(tok), h], 1)))
            logits = self.out(h)
            if bool(logits.sum() > 0):
                logits = logits * 2.0
            tok = logits.argmax(-1)
            outs.append(logits)
            toks.append(tok)
        return torch.stack(outs, 1), torch.cat(outs, 1), torch.stack(toks, 0), h


class EdgeCases(nn.Module):
    """Outputs that are inputs, buffers or repeated; 0-d, bool, int32 and float64 values;
    an empty slice."""

    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.arange(6, dtype=torch.float32).reshape(2, 3))
        self.lin = nn.Linear(3, 3)

    def forward(self, x, n, small):
        # x [B, 3] float32, n int32 [B], small float64 [B, 3]
        y = self.lin(x)
        total = y.sum()                                   # 0-d
        flag = (y > 0).all(dim=1)                         # bool
        m = (n * 2 + 1).to(torch.int32)                   # int32 arithmetic
        d = small * 2.5 + small.mean()                    # float64
        empty = x[:, 3:]                                  # [B, 0]
        return x, self.table, y, y, total, flag, m, d, empty.sum(1), empty


class ScriptedWhile(nn.Module):
    """Scripted: a while loop on a data-dependent condition, a list indexed in a loop."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        acc = self.lin(x)
        i = 0
        while bool(acc.abs().sum() < 100.0) and i < 20:
            acc = acc * 1.5 + 0.1
            i += 1
        parts = torch.split(acc, 2, dim=1)
        out = parts[0]
        for j in range(1, len(parts)):
            out = out + parts[j] * float(j)
        return acc, out, torch.full((1,), i)


class CondModel(nn.Module):
    """torch.cond: data-dependent branches that the dynamo exporter keeps as an ONNX If."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 6)
        self.b = nn.Linear(6, 6)

    def forward(self, x):
        def yes(t):
            return self.a(t).relu()

        def no(t):
            return self.b(t).sigmoid() - 1.0

        y = torch.cond(x.sum() > 0, yes, no, (x,))
        return y, torch.cond(x.mean() < 10.0, lambda t: t * 2.0, lambda t: t - 1.0, (y,))


class Indexing(nn.Module):
    """Advanced indexing and in-place updates (Gather/GatherND/ScatterND/Where forms)."""

    def forward(self, x, idx, rows):
        # x [B, 5, 6], idx int64 [3] in [0, 6), rows int64 [2] in [0, 5)
        a = x[:, :, idx]                         # index one axis with a tensor
        b = x[:, rows, :][:, :, idx]
        c = x[torch.arange(x.shape[0]), rows[:1].expand(x.shape[0])]  # paired advanced indices
        y = x.clone()
        y[y < 0] = 0.0                           # boolean-mask assignment
        y[:, 1, :] = x[:, 2, :] * 3              # slice assignment
        y[:, :, idx] += 1.0                      # index_put with accumulate
        z = x[..., None, 1:-1:2]                 # None, strided slice
        return a, b, c, y, z, x.unbind(1)[2], x.narrow(2, 1, 3)


class PackedLSTM(nn.Module):
    """nn.LSTM over a packed batch of variable lengths (pack_padded_sequence)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(30, 8)
        self.rnn = nn.LSTM(8, 12, 1, batch_first=True, bidirectional=True)
        self.out = nn.Linear(24, 3)

    def forward(self, ids, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.emb(ids), lengths, batch_first=True,
                                                   enforce_sorted=False)
        y, (h, _) = self.rnn(packed)
        y, _ = nn.utils.rnn.pad_packed_sequence(y, batch_first=True, total_length=ids.shape[1])
        return self.out(y), h


class ScriptedNested(nn.Module):
    """Scripted nested loops, each appending to its own list; the lists read after the loop
    (stacked, last element, length)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        rows: list[torch.Tensor] = []
        for i in range(x.size(0)):
            cols: list[torch.Tensor] = []
            h = x[i]
            for j in range(x.size(1) - 1):
                h = torch.tanh(self.lin(h) + float(j))
                cols.append(h)
            rows.append(torch.stack(cols, 0).sum(0) + cols[-1])
        return torch.stack(rows, 0), rows[-1] * float(len(rows))


class KVCacheStep(nn.Module):
    """One decoding step with a key/value cache: grouped-query attention (``enable_gqa``),
    an additive float mask over the cache, new caches returned."""

    def __init__(self, d=32, heads=4, kv_heads=2):
        super().__init__()
        self.h, self.kv, self.hd = heads, kv_heads, d // heads
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, kv_heads * self.hd)
        self.v = nn.Linear(d, kv_heads * self.hd)
        self.o = nn.Linear(d, d)

    def forward(self, x, past_k, past_v, mask):
        # x [B, T, D]; past_k/v [B, KV, P, hd]; mask [B, 1, T, P + T] additive
        bsz, t, d = x.shape
        q = self.q(x).view(bsz, t, self.h, self.hd).transpose(1, 2)
        k = torch.cat([past_k, self.k(x).view(bsz, t, self.kv, self.hd).transpose(1, 2)], 2)
        v = torch.cat([past_v, self.v(x).view(bsz, t, self.kv, self.hd).transpose(1, 2)], 2)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        return self.o(a.transpose(1, 2).reshape(bsz, t, d)), k, v


# ----- inputs (seeded, ids within range) -------------------------------------------------------
class _TinyBackbone(nn.Module):
    """Two feature maps (strides 4 and 8) for the torchvision detectors below; SSD reads its
    ``out_channels`` per map, Faster R-CNN as one number."""

    def __init__(self, out_channels):
        super().__init__()
        self.out_channels = out_channels
        self.a = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.Conv2d(8, 16, 3, 2, 1), nn.ReLU())
        self.b = nn.Sequential(nn.Conv2d(16, 16, 3, 2, 1), nn.ReLU())

    def forward(self, x):
        from collections import OrderedDict
        a = self.a(x)
        return OrderedDict([("0", a), ("1", self.b(a))])


class _OneImageDetector(nn.Module):
    """A torchvision detector on one image tensor, returning (boxes, labels, scores)."""

    def forward(self, image):
        (found,) = self.model([image])
        return found["boxes"], found["labels"], found["scores"]


class TinySSD(_OneImageDetector):
    """torchvision's SSD (anchors, box coder, per-class score threshold, TopK, batched NMS)
    on a tiny backbone: the real post-processing in a small file."""

    def __init__(self):
        super().__init__()
        from torchvision.models.detection.anchor_utils import DefaultBoxGenerator
        from torchvision.models.detection.ssd import SSD
        self.model = SSD(_TinyBackbone([16, 16]), DefaultBoxGenerator([[2], [2, 3]]), (64, 64), num_classes=5,
                         score_thresh=0.05, detections_per_img=20, topk_candidates=40)


class TinyFasterRCNN(_OneImageDetector):
    """torchvision's Faster R-CNN (RPN proposals with NMS, multi-scale RoIAlign, box head,
    per-class NMS) on a tiny backbone and a 32-wide box head."""

    def __init__(self):
        super().__init__()
        from torchvision.models.detection.anchor_utils import AnchorGenerator
        from torchvision.models.detection.faster_rcnn import FasterRCNN, FastRCNNPredictor, TwoMLPHead
        from torchvision.ops import MultiScaleRoIAlign
        anchors = AnchorGenerator(sizes=((8, 16), (24, 32)), aspect_ratios=((0.5, 1.0), (0.5, 1.0)))
        self.model = FasterRCNN(
            _TinyBackbone(16), rpn_anchor_generator=anchors,
            box_roi_pool=MultiScaleRoIAlign(["0", "1"], output_size=4, sampling_ratio=2),
            box_head=TwoMLPHead(16 * 4 * 4, 32), box_predictor=FastRCNNPredictor(32, 4),
            min_size=64, max_size=64, rpn_pre_nms_top_n_test=60, rpn_post_nms_top_n_test=30,
            box_score_thresh=0.0, box_detections_per_img=15)


def _ids(g, high, *shape):
    return torch.randint(0, high, shape, generator=g)


def inputs_for(name: str, batch: int) -> tuple:
    g = torch.Generator().manual_seed(1)
    if name in ("resnet", "mobilenet", "densenet"):
        return (torch.randn(batch, 3, 32, 32, generator=g),)
    if name == "inception":
        return (torch.randn(batch, 4, 9, 9, generator=g),)
    if name.startswith("transformer"):
        mask = torch.zeros(batch, 7, dtype=torch.bool)
        mask[:, -2:] = True
        return torch.randn(batch, 7, 32, generator=g), mask
    if name == "bert_embed":
        mask = torch.ones(batch, 9, dtype=torch.int64)
        mask[:, -3:] = 0
        return _ids(g, 50, batch, 9), _ids(g, 2, batch, 9), mask
    if name.startswith("lstm"):
        return (_ids(g, 40, batch, 5),)
    if name == "gru":
        return _ids(g, 40, batch, 5), torch.randn(4, batch, 24, generator=g)
    if name == "dlrm":
        return (torch.randn(batch, 4, generator=g), _ids(g, 20, 3, 2 * batch),
                torch.arange(0, 2 * batch, 2).repeat(3, 1), _ids(g, 20, batch))
    if name == "unet":
        return (torch.randn(batch, 3, 16, 16, generator=g),)
    if name == "misc":
        return (torch.randn(batch, 6, 8, generator=g), _ids(g, 8, batch, 6, 2),
                torch.rand(batch, 6, 8, generator=g) > 0.5)
    if name == "dynamic_mlp":
        return (torch.randn(batch, 12, generator=g),)
    if name == "audio1d":
        return (torch.randn(batch, 4, 16, generator=g),)
    if name == "seq2seq":
        src, tgt = _ids(g, 29, batch, 8) + 1, _ids(g, 29, batch, 6) + 1
        src[:, -2:] = 0
        return src, tgt
    if name == "vision":
        grid = torch.rand(batch, 5, 6, 2, generator=g) * 2.2 - 1.1  # a little outside [-1, 1]
        return torch.randn(batch, 4, 8, 8, generator=g), grid
    if name == "detection":
        return torch.rand(batch, 10, generator=g), torch.rand(batch, 10, 4, generator=g) * 10
    if name == "edge":
        return (torch.randn(batch, 3, generator=g), torch.randint(0, 9, (batch,), generator=g,
                                                                  dtype=torch.int32),
                torch.randn(batch, 3, generator=g, dtype=torch.float64))
    if name == "scripted_while":
        return (torch.randn(batch, 4, generator=g),)
    if name == "cond":
        return (torch.randn(batch, 6, generator=g),)
    if name == "indexing":
        return (torch.randn(batch, 5, 6, generator=g), torch.tensor([4, 0, 2]),
                torch.tensor([3, 1]))
    if name == "packed_lstm":
        return _ids(g, 30, batch, 6), torch.tensor([6, 3, 4, 2, 5][:batch])
    if name == "scripted_nested":
        return (torch.randn(batch, 4, generator=g),)
    if name == "kv_cache":
        mask = torch.zeros(batch, 1, 2, 7)
        mask[:, :, 0, -1] = float("-inf")  # the first new token does not see the second
        mask[0, :, :, 0] = -1e4            # nor the first cached position in batch 0
        return (torch.randn(batch, 2, 32, generator=g), torch.randn(batch, 2, 5, 8, generator=g),
                torch.randn(batch, 2, 5, 8, generator=g), mask)
    if name == "scripted":
        return (torch.randn(batch, 16, generator=g),)
    if name == "fold":
        return (torch.randn(batch, 4, 6, 6, generator=g),)
    if name == "misc2":
        return torch.randn(batch, 4, 6, 6, generator=g), _ids(g, 6, batch, 3)
    if name == "llama":
        return (torch.randn(batch, 7, 32, generator=g),)
    if name == "vit":
        return (torch.randn(batch, 3, 16, 16, generator=g),)
    if name in ("tiny_ssd", "tiny_fasterrcnn"):
        return (torch.rand(3, 64, 64, generator=g),)  # one image: detectors take a list of them
    raise KeyError(name)


MODELS = {
    "resnet": ResNetTiny, "mobilenet": MobileBlock, "densenet": DenseTiny,
    "inception": InceptionTiny, "transformer_gelu": TransformerTiny,
    "transformer_tanh": TransformerTanh, "bert_embed": BertEmbed, "lstm": LSTMModel,
    "lstm_seqfirst": LSTMSeqFirst, "gru": GRUModel, "dlrm": DLRMTiny, "unet": UNetTiny,
    "misc": MiscOps, "dynamic_mlp": DynamicMLP, "audio1d": Audio1d, "misc2": MiscOps2,
    "fold": FoldUnfold, "seq2seq": Seq2Seq, "vision": VisionOps, "detection": DetectionOps,
    "scripted": GreedyDecoder, "edge": EdgeCases,
    "scripted_while": ScriptedWhile, "cond": CondModel,
    "indexing": Indexing, "packed_lstm": PackedLSTM,
    "scripted_nested": ScriptedNested, "kv_cache": KVCacheStep,
    "llama": LlamaBlock, "vit": ViTTiny,
    "tiny_ssd": TinySSD, "tiny_fasterrcnn": TinyFasterRCNN,
}
# Models exported with a symbolic batch dimension (first axis of every batch-major input).
DYNAMIC = {"dynamic_mlp", "resnet", "bert_embed", "vit", "llama", "transformer_gelu", "lstm",
           "scripted"}
# ... and also a symbolic sequence length "seq" (axis 1 of every input of rank 2 or more).
DYNAMIC_SEQ = {"bert_embed", "transformer_gelu", "llama", "lstm"}
BATCH = 2


# Given to the legacy exporter as torch.jit.script modules (real loops); dynamo traces them.
SCRIPTED = {"scripted", "scripted_while", "scripted_nested"}


def build(name: str) -> nn.Module:
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    with torch.no_grad():  # non-trivial running statistics so BatchNorm is not an identity
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
    return model


_SCRIPTED_CACHE: dict = {}


def scripted(name: str):
    """``torch.jit.script`` of the model, once per process (scripting a class again after a
    failed export raises "Can't redefine method")."""
    if name not in _SCRIPTED_CACHE:
        _SCRIPTED_CACHE[name] = torch.jit.script(build(name))
    return _SCRIPTED_CACHE[name]


def _names(count: int, prefix: str) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def export(name: str, exporter: str, path: str) -> None:
    model = build(name)
    args = inputs_for(name, BATCH)
    in_names = _names(len(args), "in")
    with torch.no_grad():
        n_out = len(model(*args)) if isinstance(model(*args), tuple) else 1
    out_names = _names(n_out, "out")
    dynamic = name in DYNAMIC
    sink = io.StringIO()
    quiet = contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink)
    with warnings.catch_warnings(), quiet[0], quiet[1]:
        warnings.simplefilter("ignore")
        seq = name in DYNAMIC_SEQ
        if name in SCRIPTED and exporter.startswith("legacy"):
            model = scripted(name)
        if exporter.startswith("legacy"):
            axes = None
            if dynamic:
                axes = {n: {0: "batch"} for n in out_names}
                axes.update({n: {0: "batch", 1: "seq"} if seq and a.ndim > 1 else {0: "batch"}
                             for n, a in zip(in_names, args)})
            torch.onnx.export(model, args, path, dynamo=False, opset_version=int(exporter[6:8]),
                              input_names=in_names, output_names=out_names, dynamic_axes=axes,
                              export_modules_as_functions=exporter.endswith("-fn"),
                              do_constant_folding=not exporter.endswith("-nofold"),
                              keep_initializers_as_inputs=exporter.endswith("-nofold"))
        else:
            shapes = None
            if dynamic:
                batch = torch.export.Dim("batch", min=1, max=64)
                length = torch.export.Dim("seq", min=2, max=64)
                shapes = tuple({0: batch, 1: length} if seq and a.ndim > 1 else {0: batch}
                               for a in args)
            extra = {"opset_version": int(exporter[6:])} if exporter[6:].isdigit() else {}
            if exporter == "dynamo-raw":
                extra["optimize"] = False
            program = torch.onnx.export(model, args, dynamo=True, input_names=in_names,
                                        output_names=out_names, dynamic_shapes=shapes, **extra)
            program.save(path)


# ----- checking --------------------------------------------------------------------------------
def feeds_for(path: str, name: str, batch: int) -> dict:
    import onnx
    model = onnx.load(path, load_external_data=False)
    args = inputs_for(name, batch)
    graph_inputs = [i.name for i in model.graph.input]
    return {n: a.numpy() for n, a in zip(graph_inputs, args)}


def seq_len(name: str, batch: int) -> int:
    return int(inputs_for(name, batch)[0].shape[1])


def max_err(got, want) -> float:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return float("inf")
    if got.size == 0:
        return 0.0
    if want.dtype.kind in "iub":
        return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    # error in units of the tolerance: ≤ 1 passes
    return float(np.max(diff / (ATOL + RTOL * np.abs(want.astype(np.float64)))))


def check(path: str, name: str, batch: int) -> dict:
    import onnxruntime as ort

    import compiler
    row = {"parse": "no", "ref": None, "cpu": None, "status": "FAIL", "error": ""}
    feeds = feeds_for(path, name, batch)
    ort_rejects_file = False
    try:
        try:
            session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        except Exception:
            ort_rejects_file = True
            raise
        want = session.run(None, feeds)
    except Exception as exc:  # noqa: BLE001 - ONNX Runtime rejects some valid exports
        row["error"] = f"ORT failed ({str(exc).splitlines()[0][:80]}...), compared with torch; "
        with torch.no_grad():
            out = build(name)(*inputs_for(name, batch))
        want = [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]
    for target in ("ref", "cpu"):
        try:
            dims = {"seq": seq_len(name, batch)} if name in DYNAMIC_SEQ else None
            program = compiler.parse_onnx(path, batch_size=batch, dims=dims)
            row["parse"] = "ok"
            program.compile(target)
            got = program.run(feeds)
            row[target] = max(max_err(g, w) for g, w in zip(got, want))
            if len(got) != len(want):
                row[target] = float("inf")
        except Exception as exc:  # noqa: BLE001 - the table reports every failure
            row["error"] += f"{target}: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            if os.environ.get("TRACE"):
                traceback.print_exc()
    ok = all(row[t] is not None and row[t] <= 1.0 for t in ("ref", "cpu"))
    # a file that ONNX Runtime will not even load and we cannot run is a broken export
    row["status"] = "PASS" if ok else "BAD-EXPORT" if ort_rejects_file else "FAIL"
    return row


def strip_provenance(model):
    """The model without the exporter's provenance (stack traces and source paths in node
    metadata and doc strings), which says nothing about the graph."""
    def graphs(graph):
        yield graph
        for node in graph.node:
            for a in node.attribute:
                for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    yield from graphs(sub)

    node_lists = [g.node for g in graphs(model.graph)] + [f.node for f in model.functions]
    for nodes in node_lists:
        for node in nodes:
            node.doc_string = ""
            del node.metadata_props[:]
    for item in [model, model.graph, *model.functions]:
        item.doc_string = ""
        del item.metadata_props[:]
    for g in graphs(model.graph):
        for value in [*g.input, *g.output, *g.value_info, *g.initializer]:
            del value.metadata_props[:]
    return model


def save_fixture(path: str, name: str, batch: int, folder: str) -> None:
    """The export and the inputs it was checked with (``<file>.inputs.npz``), for
    ``tests/compiler/onnx/test_torch_exports.py`` (which runs without torch)."""
    import onnx
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, os.path.basename(path))
    onnx.save(strip_provenance(onnx.load(path)), target)
    np.savez(target.removesuffix(".onnx") + ".inputs.npz", **feeds_for(path, name, batch))


def fmt(v) -> str:
    return "-" if v is None else ("inf" if v == float("inf") else f"{v:.3g}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results/torch_exports")
    parser.add_argument("--only", default="")
    parser.add_argument("--exporters", default=",".join(EXPORTERS))
    parser.add_argument("--reuse", action="store_true",
                        help="check the files already in --out instead of exporting again")
    parser.add_argument("--fixtures", default="",
                        help="MODEL_EXPORTER,... to copy with their inputs into --fixtures-dir")
    parser.add_argument("--fixtures-dir", default="tests/fixtures/torch_exports")
    parser.add_argument("--batch", type=int, default=None,
                        help="batch to run (default: 3 for dynamic-batch models, else 2)")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    names = [n for n in args.only.split(",") if n] or list(MODELS)
    exporters = [e for e in args.exporters.split(",") if e]
    print(f"torch {torch.__version__}; errors are max |got-want| / (atol + rtol*|want|), "
          "≤ 1 passes")
    print(f"{'model':18} {'exporter':15} {'opset':>5} {'parse':5} {'ref err':>8} {'cpu err':>8} "
          "status")
    failures = 0
    for name in names:
        for exporter in exporters:
            path = os.path.join(args.out, f"{name}_{exporter}.onnx")
            try:
                if not (args.reuse and os.path.exists(path)):
                    export(name, exporter, path)
            except Exception as exc:  # noqa: BLE001
                print(f"{name:18} {exporter:15} {'':>5} {'-':5} {'-':>8} {'-':>8} EXPORT-FAIL "
                      f"{type(exc).__name__}: {str(exc).splitlines()[0][:100] if str(exc) else ''}")
                continue
            import onnx
            opset = next(o.version for o in onnx.load(path, load_external_data=False).opset_import
                         if o.domain in ("", "ai.onnx"))
            batch = args.batch or (3 if name in DYNAMIC else BATCH)
            row = check(path, name, batch)
            if f"{name}_{exporter}" in args.fixtures.split(","):
                save_fixture(path, name, batch, args.fixtures_dir)
            failures += row["status"] == "FAIL"
            print(f"{name:18} {exporter:15} {opset:>5} {row['parse']:5} {fmt(row['ref']):>8} "
                  f"{fmt(row['cpu']):>8} {row['status']} {row['error']}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
