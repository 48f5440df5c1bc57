#!/usr/bin/env python3
"""Ship ONNX models without their weights, and give them random ones there.

Usage: weights.py strip IN.onnx OUT.onnx   (here: float initializers of more
                                            than 64 elements lose their data)
       weights.py fill MODEL.onnx          (there: such initializers get
                                            seeded random values, in place)

For running the GPU benchmarks on another machine when the models are too
large to copy: the timings and the CPU-versus-GPU comparison need weights of
the right shapes and scale, not trained ones. Weights of Conv, Gemm and
MatMul get He-scaled normal values, a BatchNormalization's scale and
variance values in [0.5, 1.5], everything else small normal values. The
last Conv of each residual branch gets a fifth of that scale, as trained
networks' residual branches start small: at full scale each of
EfficientNet-V2-S's 35 residual Adds grew the activations until the
logits reached 1e6 and two correct runtimes' differed by 60% of them.
"""

import sys

import numpy as np
import onnx
from onnx import numpy_helper

LIMIT = 64


def strip(src, dst):
    model = onnx.load(src)
    for t in model.graph.initializer:
        if t.data_type == onnx.TensorProto.FLOAT and np.prod(t.dims) > LIMIT:
            t.ClearField("raw_data")
            t.ClearField("float_data")
    onnx.save(model, dst)


# Ops a residual branch may end with after its last Conv.
PASS_THROUGH = ("BatchNormalization", "Relu", "Sigmoid", "Mul", "Clip",
                "HardSwish", "HardSigmoid", "Identity")
BRANCH_SCALE = 0.2


def residual_branch_weights(graph):
    """Weights of the last Conv of each branch x + f(x): the Add input that
    only the Add reads, traced back through activations to a Conv."""
    producer = {o: n for n in graph.node for o in n.output}
    readers = {}
    for n in graph.node:
        for i in n.input:
            readers[i] = readers.get(i, 0) + 1
    found = set()
    for add in graph.node:
        if add.op_type != "Add" or len(add.input) != 2:
            continue
        branch = [i for i in add.input if readers.get(i) == 1]
        if len(branch) != 1:
            continue
        node = producer.get(branch[0])
        while node is not None and node.op_type in PASS_THROUGH:
            node = producer.get(node.input[0])
        if node is not None and node.op_type == "Conv":
            found.add(node.input[1])
    return found


def fill(path):
    model = onnx.load(path)
    role = {}
    for node in model.graph.node:
        if node.op_type in ("Conv", "Gemm", "MatMul") and len(node.input) > 1:
            role[node.input[1]] = "weight"
        if node.op_type == "BatchNormalization":
            role[node.input[1]] = "positive"
            role[node.input[4]] = "positive"
    small = residual_branch_weights(model.graph)
    rng = np.random.default_rng(0)
    for t in model.graph.initializer:
        if t.data_type != onnx.TensorProto.FLOAT or t.raw_data or t.float_data:
            continue
        shape = tuple(t.dims)
        if np.prod(shape) == 0:
            continue
        kind = role.get(t.name)
        if kind == "weight":
            fan_in = np.prod(shape[1:]) if len(shape) > 1 else shape[0]
            v = rng.normal(0, np.sqrt(2.0 / max(fan_in, 1)), shape)
            if t.name in small:
                v *= BRANCH_SCALE
        elif kind == "positive":
            v = rng.uniform(0.5, 1.5, shape)
        else:
            v = rng.normal(0, 0.01, shape)
        t.raw_data = v.astype(np.float32).tobytes()
    onnx.save(model, path)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "strip":
        strip(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "fill":
        fill(sys.argv[2])
    else:
        sys.exit(__doc__)
