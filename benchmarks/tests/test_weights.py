"""benchmarks/cuda/weights.py: strip and fill keep the shapes, and fill
gives the last Conv of a residual branch a fifth of the He scale (the GPU
benchmark compares runtimes on these weights; at full scale a deep
residual network's activations grew until rounding decided the logits)."""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cuda"))
import weights  # noqa: E402

C = 64


def conv(name, x, out, w):
    return helper.make_node("Conv", [x, w], [out], name=name,
                            kernel_shape=[3, 3], pads=[1, 1, 1, 1])


def model(tmp_path):
    """x + Mul(c2, Sigmoid(c2)) with c2 = Conv(Relu(Conv(x))): w2 ends a
    residual branch; w1 does not. y = Conv(x) + Conv(x) (w3, w4: two
    branches each read once, not a residual) then a Conv (w5)."""
    nodes = [
        conv("c1", "x", "a", "w1"),
        helper.make_node("Relu", ["a"], ["r"]),
        conv("c2", "r", "b", "w2"),
        helper.make_node("Sigmoid", ["b"], ["s"]),
        helper.make_node("Mul", ["b", "s"], ["g"]),
        helper.make_node("Add", ["x", "g"], ["res"]),
        conv("c3", "res", "p", "w3"),
        conv("c4", "res", "q", "w4"),
        helper.make_node("Add", ["p", "q"], ["sum"]),
        conv("c5", "sum", "y", "w5"),
    ]
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(
        rng.normal(size=(C, C, 3, 3)).astype(np.float32), f"w{i}")
        for i in range(1, 6)]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C, 8, 8])],
        inits)
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph), path)
    return path


def test_branch_ends_are_found(tmp_path):
    m = onnx.load(model(tmp_path))
    assert weights.residual_branch_weights(m.graph) == {"w2"}


def test_strip_then_fill_scales_only_the_branch_end(tmp_path):
    src = model(tmp_path)
    dst = tmp_path / "stripped.onnx"
    weights.strip(str(src), str(dst))
    stripped = {t.name: t for t in onnx.load(dst).graph.initializer}
    assert not stripped["w1"].raw_data and not stripped["w1"].float_data
    weights.fill(str(dst))
    filled = {t.name: numpy_helper.to_array(t)
              for t in onnx.load(dst).graph.initializer}
    he = np.sqrt(2.0 / (C * 9))
    for name, arr in filled.items():
        assert arr.shape == (C, C, 3, 3)
        scale = 0.2 if name == "w2" else 1.0
        # 36864 samples: the standard deviation within 2% of its value.
        assert abs(arr.std() / (he * scale) - 1) < 0.02, name
