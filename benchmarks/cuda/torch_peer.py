#!/usr/bin/env python3
"""PyTorch's times on the GPU for the models heterps-cuda-bench measures.

Usage: torch_peer.py [--batches 1,16] [--iterations 50] [--train-batch 32]
                     [--train-steps 20] MODEL...

The torchvision architectures and input sizes of
benchmarks/import/export_torchvision.py (random weights), f32 with TF32
off for convolutions and matrix products (as the CUDA backend computes),
cuDNN autotuning on. Inference: p50 ms of one batch from host memory to
logits in host memory, after 5 warm-up runs.
Training: samples/s of SGD steps (forward, cross-entropy, backward, update).
"""

import argparse
import os
import sys
import time

import torch

# The models and input sizes the ONNX files were exported with (beside this
# file in a bundle, in ../import in the source tree).
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_here, os.path.join(_here, "..", "import")]
from export_torchvision import MODELS  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("models", nargs="+")
    p.add_argument("--batches", default="1,16")
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--train-batch", type=int, default=0)
    p.add_argument("--train-steps", type=int, default=20)
    a = p.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    print("| model | batch | torch ms p50 | samples/s |")
    print("|---|---:|---:|---:|")
    for name in a.models:
        torch.manual_seed(0)
        ctor, size = MODELS[name]
        model = ctor().to(dev).eval()
        for b in [int(x) for x in a.batches.split(",")]:
            x = torch.randn(b, 3, size, size)
            times = []
            with torch.no_grad():
                for i in range(5 + a.iterations):
                    torch.cuda.synchronize()
                    start = time.perf_counter()
                    model(x.to(dev)).cpu()
                    if i >= 5:
                        times.append((time.perf_counter() - start) * 1e3)
            times.sort()
            ms = times[len(times) // 2]
            print(f"| {name} | {b} | {ms:.3f} | {b * 1e3 / ms:.0f} |",
                  flush=True)
        if a.train_batch:
            model.train()
            opt = torch.optim.SGD(model.parameters(), lr=1e-3)
            x = torch.randn(a.train_batch, 3, size, size, device=dev)
            y = torch.arange(a.train_batch, device=dev) % 1000
            loss_fn = torch.nn.CrossEntropyLoss()
            for i in range(3 + a.train_steps):
                if i == 3:
                    torch.cuda.synchronize()
                    start = time.perf_counter()
                opt.zero_grad()
                loss_fn(model(x), y).backward()
                opt.step()
            torch.cuda.synchronize()
            rate = a.train_batch * a.train_steps / (time.perf_counter() - start)
            print(f"| {name} | train {a.train_batch} | {rate:.1f} samples/s |",
                  flush=True)




if __name__ == "__main__":
    main()
