#!/usr/bin/env python3
"""Cuts an ONNX model into its top-level blocks, one model each, to time
two runtimes block by block without a profiler (ONNX Runtime's added a
third to EfficientNet-B3's kernel times).

Usage: split_blocks.py MODEL.onnx OUTDIR [--prefix /features/features.]

Block k is the nodes whose names start with PREFIX<k>/ (torchvision's
`features` stages); its model reads block k-1's last output (the image for
block 0) and gives its own last output. Writes OUTDIR/<model>_block<k>.onnx
and prints their names, comma-separated, for bench.py --models.
"""

import argparse
import os
import re
import sys

import onnx
from onnx import utils


def block_outputs(model, prefix):
    """Block number -> the output of its last node, in graph order."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)/")
    last = {}
    for node in model.graph.node:
        m = pattern.match(node.name)
        if m and node.output:
            last[int(m.group(1))] = node.output[0]
    return dict(sorted(last.items()))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("outdir")
    p.add_argument("--prefix", default="/features/features.")
    a = p.parse_args()
    model = onnx.load(a.model)
    outputs = block_outputs(model, a.prefix)
    if not outputs:
        sys.exit("split_blocks.py: no node of %s is named %s<k>/..." %
                 (a.model, a.prefix))
    init = {t.name for t in model.graph.initializer}
    source = [i.name for i in model.graph.input if i.name not in init][0]
    stem = os.path.splitext(os.path.basename(a.model))[0]
    os.makedirs(a.outdir, exist_ok=True)
    names = []
    for k, out in outputs.items():
        name = "%s_block%d" % (stem, k)
        utils.extract_model(a.model, os.path.join(a.outdir, name + ".onnx"),
                            [source], [out])
        names.append(name)
        source = out
    print(",".join(names))


if __name__ == "__main__":
    main()
