#!/usr/bin/env python3
"""Einsum as the importer writes it out, against numpy.einsum.

Usage: einsum_check.py HETERPS_RUN WORK

One ONNX model per equation (f32: a batched matmul, an attention score, a
transpose, a sum, an inner product, a contraction over two labels with a
broadcast-free batch, implicit output; then dynamic dimensions, named
ones in the declared shapes: a batch in both operands (MaxViT's
attention), one operand's dimension that the other knows, a dynamic row
label, and two dynamic row labels merged into one dimension, which the
importer refuses; then more it refuses: a diagonal, a contracted label of
two sizes, three operands); heterps-run's output against np.einsum on the
same random inputs. One line per equation: the output shape and ok, or
heterps-run's error.
"""

import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CASES = [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 5, 4), (2, 3, 6, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij->i", [(3, 4)]),
    ("i,i", [(5,), (5,)]),
    ("abc,cbd->ad", [(2, 3, 4), (4, 3, 5)]),
    ("ij,jk", [(3, 4), (4, 2)]),
    ("...ij,...jk->...ik", [(2, 3, 3, 4), (2, 3, 4, 5)]),
    ("...qd,...kd->...qk", [(2, 3, 5, 4), (3, 6, 4)]),
    ("b...d->...b", [(2, 3, 4, 5)]),
    ("...ij,...jk", [(2, 3, 4), (2, 4, 5)]),
    ("BGHID,BGHJD->BGHIJ", [("n", 2, 3, 5, 4), ("n", 2, 3, 6, 4)]),
    ("BGHIJ,BGHJD->BGHID", [("n", "g", 3, 5, 6), ("n", 2, 3, 6, 4)]),
    ("ij,jk->ik", [("n", 4), (4, 5)]),
    ("bij,jk->bik", [("n", "m", 4), (4, 5)]),
    ("ii->i", [(3, 3)]),
    ("ij,jk->ik", [(3, 4), (5, 2)]),
    ("i,i,i", [(2,), (2,), (2,)]),
]
# The size each named dimension has in the inputs given.
SIZES = {"n": 2, "g": 2, "m": 3}


def main():
    run, work = sys.argv[1:3]
    rng = np.random.default_rng(0)
    for k, (equation, shapes) in enumerate(CASES):
        names = [f"x{i}" for i in range(len(shapes))]
        xs = [rng.standard_normal([SIZES.get(d, d) for d in s])
              .astype(np.float32) for s in shapes]
        try:
            want = np.einsum(equation, *xs)
        except ValueError:  # an equation the shapes do not fit
            want = np.zeros([0] * len(equation.split("->")[-1]))
        node = helper.make_node("Einsum", names, ["y"], equation=equation)
        graph = helper.make_graph(
            [node], "einsum",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
             for n, s in zip(names, shapes)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                           [None] * want.ndim)])
        model = helper.make_model(graph,
                                  opset_imports=[helper.make_opsetid("", 13)])
        path = os.path.join(work, f"einsum{k}.onnx")
        onnx.save(model, path)
        args = []
        for n, x in zip(names, xs):
            np.save(os.path.join(work, n + ".npy"), x)
            args += ["--input", f"{n}={os.path.join(work, n + '.npy')}"]
        out = os.path.join(work, f"out{k}")
        res = subprocess.run([run, path, *args, "--output-dir", out],
                             capture_output=True, text=True)
        if res.returncode != 0:
            print(f"{equation}: {res.stderr.strip().splitlines()[-1]}")
            continue
        got = numpy_helper.to_array(
            onnx.load_tensor(os.path.join(out, "output_0.pb")))
        ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-5,
                                                     atol=1e-5)
        print(f"{equation}: {list(got.shape)} {'ok' if ok else 'WRONG'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
