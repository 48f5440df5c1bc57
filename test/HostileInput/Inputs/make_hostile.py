#!/usr/bin/env python3
"""Writes the hostile inputs the test/HostileInput suite feeds the tools.

Usage: make_hostile.py KIND DIR

Each KIND writes a few files into DIR (created if missing): models whose
attributes, opsets, names or external data are crafted, tensors and data
files whose headers claim more than they hold, and documents nested or
sized to exhaust a parser. Nothing here is valid input; every file is
small on disk.
"""

import gzip
import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper


def _model(nodes, inputs, outputs, inits=(), opset=13, name="hostile"):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(graph, producer_name="heterps-make_hostile",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _save(m, path):
    # No checker: most of these models are meant to be refused.
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def _conv_weight():
    return helper.make_tensor("W", TensorProto.FLOAT, [4, 1, 3, 3],
                              np.ones(36, np.float32).tolist())


def windows(out):
    """Window attributes ONNX's shape inference divides by, and Conv
    weights and attributes of the wrong rank or length (found by fuzzing:
    libonnx indexes past the weight's dimensions; the importer past
    output_padding)."""
    x, y = _vi("x", [1, 1, 8, 8]), _vi("y", [1, 4, 6, 6])
    conv = helper.make_node("Conv", ["x", "W"], ["y"], name="conv_s0",
                            kernel_shape=[3, 3], strides=[1, 0])
    _save(_model([conv], [x], [y], [_conv_weight()]),
          os.path.join(out, "conv_stride0.onnx"))
    pool = helper.make_node("MaxPool", ["x"], ["y"], name="pool_s0",
                            kernel_shape=[2, 2], strides=[0, 0])
    _save(_model([pool], [x], [y]), os.path.join(out, "maxpool_stride0.onnx"))
    group = helper.make_node("Conv", ["x", "W"], ["y"], name="conv_g0",
                             kernel_shape=[3, 3], group=0)
    _save(_model([group], [x], [y], [_conv_weight()]),
          os.path.join(out, "conv_group0.onnx"))
    w1 = helper.make_tensor("W", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])
    relu = helper.make_node("Relu", ["x"], ["r"], name="relu")
    deconv = helper.make_node("ConvTranspose", ["r", "W"], ["y"],
                              name="deconv_w1")
    _save(_model([relu, deconv], [x], [y], [w1]),
          os.path.join(out, "convtranspose_weight_rank1.onnx"))
    outpad = helper.make_node("ConvTranspose", ["x", "W"], ["y"],
                              name="deconv_op", output_padding=[1])
    _save(_model([outpad], [x], [_vi("y", [1, 1, 10, 10])],
                 [helper.make_tensor("W", TensorProto.FLOAT, [1, 1, 3, 3],
                                     [1.0] * 9)]),
          os.path.join(out, "convtranspose_output_padding.onnx"))


def resize(out):
    """Resize by scales that overflow the output's size, that are NaN at
    import, and that arrive at run time (NaN, or overflowing)."""
    x, y = _vi("x", [1, 3, 4, 4]), _vi("y", [None, None, None, None])

    def model(scales, name):
        inits = [] if scales is None else [
            helper.make_tensor("scales", TensorProto.FLOAT, [4], scales)]
        inputs = [x] + ([_vi("scales", [4])] if scales is None else [])
        node = helper.make_node("Resize", ["x", "", "scales"], ["y"],
                                name="resize", mode="linear")
        _save(_model([node], inputs, [y], inits), os.path.join(out, name))

    model([1.0, 1.0, 1e9, 1e9], "resize_huge.onnx")
    model([1.0, 1.0, float("nan"), 2.0], "resize_nan.onnx")
    model(None, "resize_runtime.onnx")
    np.save(os.path.join(out, "scales_nan.npy"),
            np.array([1, 1, np.nan, 2], np.float32))
    np.save(os.path.join(out, "scales_huge.npy"),
            np.array([1, 1, 1e9, 1e9], np.float32))


def _relu_model(opset):
    return _model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                  [_vi("x", ["N", 4])], [_vi("y", ["N", 4])], opset=opset)


def opsets(out):
    """Opsets outside int: 2^62 and negative."""
    _save(_relu_model(2 ** 62), os.path.join(out, "opset_huge.onnx"))
    _save(_relu_model(-5), os.path.join(out, "opset_negative.onnx"))


def names(out):
    """Node names carrying a newline and a terminal escape sequence."""
    evil = "evil\nname\x1b[31m"
    node = helper.make_node("NoSuchOp", ["x"], ["y"], name=evil)
    _save(_model([node], [_vi("x", [2])], [_vi("y", [2])]),
          os.path.join(out, "evil_name.onnx"))


