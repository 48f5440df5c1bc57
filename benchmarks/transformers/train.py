#!/usr/bin/env python3
"""heterps-run --train against PyTorch on the transformer models.

Usage: train.py ROOT WORK curve [--epochs 4] [--lr 0.05]
       train.py ROOT WORK speed [--models encoder,decoder] [--size base]
                               [--batch 8] [--seq 128] [--steps 3]
                               [--threads 2]

curve: the tiny decoder (models.py) trained by both from the same initial
  weights (torch.manual_seed(0), exported to ONNX) on the same random token
  batches in the same order (the runtime's shuffle, mt19937_64.py), plain
  SGD, softmax cross-entropy over every next token; per-epoch mean loss of
  each and their relative difference.
speed: training samples/s of each model at one batch size: heterps epoch 2
  of --steps steps (epoch 1 makes the primitives), PyTorch the same steps
  after one warm-up step; SGD, classification loss for the encoder and
  next-token loss for the decoder, --threads threads both.
ROOT is the repository (build in ROOT/build); WORK caches models and data.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "training"))
sys.path.insert(0, HERE)
import models  # noqa: E402
from mt19937_64 import epoch_order  # noqa: E402

# PyTorch's activations above glibc's mmap threshold page-fault on every
# step otherwise (see benchmarks/training/bench.py).
os.environ.setdefault("MALLOC_MMAP_THRESHOLD_", "67108864")


def export(work, name, size):
    path = os.path.join(work, f"{name}-{size}.onnx")
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(HERE, "models.py"), work,
                        name, "--size", size], check=True,
                       capture_output=True)
    torch.manual_seed(0)
    model, _, _ = models.build(name, size)
    return path, model


def token_data(work, name, vocab, n, seq, classes=None):
    """Random ids; next-token targets, or a class per sample."""
    rng = np.random.default_rng(1)
    ids = rng.integers(0, vocab, (n, seq + 1), dtype=np.int64)
    x = ids[:, :seq]
    y = ids[:, 1:] if classes is None else rng.integers(0, classes, (n,))
    xp, yp = (os.path.join(work, f"{name}-{k}.npy") for k in ("x", "y"))
    np.save(xp, x)
    np.save(yp, y.astype(np.int64))
    return x, y.astype(np.int64), f"inputs={xp},targets={yp}"


def heterps_train(a, model, data, batch, epochs, lr, threads, report):
    run = a.heterps_run or os.path.join(a.root, "build", "bin", "heterps-run")
    cmd = [run, model, "--train",
           "--data", data, "--batch", str(batch), "--epochs", str(epochs),
           "--lr", str(lr), "--seed", "1", "--report", report]
    if threads:
        cmd += ["--threads", str(threads)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.load(open(report))["epochs"]


def loss_of(model, x, y):
    out = model(x)
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def curve(a):
    path, model = export(a.work, "decoder", "tiny")
    x, y, data = token_data(a.work, "decoder", models.GPT_VOCAB["tiny"], 64,
                            16)
    ours = heterps_train(a, path, data, 8, a.epochs, a.lr, 0,
                         os.path.join(a.work, "curve.json"))
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    print("| epoch | heterps mean loss | PyTorch mean loss | rel diff |")
    print("|---:|---:|---:|---:|")
    for epoch in range(a.epochs):
        order = torch.tensor(epoch_order(len(x), 1, epoch))
        total = 0.0
        for s in range(0, len(x), 8):
            idx = order[s:s + 8]
            opt.zero_grad()
            loss = loss_of(model, xt[idx], yt[idx])
            loss.backward()
            opt.step()
            total += loss.item()
        theirs = total / (len(x) // 8)
        mine = ours[epoch]["loss"]
        print("| %d | %.6f | %.6f | %.1e |" % (
            epoch + 1, mine, theirs, abs(mine - theirs) / abs(theirs)))


def speed(a):
    torch.set_num_threads(a.threads)
    print("| model | batch | seq | heterps samples/s | PyTorch samples/s "
          "| speed-up |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in a.models.split(","):
        path, model = export(a.work, name, a.size)
        cfg = models.SIZES[a.size]
        n = a.batch * a.steps
        vocab = models.GPT_VOCAB[a.size] if name == "decoder" else cfg["vocab"]
        classes = cfg["classes"] if name == "encoder" else None
        x, y, data = token_data(a.work, name, vocab, n, a.seq, classes)
        ours = heterps_train(a, path, data, a.batch, 2, 0.01, a.threads,
                             os.path.join(a.work, "speed.json"))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        for step in range(a.steps + 1):
            if step == 1:
                start = time.perf_counter()
            idx = slice((step % a.steps) * a.batch,
                        (step % a.steps + 1) * a.batch)
            opt.zero_grad()
            loss_of(model, xt[idx], yt[idx]).backward()
            opt.step()
        theirs = n / (time.perf_counter() - start)
        mine = ours[1]["samples_per_s"]
        print("| %s-%s | %d | %d | %.2f | %.2f | %.2fx |" % (
            name, a.size, a.batch, a.seq, mine, theirs, mine / theirs),
            flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root")
    p.add_argument("work")
    p.add_argument("what", choices=["curve", "speed"])
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--models", default="encoder,decoder")
    p.add_argument("--size", default="base", choices=models.SIZES)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--heterps-run", help="the binary (default: ROOT/build/bin/"
                   "heterps-run)")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    curve(a) if a.what == "curve" else speed(a)


if __name__ == "__main__":
    main()
