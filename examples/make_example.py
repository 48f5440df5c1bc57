#!/usr/bin/env python3
"""Build the example Fashion-MNIST style CNN and export it to ONNX.

Usage: make_example.py [OUT.onnx]   (default: models/fashion_cnn.onnx next to
this script)

The network takes a 1x28x28 grayscale image and produces 10 logits:
Conv(1->8, 3x3, pad 1) -> Relu -> MaxPool 2 -> Conv(8->16, 3x3, pad 1) -> Relu
-> MaxPool 2 -> Flatten(784) -> Gemm(784->64) -> Relu -> Gemm(64->10).
Weights are random (torch.manual_seed(0)); it is untrained and only meant for
exercising the importer. Exported with opset 13, input "image", output
"logits", dynamic batch axis; the node names are the ones torch exports.
"""

import os
import sys

import torch
import torch.nn as nn


class FashionCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.relu1 = nn.ReLU()
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.relu2 = nn.ReLU()
        self.pool2 = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(16 * 7 * 7, 64)
        self.relu3 = nn.ReLU()
        self.fc2 = nn.Linear(64, 10)

    def forward(self, image):
        x = self.pool1(self.relu1(self.conv1(image)))
        x = self.pool2(self.relu2(self.conv2(x)))
        x = self.flatten(x)
        return self.fc2(self.relu3(self.fc1(x)))


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    out = argv[1] if len(argv) > 1 else os.path.join(here, "models",
                                                     "fashion_cnn.onnx")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    torch.manual_seed(0)
    model = FashionCNN().eval()
    image = torch.randn(1, 1, 28, 28)
    with torch.no_grad():
        torch.onnx.export(
            model, image, out,
            opset_version=13,
            input_names=["image"],
            output_names=["logits"],
            dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
        )
    params = sum(p.numel() for p in model.parameters())
    print(f"wrote {out}: {os.path.getsize(out)} bytes, {params} parameters")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
