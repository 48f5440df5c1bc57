#!/usr/bin/env python3
"""Models outside torchvision's classifiers, trained by heterps and by
PyTorch from the same weights.

  others.py ROOT WORK [--models a,b] [--epochs 6] [--batch 16]

For each model of benchmarks/import/other_models.py named in --models (by
default those with a loss here): the ONNX export of PyTorch's model at
seed 0 (batch norms kept, as models.py exports for training) and the same
model built again at seed 0, so both start from the same weights; 64 random inputs (seed 0) with
targets from a fixed function of them (classes from the sign of an
input's mean, or the sign of its first channels as a map), Adam (lr
0.002), --epochs epochs of --batch, in the order heterps' loader shuffles
them (mt19937_64.py, seed 1), PyTorch in train mode.
Prints, per model, the mean loss of the first and last epoch on each side
and their samples/s (the median epoch after the first): the losses agree
where the forward and the backward of every op agree.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "import"))
from mt19937_64 import epoch_order  # noqa: E402

# name -> heterps --loss; the PyTorch loss follows from it.
LOSSES = {"unet_gn": "mse", "dcgan_gen": "mse", "superres": "mse",
          "audio1d": "softmax-ce", "convnext1d": "softmax-ce",
          "mixer": "softmax-ce", "lstm_gru": "softmax-ce"}


def dataset(work, name, shape, out_shape, loss):
    r = np.random.default_rng(0)
    x = r.standard_normal((64, *shape)).astype(np.float32)
    if loss == "mse":
        # The sign of the input's first channels, resized to the output.
        c = out_shape[0]
        src = np.resize(x.reshape(64, -1), (64, int(np.prod(out_shape))))
        y = (src.reshape(64, *out_shape) > 0).astype(np.float32)
        if name == "dcgan_gen":  # tanh output
            y = 2 * y - 1
        del c
    else:
        classes = out_shape[0]
        y = ((x.reshape(64, -1)[:, :32].mean(1) > 0).astype(np.int64) %
             classes)
    xs = os.path.join(work, f"{name}-x.npy")
    ys = os.path.join(work, f"{name}-y.npy")
    np.save(xs, x)
    np.save(ys, y)
    return x, y, xs, ys


def export(work, name):
    """The model at seed 0 as training's benchmark exports them
    (models.py): batch norms kept (an inference export folds them into the
    convolutions before them), constants not folded."""
    import torch
    from other_models import OTHERS
    ctor, shape, opset = OTHERS[name]
    torch.manual_seed(0)
    model = ctor().eval()
    path = os.path.join(work, name + "-train.onnx")
    with torch.set_grad_enabled(opset == 17):
        torch.onnx.export(model, torch.zeros(1, *shape), path,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"},
                                        "output": {0: "batch"}},
                          training=torch.onnx.TrainingMode.PRESERVE,
                          do_constant_folding=False, opset_version=opset)
    return path


def heterps(root, work, name, xs, ys, loss, args):
    model = export(work, name)
    report = os.path.join(work, f"{name}-report.json")
    run = subprocess.run(
        [os.path.join(root, "build", "bin", "heterps-run"), model,
         "--train", "--batch",
         str(args.batch), "--epochs", str(args.epochs), "--optimizer",
         "adam", "--lr", "0.002", "--loss", loss, "--threads", "2",
         "--data", f"inputs={xs},targets={ys}", "--report", report],
        capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"{name}: heterps-run failed: " + run.stderr.strip()[-500:])
    with open(report) as f:
        epochs = json.load(f)["epochs"]
    return ([e["loss"] for e in epochs], [e["samples_per_s"] for e in epochs])


def pytorch(name, x, y, loss, args):
    import torch
    import torch.nn.functional as F
    from other_models import OTHERS
    torch.set_num_threads(2)
    torch.manual_seed(0)
    model = OTHERS[name][0]().train()
    opt = torch.optim.Adam(model.parameters(), lr=0.002)
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    losses, rates = [], []
    for epoch in range(args.epochs):
        total, start = 0.0, time.perf_counter()
        order = torch.tensor(epoch_order(len(x), 1, epoch))
        for i in range(0, len(x), args.batch):
            rows = order[i:i + args.batch]
            out = model(x[rows])
            target = y[rows]
            value = (F.mse_loss(out, target) if loss == "mse"
                     else F.cross_entropy(out, target))
            opt.zero_grad()
            value.backward()
            opt.step()
            total += value.item()
        rates.append(len(x) / (time.perf_counter() - start))
        losses.append(total / (len(x) // args.batch))
    return losses, rates


def main():
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("work")
    p.add_argument("--models", default=",".join(LOSSES))
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch", type=int, default=16)
    args = p.parse_args()
    import torch
    from other_models import OTHERS
    os.makedirs(args.work, exist_ok=True)
    print("| model | loss | heterps first | heterps last | PyTorch first | "
          "PyTorch last | heterps samples/s | PyTorch samples/s | speed-up |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.models.split(","):
        loss = LOSSES[name]
        ctor, shape, _ = OTHERS[name]
        torch.manual_seed(0)
        with torch.no_grad():
            out_shape = ctor().eval()(torch.zeros(1, *shape)).shape[1:]
        x, y, xs, ys = dataset(args.work, name, shape, tuple(out_shape), loss)
        ours, our_rates = heterps(args.root, args.work, name, xs, ys, loss,
                                  args)
        theirs, their_rates = pytorch(name, x, y, loss, args)
        a = float(np.median(our_rates[1:] or our_rates))
        b = float(np.median(their_rates[1:] or their_rates))
        print(f"| {name} | {loss} | {ours[0]:.4f} | {ours[-1]:.4f} | "
              f"{theirs[0]:.4f} | {theirs[-1]:.4f} | {a:.0f} | {b:.0f} | "
              f"{a / b:.2f}x |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
