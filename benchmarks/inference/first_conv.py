#!/usr/bin/env python3
"""Cuts each model's first convolution (with the ReLU or Clip right after
it) into a model of its own, to time a network's first layer, on the
image, in two runtimes or two builds (bench.py, ab.py).

Usage: first_conv.py OUTDIR MODEL.onnx...

Writes OUTDIR/<model>_stem.onnx and prints their names, comma-separated,
for bench.py --models.
"""

import os
import sys

import onnx
from onnx import utils


def main():
    if len(sys.argv) < 3:
        sys.exit([l for l in __doc__.splitlines() if l.startswith("Usage")][0])
    outdir, models = sys.argv[1], sys.argv[2:]
    os.makedirs(outdir, exist_ok=True)
    names = []
    for path in models:
        model = onnx.load(path, load_external_data=False)
        init = {t.name for t in model.graph.initializer}
        source = [i.name for i in model.graph.input if i.name not in init][0]
        convs = [n for n in model.graph.node if n.op_type == "Conv"]
        if not convs:
            sys.exit("first_conv.py: %s has no Conv" % path)
        out = convs[0].output[0]
        for node in model.graph.node:
            if node.input and node.input[0] == out and \
                    node.op_type in ("Relu", "Clip"):
                out = node.output[0]
                break
        name = os.path.splitext(os.path.basename(path))[0] + "_stem"
        utils.extract_model(path, os.path.join(outdir, name + ".onnx"),
                            [source], [out])
        names.append(name)
    print(",".join(names))


if __name__ == "__main__":
    main()
