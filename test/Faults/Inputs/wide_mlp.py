"""Writes an MLP for 1x28x28 inputs with one wide hidden layer (--hidden,
default 4096: 3.2M parameters), so that its checkpoints are large enough
(tens of MB) for a test to strike while one is being written.

Usage: wide_mlp.py OUT.onnx [--hidden H]
"""
import argparse

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--hidden", type=int, default=4096)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    h = args.hidden

    def weight(name, *shape):
        scale = np.sqrt(2.0 / shape[0])
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name)

    nodes = [
        helper.make_node("Flatten", ["input"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "w1", "b1"], ["hidden"]),
        helper.make_node("Relu", ["hidden"], ["relu"]),
        helper.make_node("Gemm", ["relu", "w2", "b2"], ["output"]),
    ]
    graph = helper.make_graph(
        nodes, "wide_mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["N", 1, 28, 28])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT,
                                       ["N", 10])],
        [weight("w1", 784, h),
         numpy_helper.from_array(np.zeros(h, np.float32), "b1"),
         weight("w2", h, 10),
         numpy_helper.from_array(np.zeros(10, np.float32), "b2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    save(model, args.out)


if __name__ == "__main__":
    main()
