#!/usr/bin/env python3
"""LSTM and GRU trained by heterps (unrolled at import) and by PyTorch.

  recurrent.py ROOT WORK [--epochs 12] [--batch 32] [--lr 0.005]

The model is other_models.py's lstm_gru (a two-layer LSTM and a
bidirectional GRU over 20 steps of 16 features, the last step classified
into 3 classes). The task is learnable: the class is whether feature 0's
mean over the steps is above 0, plus whether feature 1's is above 0.3,
on 512 standard-normal sequences (seed 0). Both train with Adam from
their own random initialisations (ONNX export of PyTorch's seed 0 for
heterps, seed 1 for PyTorch's run: the same architecture, not the same
weights; heterps shuffles the samples each epoch, PyTorch takes them in
order). Prints per-epoch mean loss and training accuracy side by side,
and each side's median samples/s over the epochs after the first: that
the unrolled form trains as the fused one does, and at what speed.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "import"))


def dataset(work):
    r = np.random.default_rng(0)
    x = r.standard_normal((512, 20, 16)).astype(np.float32)
    y = ((x[:, :, 0].mean(1) > 0).astype(np.int64) +
         (x[:, :, 1].mean(1) > 0.3))
    xs, ys = os.path.join(work, "seq-x.npy"), os.path.join(work, "seq-y.npy")
    np.save(xs, x)
    np.save(ys, y.astype(np.int64))
    return x, y, xs, ys


def heterps(root, work, xs, ys, args):
    model = os.path.join(work, "lstm_gru.onnx")
    subprocess.run([sys.executable,
                    os.path.join(root, "benchmarks", "import",
                                 "export_torchvision.py"), work, "lstm_gru"],
                   check=True, capture_output=True)
    report = os.path.join(work, "lstm_gru-report.json")
    run = subprocess.run(
        [os.path.join(root, "build", "bin", "heterps-run"), model, "--train",
         "--batch", str(args.batch), "--epochs", str(args.epochs),
         "--optimizer", "adam", "--lr", str(args.lr), "--threads", "2",
         "--data", f"inputs={xs},targets={ys}", "--report", report],
        capture_output=True, text=True)
    if run.returncode:
        sys.exit("heterps-run failed: " + run.stderr.strip()[-500:])
    with open(report) as f:
        epochs = json.load(f)["epochs"]
    return ([(e["loss"], e["train_accuracy"]) for e in epochs],
            [e["samples_per_s"] for e in epochs])


def pytorch(x, y, args):
    import torch
    import torch.nn.functional as F
    from other_models import Recurrent
    torch.set_num_threads(2)
    torch.manual_seed(1)
    model = Recurrent()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    x, y = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))
    rows, rates = [], []
    for _ in range(args.epochs):
        total, correct, start = 0.0, 0, time.perf_counter()
        for i in range(0, len(x), args.batch):
            out = model(x[i:i + args.batch])
            loss = F.cross_entropy(out, y[i:i + args.batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            correct += (out.argmax(1) == y[i:i + args.batch]).sum().item()
        rates.append(len(x) / (time.perf_counter() - start))
        rows.append((total / (len(x) // args.batch), correct / len(x)))
    return rows, rates


def main():
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("work")
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.005)
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    x, y, xs, ys = dataset(args.work)
    ours, our_rates = heterps(args.root, args.work, xs, ys, args)
    theirs, their_rates = pytorch(x, y, args)
    # The median epoch after the first (which creates the primitives).
    our_rate = float(np.median(our_rates[1:] or our_rates))
    their_rate = float(np.median(their_rates[1:] or their_rates))
    print("| epoch | heterps loss | heterps accuracy | PyTorch loss | "
          "PyTorch accuracy |")
    print("|---:|---:|---:|---:|---:|")
    for e, ((la, aa), (lb, ab)) in enumerate(zip(ours, theirs), 1):
        print(f"| {e} | {la:.4f} | {aa:.4f} | {lb:.4f} | {ab:.4f} |")
    print(f"\nsamples/s, median epoch after the first: heterps {our_rate:.0f}, "
          f"PyTorch {their_rate:.0f} ({our_rate / their_rate:.2f}x)")


if __name__ == "__main__":
    sys.exit(main())
