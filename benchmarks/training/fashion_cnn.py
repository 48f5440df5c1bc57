"""The Fashion-MNIST CNN of the training benchmark, and its PyTorch reference.

  fashion_cnn.py export OUT.onnx [--seed S]
      Writes the model with PyTorch's seeded initial weights: two 5x5
      convolutions (1->16->32 channels, ReLU, 2x2 max pooling) and a linear
      classifier over 10 classes; the batch dimension is dynamic.
  fashion_cnn.py train MODEL.onnx [--epochs N --batch B --lr X --momentum M
                                   --seed S --threads T --report FILE.json]
      Trains that model in PyTorch from the ONNX file's initial weights with
      softmax cross-entropy and SGD, the batches in the order the runtime's
      loader uses (mt19937_64.py), and prints per-epoch mean loss, test
      accuracy, time and samples/s: the reference that `heterps-run --train`
      is compared with.

Data: Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist, or
HETERPS_FASHION_MNIST_DIR), pixels scaled to [0, 1] as torchvision's ToTensor.
"""

import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mt19937_64 import epoch_order  # noqa: E402


class FashionCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5, padding=2)
        self.conv2 = nn.Conv2d(16, 32, 5, padding=2)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(32 * 7 * 7, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


def data_dir():
    return os.environ.get("HETERPS_FASHION_MNIST_DIR",
                          "/usr/share/datasets/fashion-mnist")


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    rank = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * rank).reshape(dims)


def load(split):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(f"{data_dir()}/{prefix}-images-idx3-ubyte.gz")
    labels = read_idx(f"{data_dir()}/{prefix}-labels-idx1-ubyte.gz")
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    return x, torch.from_numpy(labels.astype(np.int64))


def export(args):
    torch.manual_seed(args.seed)
    model = FashionCNN().eval()
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), args.output,
                      input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"},
                                    "logits": {0: "batch"}},
                      opset_version=13)
    print(f"wrote {args.output}")


def load_onnx_weights(model, path):
    import onnx
    from onnx import numpy_helper
    weights = {t.name: numpy_helper.to_array(t)
               for t in onnx.load(path).graph.initializer}
    state = model.state_dict()
    missing = [k for k in state if k not in weights]
    if missing:
        sys.exit(f"fashion_cnn.py: {path} lacks initializers {missing}")
    model.load_state_dict({k: torch.from_numpy(weights[k].copy())
                           for k in state})


def accuracy(model, x, y, batch=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(y), batch):
            correct += (model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum()
    model.train()
    return float(correct) / len(y)


def train(args):
    torch.set_num_threads(args.threads)
    model = FashionCNN()
    load_onnx_weights(model, args.model)
    x, y = load("train")
    tx, ty = load("test")
    opt = torch.optim.SGD(model.parameters(), lr=args.lr,
                          momentum=args.momentum)
    loss_fn = nn.CrossEntropyLoss()
    epochs = []
    print("| epoch | mean loss | test accuracy | seconds | samples/s |")
    print("|---:|---:|---:|---:|---:|")
    for epoch in range(args.epochs):
        order = torch.tensor(epoch_order(len(y), args.seed, epoch))
        start, total, steps = time.perf_counter(), 0.0, 0
        for i in range(0, len(order), args.batch):
            idx = order[i:i + args.batch]
            opt.zero_grad()
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            total += float(loss)
            steps += 1
        seconds = time.perf_counter() - start
        acc = accuracy(model, tx, ty)
        epochs.append({"epoch": epoch + 1, "loss": total / steps,
                       "accuracy": acc, "seconds": seconds,
                       "samples_per_s": len(y) / seconds})
        print(f"| {epoch + 1} | {total / steps:.4f} | {acc:.4f} | "
              f"{seconds:.1f} | {len(y) / seconds:.0f} |", flush=True)
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"framework": f"pytorch {torch.__version__}",
                       "threads": args.threads, "batch": args.batch,
                       "epochs": epochs}, f, indent=2)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export")
    e.add_argument("output")
    e.add_argument("--seed", type=int, default=1)
    t = sub.add_parser("train")
    t.add_argument("model")
    t.add_argument("--epochs", type=int, default=5)
    t.add_argument("--batch", type=int, default=32)
    t.add_argument("--lr", type=float, default=0.05)
    t.add_argument("--momentum", type=float, default=0.9)
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--report")
    args = p.parse_args()
    export(args) if args.command == "export" else train(args)


if __name__ == "__main__":
    main()