def _external_model(entries):
    w = TensorProto()
    w.name = "W"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([4, 1, 3, 3])
    w.data_location = TensorProto.EXTERNAL
    for key, value in entries:
        e = w.external_data.add()
        e.key, e.value = key, value
    conv = helper.make_node("Conv", ["x", "W"], ["y"], name="conv",
                            kernel_shape=[3, 3])
    return _model([conv], [_vi("x", [1, 1, 8, 8])], [_vi("y", [1, 4, 6, 6])],
                  [w])


def external(out):
    """External data that points out of the model's folder or claims sizes
    the file does not have. Writes DIR/secret.bin (outside) and the models
    in DIR/model/."""
    model_dir = os.path.join(out, "model")
    os.makedirs(model_dir, exist_ok=True)
    secret = os.path.join(out, "secret.bin")
    with open(secret, "wb") as f:
        f.write(np.arange(36, dtype=np.float32).tobytes())
    with open(os.path.join(model_dir, "w.bin"), "wb") as f:
        f.write(np.ones(36, np.float32).tobytes())
    link = os.path.join(model_dir, "link.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.join("..", "secret.bin"), link)
    cases = {
        "traversal": [("location", "../secret.bin")],
        "absolute": [("location", secret)],
        "symlink": [("location", "link.bin")],
        "negative_offset": [("location", "w.bin"), ("offset", "-5")],
        "huge_length": [("location", "w.bin"), ("length", str(2 ** 40))],
    }
    for name, entries in cases.items():
        _save(_external_model(entries), os.path.join(model_dir, name + ".onnx"))


def huge_inputs(out):
    """A .npy and a .pb whose shapes' products wrap around 2^64, and a
    dynamic-batch Relu model to feed them to."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, 1, 28, 28), }" % (2 ** 62)
    header += " " * (118 - 10 - len(header) - 1) + "\n"
    with open(os.path.join(out, "huge.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode() + b"\0" * 10)
    t = TensorProto()
    t.name = "x"
    t.data_type = TensorProto.FLOAT
    t.dims.extend([2 ** 62, 1, 28, 28])
    t.raw_data = b""
    with open(os.path.join(out, "huge.pb"), "wb") as f:
        f.write(t.SerializeToString())
    relu = helper.make_node("Relu", ["image"], ["y"], name="relu")
    _save(_model([relu], [_vi("image", ["N", 1, 28, 28])],
                 [_vi("y", ["N", 1, 28, 28])]), os.path.join(out, "relu.onnx"))


def big_initializer(out):
    """An initializer claiming 2^31 x 256 floats (2 TiB) with 16 bytes."""
    w = TensorProto()
    w.name = "W"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([2 ** 31, 256])
    w.raw_data = b"\0" * 16
    add = helper.make_node("Add", ["x", "W"], ["y"], name="add")
    _save(_model([add], [_vi("x", [1, 256])], [_vi("y", [2 ** 31, 256])], [w]),
          os.path.join(out, "big_initializer.onnx"))


def short_constant(out):
    """A Reshape by a shape computed from a Constant int64 scalar whose raw
    data is 7 bytes: ONNX's shape inference propagated it and read past the
    buffer (a fuzz finding)."""
    idx = TensorProto()
    idx.data_type = TensorProto.INT64
    idx.raw_data = b"\0" * 7
    minus1 = helper.make_tensor("m", TensorProto.INT64, [1], [-1])
    axes = helper.make_tensor("a", TensorProto.INT64, [1], [0])
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"], name="shape"),
        helper.make_node("Constant", [], ["i"], name="const_idx", value=idx),
        helper.make_node("Gather", ["shp", "i"], ["n"], name="gather"),
        helper.make_node("Constant", [], ["ax"], name="axes", value=axes),
        helper.make_node("Unsqueeze", ["n", "ax"], ["n1"], name="unsqueeze"),
        helper.make_node("Constant", [], ["m1"], name="minus1", value=minus1),
        helper.make_node("Concat", ["n1", "m1"], ["s"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape"),
    ]
    _save(_model(nodes, [_vi("x", [2, 3, 4])], [_vi("y", [2, 12])]),
          os.path.join(out, "short_constant.onnx"))


def pad_huge(out):
    """A Pad whose output (1 x 1 x 2^20 x 2^20 floats, 4 TiB) no machine
    holds; its input is small."""
    pads = helper.make_tensor("pads", TensorProto.INT64, [8],
                              [0, 0, 0, 0, 0, 0, 2 ** 20, 2 ** 20])
    pad = helper.make_node("Pad", ["x", "pads"], ["y"], name="pad_huge")
    _save(_model([pad], [_vi("x", [1, 1, 4, 4])],
                 [_vi("y", [1, 1, 2 ** 20 + 4, 2 ** 20 + 4])], [pads]),
          os.path.join(out, "pad_huge.onnx"))


def idx(out):
    """IDX files whose headers claim billions of images: plain and as a
    gzip bomb (a few MB of zeros after the header)."""
    header = struct.pack(">BBBB", 0, 0, 8, 3) + struct.pack(">III", 2 ** 31, 28, 28)
    with open(os.path.join(out, "billions-images-idx3-ubyte"), "wb") as f:
        f.write(header + b"\0" * 1024)
    with gzip.open(os.path.join(out, "bomb-images-idx3-ubyte.gz"), "wb") as f:
        f.write(header)
        zeros = b"\0" * (1 << 20)
        for _ in range(64):
            f.write(zeros)
    labels = struct.pack(">BBBB", 0, 0, 8, 1) + struct.pack(">I", 4) + bytes(4)
    with open(os.path.join(out, "labels-idx1-ubyte"), "wb") as f:
        f.write(labels)


def nesting(out):
    """A 40,000-level cluster spec, 100,000-level placement and profile."""
    depth = 40000
    with open(os.path.join(out, "deep.yaml"), "w") as f:
        f.write("device_types: " + "[" * depth + "]" * depth + "\n")
    with open(os.path.join(out, "deep-block.yaml"), "w") as f:
        f.write("device_types:\n  " + "- " * depth + "x\n")
    depth = 100000
    for name in ("deep-placement.json", "deep-profile.json"):
        with open(os.path.join(out, name), "w") as f:
            f.write('{"a": ' + "[" * depth + "]" * depth + "}\n")


def yaml_alias(out):
    """A cluster spec that reuses a device type through an anchor."""
    with open(os.path.join(out, "alias.yaml"), "w") as f:
        f.write("""device_types:
  - &cpu
    name: cpu
    kind: cpu
    price_per_hour: 0.5
    max_count: 4
    gflops: 100
    memory_bandwidth_gbs: 20
    network_bandwidth_gbs: 10
  - *cpu
job:
  batch_size: 32
  samples_per_epoch: 1000
  epochs: 1
  throughput_limit: 10
""")


def many_types(out):
    """A valid cluster spec with 52,000 device types."""
    with open(os.path.join(out, "many-types.yaml"), "w") as f:
        f.write("device_types:\n")
        for i in range(52000):
            f.write("  - {name: type%d, kind: cpu, price_per_hour: 1, "
                    "max_count: 1, gflops: 10, memory_bandwidth_gbs: 10, "
                    "network_bandwidth_gbs: 10}\n" % i)
        f.write("job: {batch_size: 8, samples_per_epoch: 100, epochs: 1, "
                "throughput_limit: 1}\n")


def data(out):
    """Training data: one NaN pixel; finite values so large that the first
    convolution overflows to infinity and NaN inside the model."""
    rng = np.random.default_rng(0)
    x = rng.random((16, 1, 28, 28), dtype=np.float32)
    y = rng.integers(0, 10, 16)
    np.save(os.path.join(out, "y.npy"), y)
    nan = x.copy()
    nan[3, 0, 5, 5] = np.nan
    np.save(os.path.join(out, "x-nan.npy"), nan)
    huge = np.where(rng.random(x.shape) < 0.5, -3e38, 3e38).astype(np.float32)
    np.save(os.path.join(out, "x-huge.npy"), huge)
    np.save(os.path.join(out, "x-empty.npy"), np.zeros((0, 1, 28, 28), np.float32))
    np.save(os.path.join(out, "y-empty.npy"), np.zeros(0, np.int64))


KINDS = {
    "windows": windows,
    "resize": resize,
    "opsets": opsets,
    "names": names,
    "external": external,
    "huge-inputs": huge_inputs,
    "big-initializer": big_initializer,
    "pad-huge": pad_huge,
    "short-constant": short_constant,
    "idx": idx,
    "nesting": nesting,
    "yaml-alias": yaml_alias,
    "many-types": many_types,
    "data": data,
}


def main(argv):
    if len(argv) != 3 or argv[1] not in KINDS:
        print(__doc__.strip() + "\n\nKINDS: " + ", ".join(KINDS),
              file=sys.stderr)
        return 2
    os.makedirs(argv[2], exist_ok=True)
    KINDS[argv[1]](argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
