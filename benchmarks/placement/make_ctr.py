#!/usr/bin/env python3
"""Write a CTR model as ONNX: the HeterPS paper's main workload.

Usage: make_ctr.py OUT.onnx [--tables N] [--rows R] [--dim D]

A click-through-rate model in the Wide&Deep / DLRM mould: N sparse features,
each an id looked up in its own embedding table (Gather on an R x D float
initializer), concatenated with 13 dense features and fed to an MLP
(1024-512-256-1, ReLU) with a sigmoid output. The batch axis is dynamic.

The tables are large (by default 26 tables x 2M rows x 16 floats = 3.3 GB),
so they are stored as ONNX external data in OUT.onnx.data, written as a
sparse file of zeros: it takes no disk space and no time, and planning only
needs the shapes. The MLP's weights are small and stored inline (seeded
random values).
"""

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DENSE_FEATURES = 13
MLP = [1024, 512, 256, 1]


def external_table(name, rows, dim, location, offset):
    """A float [rows, dim] initializer stored at `offset` of `location`."""
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend([rows, dim])
    t.data_location = TensorProto.EXTERNAL
    length = rows * dim * 4
    for key, value in (("location", location), ("offset", str(offset)),
                       ("length", str(length))):
        entry = t.external_data.add()
        entry.key = key
        entry.value = value
    return t, length


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--tables", type=int, default=26)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--dim", type=int, default=16)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    location = os.path.basename(args.out) + ".data"
    nodes, inputs, initializers = [], [], []
    offset = 0
    features = []
    for i in range(args.tables):
        ids = "ids_%d" % i
        inputs.append(helper.make_tensor_value_info(ids, TensorProto.INT64,
                                                    ["N"]))
        table, length = external_table("table_%d" % i, args.rows, args.dim,
                                       location, offset)
        offset += length
        initializers.append(table)
        out = "emb_%d" % i
        nodes.append(helper.make_node("Gather", ["table_%d" % i, ids], [out],
                                      name="embedding_%d" % i, axis=0))
        features.append(out)
    inputs.append(helper.make_tensor_value_info("dense", TensorProto.FLOAT,
                                                ["N", DENSE_FEATURES]))
    features.append("dense")
    nodes.append(helper.make_node("Concat", features, ["features"],
                                  name="concat", axis=1))

    x, width = "features", args.tables * args.dim + DENSE_FEATURES
    for i, units in enumerate(MLP):
        w = rng.standard_normal((units, width), dtype=np.float32) * 0.01
        b = np.zeros(units, dtype=np.float32)
        initializers += [numpy_helper.from_array(w, "fc%d.weight" % i),
                         numpy_helper.from_array(b, "fc%d.bias" % i)]
        y = "fc%d" % i
        nodes.append(helper.make_node("Gemm", [x, "fc%d.weight" % i,
                                               "fc%d.bias" % i], [y],
                                      name=y, transB=1))
        x, width = y, units
        if i + 1 < len(MLP):
            nodes.append(helper.make_node("Relu", [x], [x + ".relu"],
                                          name="relu%d" % i))
            x = x + ".relu"
    nodes.append(helper.make_node("Sigmoid", [x], ["ctr"], name="sigmoid"))

    graph = helper.make_graph(
        nodes, "ctr", inputs,
        [helper.make_tensor_value_info("ctr", TensorProto.FLOAT, ["N", 1])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("",
                                                                        13)])
    model.ir_version = 8
    onnx.save(model, args.out)
    # The tables' bytes: a sparse file of the right size.
    with open(os.path.join(os.path.dirname(os.path.abspath(args.out)),
                           location), "wb") as f:
        f.truncate(offset)


if __name__ == "__main__":
    main()
