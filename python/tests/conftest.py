"""Paths the tests share: the source tree, the build tree's tools, the
bundled example model and cluster specs, and small models made here."""

import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

SOURCE = pathlib.Path(os.environ.get(
    "HETERPS_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
BUILD = pathlib.Path(os.environ.get("HETERPS_BUILD_DIR", SOURCE / "build"))
FASHION_CNN = SOURCE / "examples/models/fashion_cnn.onnx"
PAPER_CLUSTER = SOURCE / "examples/clusters/heterps-paper.yaml"
CPU_CLUSTER = SOURCE / "examples/clusters/this-machine-cpu.yaml"


def tool(name):
    return str(BUILD / "bin" / name)


def run_tool(*args, check=True):
    """Runs heterps-opt or heterps-run; returns the completed process."""
    done = subprocess.run([str(a) for a in args], capture_output=True,
                          text=True, timeout=300)
    if check and done.returncode != 0:
        raise AssertionError(f"{args}: {done.stderr}")
    return done


def tool_error(*args):
    """The one-line message a tool prints for an error, without its
    'tool: error: ' prefix."""
    done = run_tool(*args, check=False)
    assert done.returncode != 0
    line = done.stderr.strip().splitlines()[-1]
    return line.split("error: ", 1)[1]


@pytest.fixture
def dense_model(tmp_path):
    """y = relu(x @ W + b) as ONNX, with its weights, for numpy references."""
    onnx = pytest.importorskip("onnx")
    from onnx import helper, numpy_helper, TensorProto
    rng = np.random.default_rng(0)
    w = rng.standard_normal((6, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "b"], ["h"], name="fc"),
         helper.make_node("Relu", ["h"], ["y"], name="relu")],
        "dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "dense.onnx"
    onnx.save(model, str(path))
    return path, w, b


def spins_during(work):
    """How often this thread counts while another runs `work()`: it counts
    only while `work` holds no GIL, so a call into C++ that releases the GIL
    for a few hundred ms gives millions, one that holds it the few
    thousand a 5 ms switch slice allows."""
    import threading
    done = threading.Event()

    def run():
        work()
        done.set()

    worker = threading.Thread(target=run)
    worker.start()
    spins = 0
    while not done.is_set():
        spins += 1
    worker.join()
    return spins


def has_chromium():
    return shutil.which("chromium") is not None
