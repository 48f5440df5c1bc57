#!/usr/bin/env python3
"""The CTR workload for pipelined training: a model and a synthetic data set.

  ctr.py model OUT.onnx [--tables T] [--rows R] [--dim D] [--hidden 64,32]
  ctr.py data OUT_DIR [--tables T] [--rows R] [--train N] [--eval N]

The model: one i64 input `ids` [batch, T], a categorical id per field; field
i's column (Gather axis 1) looks up its own embedding table (Gather axis 0
on an R x D initializer); the T embeddings are concatenated and fed to an
MLP (ReLU) that ends in one logit per sample (train with --loss
bce-logits). Tables above --inline-max-rows rows are written as ONNX
external data in a sparse file of zeros (no disk, no time): heterps-run
serves such tables from the parameter server and never reads them.

The data: field i's id has a Zipf(1.1) rank (a few ids are frequent, most
are rare, as in click logs) scattered over the table; a hidden weight per
(field, id), drawn
from a hash of both, sums to the true logit; the click is a Bernoulli draw
of its sigmoid. `data` prints the AUC of the true logits on the eval set:
the best any model can reach.
"""

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 0x5EED


def hidden_weight(field, ids):
    """Uniform in [-1.7, 1.7) from a splitmix64 hash of (field, id)."""
    with np.errstate(over="ignore"):
        z = ids.astype(np.uint64) + np.uint64(field) * np.uint64(
            0x9E3779B97F4A7C15) + np.uint64(SEED)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    u = (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)
    return (u - 0.5) * 3.4


def draw(rng, n, tables, rows):
    def field(f):
        # Zipf ranks (a few ids frequent, most rare), scattered over the
        # table so that touched rows are spread like real hashed features.
        rank = (rng.zipf(1.1, n) - 1) % rows
        return (rank * 2654435761 + 977 * f) % rows
    ids = np.stack([field(f) for f in range(tables)], axis=1)
    logit = sum(hidden_weight(f, ids[:, f]) for f in range(tables)) - 0.5
    clicks = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    return ids, clicks.reshape(n, 1), logit


def auc(scores, labels):
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels > 0.5
    npos, nneg = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - npos * (npos + 1) / 2) / (npos * nneg)


def write_model(args):
    rng = np.random.default_rng(1)
    location = os.path.basename(args.out) + ".data"
    nodes, inits, embeddings = [], [], []
    offset = 0
    for i in range(args.tables):
        column, table, emb = "col_%d" % i, "table_%d" % i, "emb_%d" % i
        inits.append(numpy_helper.from_array(np.array(i, dtype=np.int64),
                                             "field_%d" % i))
        nodes.append(helper.make_node("Gather", ["ids", "field_%d" % i],
                                      [column], axis=1, name=column))
        if args.rows > args.inline_max_rows:
            t = TensorProto(name=table, data_type=TensorProto.FLOAT,
                            dims=[args.rows, args.dim],
                            data_location=TensorProto.EXTERNAL)
            length = args.rows * args.dim * 4
            for key, value in (("location", location),
                               ("offset", str(offset)),
                               ("length", str(length))):
                entry = t.external_data.add()
                entry.key, entry.value = key, value
            offset += length
            inits.append(t)
        else:
            inits.append(numpy_helper.from_array(
                rng.uniform(-0.01, 0.01, (args.rows, args.dim))
                .astype(np.float32), table))
        nodes.append(helper.make_node("Gather", [table, column], [emb],
                                      axis=0, name=emb))
        embeddings.append(emb)
    nodes.append(helper.make_node("Concat", embeddings, ["features"], axis=1,
                                  name="concat"))
    width, x = args.tables * args.dim, "features"
    sizes = [int(h) for h in args.hidden.split(",")] + [1]
    for k, h in enumerate(sizes):
        w, b, y = "fc%d_w" % k, "fc%d_b" % k, "fc%d" % k
        inits.append(numpy_helper.from_array(
            rng.uniform(-1, 1, (h, width)).astype(np.float32) *
            np.float32(np.sqrt(6 / (width + h))), w))
        inits.append(numpy_helper.from_array(np.zeros(h, np.float32), b))
        nodes.append(helper.make_node("Gemm", [x, w, b], [y], transB=1,
                                      name=y))
        x, width = y, h
        if k + 1 < len(sizes):
            nodes.append(helper.make_node("Relu", [y], [y + "_relu"],
                                          name=y + "_relu"))
            x = y + "_relu"
    nodes.append(helper.make_node("Identity", [x], ["logits"],
                                  name="logits"))
    graph = helper.make_graph(
        nodes, "ctr",
        [helper.make_tensor_value_info("ids", TensorProto.INT64,
                                       ["batch", args.tables])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["batch", 1])],
        inits)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, args.out)
    if offset:
        with open(os.path.join(os.path.dirname(args.out) or ".", location),
                  "wb") as f:
            f.truncate(offset)


def write_data(args):
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    for name, n in (("train", args.train), ("eval", args.eval)):
        ids, clicks, logit = draw(rng, n, args.tables, args.rows)
        np.save(os.path.join(args.out, name + "_ids.npy"), ids)
        np.save(os.path.join(args.out, name + "_clicks.npy"), clicks)
    print("click rate %.3f, true-logit AUC on eval %.4f" %
          (clicks.mean(), auc(logit, clicks[:, 0])))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("model", "data"):
        p = sub.add_parser(name)
        p.add_argument("out")
        p.add_argument("--tables", type=int, default=4)
        p.add_argument("--rows", type=int, default=10_000_000)
    model, data = sub.choices["model"], sub.choices["data"]
    model.add_argument("--dim", type=int, default=16)
    model.add_argument("--hidden", default="64,32")
    model.add_argument("--inline-max-rows", type=int, default=100_000)
    data.add_argument("--train", type=int, default=200_000)
    data.add_argument("--eval", type=int, default=20_000)
    data.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    (write_model if args.command == "model" else write_data)(args)


if __name__ == "__main__":
    main()
