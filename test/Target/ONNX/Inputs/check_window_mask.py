"""Checks heterps-run's outputs of make_model.py's window_mask model against
numpy: check_window_mask.py MODEL X.npy OUTPUT_DIR."""
import sys

import numpy as np
import onnx
from onnx import numpy_helper

model, x_path, out_dir = sys.argv[1:]
x = np.load(x_path)
weights = {t.name: numpy_helper.to_array(t)
           for t in onnx.load(model).graph.initializer}


def output(k):
    tensor = onnx.TensorProto()
    with open(f"{out_dir}/output_{k}.pb", "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


mask = np.zeros((4, 8), np.float32)
mask[[1, 3]] = 1
expected = [
    np.pad(x, ((0, 0), (0, 0), (2, 0), (0, 0))),
    mask,
    np.array(len(x) % 3),
    np.maximum(x.reshape(len(x), 4, 48) + weights["bias"], 0),
]
for k, want in enumerate(expected):
    got = output(k)
    assert got.shape == want.shape, (k, got.shape, want.shape)
    assert np.allclose(got, want, rtol=1e-6, atol=1e-6), (k, got, want)
print("window_mask outputs match numpy")
