#!/usr/bin/env python3
"""Transformer models written in PyTorch and exported to ONNX (random weights).

Usage: models.py OUTDIR [--size tiny|base] [--opset N] [NAME...]

  vit      torchvision's vit_b_16 (base) or a 2-layer ViT on 32x32 images (tiny)
  encoder  a BERT-style encoder: token + position embeddings, nn.TransformerEncoder
           (post-norm, GELU), the first token's state classified (base: BERT-base,
           12 layers, d 768, 12 heads, vocab 30522)
  decoder  a GPT-2-style decoder: pre-norm blocks with a causal mask built in the
           graph (Range, comparison, Where), an LM head of its own (base: GPT-2
           small, 12 layers, d 768, 12 heads, vocab 50257; GPT-2 ties the head
           to the token embedding, which ONNX cannot say: the exporter writes
           two copies, which training would update apart)

Every model is exported with a dynamic batch axis and, for token models, a dynamic
sequence axis; torch.manual_seed(0) fixes the weights. OUTDIR/<name>-<size>.onnx
is written (and skipped when it exists).
"""

import argparse
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

SIZES = {
    # layers, d_model, heads, ff, vocab, max positions, classes
    "tiny": dict(layers=2, d=32, heads=4, ff=64, vocab=97, positions=64,
                 classes=5),
    "base": dict(layers=12, d=768, heads=12, ff=3072, vocab=30522,
                 positions=512, classes=2),
}
GPT_VOCAB = {"tiny": 97, "base": 50257}


class Encoder(nn.Module):
    """BERT-style sequence classifier over int64 token ids [batch, seq]."""

    def __init__(self, layers, d, heads, ff, vocab, positions, classes):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d)
        self.positions = nn.Embedding(positions, d)
        self.norm = nn.LayerNorm(d)
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0,
                                           activation="gelu",
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers,
                                             enable_nested_tensor=False)
        self.classify = nn.Linear(d, classes)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.norm(self.tokens(ids) + self.positions(pos))
        x = self.encoder(x)
        return self.classify(x[:, 0])


class Block(nn.Module):
    """GPT-2 block: pre-norm causal self-attention and MLP."""

    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, ff)
        self.out = nn.Linear(ff, d)

    def forward(self, x, mask):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        shape = (b, t, self.heads, c // self.heads)
        q = q.view(shape).transpose(1, 2)
        k = k.view(shape).transpose(1, 2)
        v = v.view(shape).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        att = att.masked_fill(mask, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class Decoder(nn.Module):
    """GPT-2-style language model: logits [batch, seq, vocab]."""

    def __init__(self, layers, d, heads, ff, vocab, positions, classes=None):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d)
        self.positions = nn.Embedding(positions, d)
        self.blocks = nn.ModuleList(Block(d, heads, ff) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        t = ids.shape[1]
        steps = torch.arange(t, device=ids.device)
        x = self.tokens(ids) + self.positions(steps.unsqueeze(0))
        mask = steps.unsqueeze(0) > steps.unsqueeze(1)  # future positions
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.norm(x))


def tiny_vit():
    import torchvision.models.vision_transformer as vt
    return vt.VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                                num_heads=4, hidden_dim=32, mlp_dim=64,
                                num_classes=5)


def build(name, size):
    cfg = SIZES[size]
    if name == "vit":
        import torchvision.models as tvm
        model = tvm.vit_b_16(weights=None) if size == "base" else tiny_vit()
        side = 224 if size == "base" else 32
        # torchvision zeroes the head: outputs would be 0 whatever came before.
        nn.init.normal_(model.heads.head.weight, std=0.02)
        return model, torch.randn(1, 3, side, side), {0: "batch"}
    if name == "encoder":
        model = Encoder(**cfg)
        vocab = cfg["vocab"]
    else:
        model = Decoder(**dict(cfg, vocab=GPT_VOCAB[size]))
        vocab = GPT_VOCAB[size]
    ids = torch.randint(0, vocab, (2, 16), dtype=torch.int64)
    return model, ids, {0: "batch", 1: "seq"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir")
    parser.add_argument("names", nargs="*", default=["vit", "encoder",
                                                     "decoder"])
    parser.add_argument("--size", choices=SIZES, default="tiny")
    parser.add_argument("--opset", type=int, default=17)
    args = parser.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    for name in args.names:
        if name not in ("vit", "encoder", "decoder"):
            sys.exit(f"unknown model '{name}'")
        path = os.path.join(args.outdir, f"{name}-{args.size}.onnx")
        if os.path.exists(path):
            print(f"{path}: exists, skipped")
            continue
        torch.manual_seed(0)
        model, example, axes = build(name, args.size)
        model.eval()
        out_axes = {0: "batch"} if name != "decoder" else {0: "batch", 1: "seq"}
        # Not under no_grad: PyTorch's fused attention fast path (taken
        # for inference without gradients) has no ONNX export.
        torch.onnx.export(model, example, path + ".tmp",
                          opset_version=args.opset,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": axes, "output": out_axes})
        os.replace(path + ".tmp", path)
        print(f"{path}: {os.path.getsize(path) / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
