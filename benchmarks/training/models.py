"""Models of the training benchmark, and PyTorch's training throughput on them.

  models.py export NAME OUT.onnx [--seed S]
      Writes NAME (fashion_cnn or a torchvision classification model;
      GoogLeNet and Inception-v3 without their auxiliary heads) with
      PyTorch's seeded initial weights, the batch dimension dynamic. Batch
      norms are kept as BatchNormalization nodes (not folded into the
      convolutions, which an inference export does) and dropouts as Dropout
      nodes, so that `heterps-run --train` trains what PyTorch trains.
  models.py throughput NAME --batch B [--threads T --steps N --warmup W]
      Times N training steps (forward, softmax cross-entropy, backward, SGD
      with momentum) of NAME in PyTorch on random images after W untimed ones
      and prints one JSON line: samples/s and seconds per step. The Fashion
      CNN reads the first Fashion-MNIST training images.
"""

import argparse
import json
import os
import sys
import time

import torch
import torchvision
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fashion_cnn import FashionCNN, load  # noqa: E402

IMAGE = {"fashion_cnn": (1, 28, 28), "inception_v3": (3, 299, 299)}
CLASSES = {"fashion_cnn": 10}


def build(name):
    if name == "fashion_cnn":
        return FashionCNN()
    if name in ("googlenet", "inception_v3"):
        # Without the auxiliary heads: training mode would return them too
        # (a tuple), and the exported eval graph does not have them.
        return getattr(torchvision.models, name)(num_classes=1000,
                                                 aux_logits=False,
                                                 init_weights=True)
    return getattr(torchvision.models, name)(num_classes=1000)


def image_shape(name):
    return IMAGE.get(name, (3, 224, 224))


def export(args):
    torch.manual_seed(args.seed)
    model = build(args.name).eval()
    # Dropout in training mode exports as a Dropout node; batch norms stay
    # in inference form with their running statistics.
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.train()
    torch.onnx.export(model, torch.zeros(1, *image_shape(args.name)),
                      args.output, input_names=["image"],
                      output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"},
                                    "logits": {0: "batch"}},
                      training=torch.onnx.TrainingMode.PRESERVE,
                      do_constant_folding=False, opset_version=13)
    print(f"wrote {args.output}")


def throughput(args):
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = build(args.name).train()
    classes = CLASSES.get(args.name, 1000)
    n = args.batch * (args.warmup + args.steps)
    if args.name == "fashion_cnn":
        # Real images: PyTorch runs 2-3x slower on uniform random ones.
        x, y = load("train")
        x, y = x[:n], y[:n]
    else:
        x = torch.rand(n, *image_shape(args.name))
        y = torch.randint(0, classes, (n,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step(i):
        batch = slice(i * args.batch, (i + 1) * args.batch)
        opt.zero_grad()
        loss_fn(model(x[batch]), y[batch]).backward()
        opt.step()

    for i in range(args.warmup):
        step(i)
    start = time.perf_counter()
    for i in range(args.warmup, args.warmup + args.steps):
        step(i)
    seconds = (time.perf_counter() - start) / args.steps
    print(json.dumps({"model": args.name, "batch": args.batch,
                      "threads": args.threads, "seconds_per_step": seconds,
                      "samples_per_s": args.batch / seconds,
                      "framework": f"pytorch {torch.__version__}"}))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export")
    e.add_argument("name")
    e.add_argument("output")
    e.add_argument("--seed", type=int, default=1)
    t = sub.add_parser("throughput")
    t.add_argument("name")
    t.add_argument("--batch", type=int, required=True)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--steps", type=int, default=5)
    t.add_argument("--warmup", type=int, default=2)
    args = p.parse_args()
    export(args) if args.command == "export" else throughput(args)


if __name__ == "__main__":
    main()
