"""Prints, for each model after the first, the largest absolute difference
of its initializers from the first model's, and whether it is below 1e-5."""
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def weights(path):
    return {t.name: numpy_helper.to_array(t)
            for t in onnx.load(path).graph.initializer}


reference = weights(sys.argv[1])
for path in sys.argv[2:]:
    other = weights(path)
    assert other.keys() == reference.keys(), path
    worst = max(float(np.max(np.abs(other[k] - reference[k])))
                for k in reference)
    print(path, worst, "below 1e-05" if worst < 1e-5 else "ABOVE 1e-05")
