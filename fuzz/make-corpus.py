#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into OUT/<target>/.

Usage: make-corpus.py SOURCE_DIR MAIN_BUILD_DIR FUZZ_BUILD_DIR OUT

Seeds come from the test inputs (the lit suite's generated ONNX models, the
example model, cluster specs, profiles and placements) plus small .npy, .pb,
IDX and checkpoint files written here. Nothing binary is committed: this
runs at test time (with /usr/bin/python3, which has numpy and onnx).
"""

import gzip
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

source, main_build, fuzz_build, out = sys.argv[1:5]
python = sys.executable


def target_dir(name):
    path = os.path.join(out, name)
    os.makedirs(path, exist_ok=True)
    return path


def write(target, name, data):
    with open(os.path.join(target_dir(target), name), "wb") as f:
        f.write(data)


def copy(target, path):
    shutil.copy(path, target_dir(target))


def npy_bytes(array, **kwargs):
    with tempfile.TemporaryFile() as f:
        np.save(f, array, **kwargs)
        f.seek(0)
        return f.read()


def unwrap_checkpoint(data):
    """The `checkpoint` bytes (field 2) of a CheckpointFile message."""
    i = 0

    def varint():
        nonlocal i
        value = shift = 0
        while True:
            byte = data[i]
            i += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while i < len(data):
        key = varint()
        field, wire = key >> 3, key & 7
        if wire == 0:
            varint()
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            length = varint()
            if field == 2:
                return data[i:i + length]
            i += length
        else:
            break
    raise ValueError("no checkpoint field")


# onnx-import: every model make_model.py writes (valid and broken ones) and
# the example CNN.
models = target_dir("onnx-import")
subprocess.run([python, os.path.join(source, "test/Target/ONNX/Inputs/make_model.py"),
                "--all", models], check=True, stdout=subprocess.DEVNULL)
copy("onnx-import", os.path.join(source, "examples/models/fashion_cnn.onnx"))

# Planner inputs, as the examples and the lit tests have them.
for name in sorted(os.listdir(os.path.join(source, "examples/clusters"))):
    copy("cluster-spec", os.path.join(source, "examples/clusters", name))
inputs = os.path.join(source, "test/Transforms/Inputs")
for name in sorted(os.listdir(inputs)):
    if name.endswith(".yaml"):
        copy("cluster-spec", os.path.join(inputs, name))
    elif name.endswith("profile.json"):
        copy("profile", os.path.join(inputs, name))
    elif name.endswith(".json"):
        copy("placement", os.path.join(inputs, name))
for name in sorted(os.listdir(os.path.join(source, "examples/placements"))):
    copy("placement", os.path.join(source, "examples/placements", name))
seeds = os.path.join(source, "fuzz/corpus")
for target in sorted(os.listdir(seeds)) if os.path.isdir(seeds) else []:
    for name in sorted(os.listdir(os.path.join(seeds, target))):
        copy(target, os.path.join(seeds, target, name))

# .npy: both dtypes, both orders, version 2, 0-d and empty arrays.
rng = np.random.default_rng(0)
write("npy", "f32.npy", npy_bytes(rng.random((2, 3, 4), dtype=np.float32)))
write("npy", "i64.npy", npy_bytes(np.arange(6, dtype=np.int64).reshape(2, 3)))
write("npy", "fortran.npy",
      npy_bytes(np.asfortranarray(rng.random((3, 2), dtype=np.float32))))
write("npy", "scalar.npy", npy_bytes(np.float32(1.5)))
write("npy", "empty.npy", npy_bytes(np.zeros((0, 4), dtype=np.float32)))
write("npy", "f64.npy", npy_bytes(np.ones(3)))
with tempfile.TemporaryFile() as f:
    np.lib.format.write_array(f, np.ones((2, 2), dtype=np.float32),
                              version=(2, 0))
    f.seek(0)
    write("npy", "v2.npy", f.read())

# .pb: raw and typed data, INT32 (widened), an external-data reference that
# can only miss (the target's folder is empty), a named input.
def pb(name, array, raw=True):
    t = numpy_helper.from_array(array, "x")
    if not raw:
        t = onnx.helper.make_tensor("x", t.data_type, array.shape,
                                    array.flatten().tolist())
    write("tensor-pb", name, t.SerializeToString())

pb("f32.pb", rng.random((2, 3), dtype=np.float32))
pb("f32-typed.pb", rng.random((4,), dtype=np.float32), raw=False)
pb("i64.pb", np.arange(5, dtype=np.int64))
pb("i64-typed.pb", np.arange(5, dtype=np.int64), raw=False)
pb("i32.pb", np.arange(4, dtype=np.int32))
pb("scalar.pb", np.array(2.0, dtype=np.float32))
external = numpy_helper.from_array(np.ones((2, 2), dtype=np.float32), "w")
onnx.external_data_helper.set_external_data(external, "weights.bin", 0, 16)
external.ClearField("raw_data")
external.data_location = onnx.TensorProto.EXTERNAL
write("tensor-pb", "external.pb", external.SerializeToString())

# IDX: the first byte picks images (even) or labels (odd); plain and
# gzipped.
def idx(shape, values):
    header = bytes([0, 0, 8, len(shape)])
    for d in shape:
        header += int(d).to_bytes(4, "big")
    return header + bytes(values)

images = idx((3, 4, 4), rng.integers(0, 256, 48))
labels = idx((5,), [1, 2, 3, 4, 9])
write("idx", "images", b"\0" + images)
write("idx", "labels", b"\1" + labels)
write("idx", "images.gz", b"\0" + gzip.compress(images))
write("idx", "labels.gz", b"\1" + gzip.compress(labels))

# checkpoint: one that matches the target's own plan (it writes it), and the
# inner message of a real one from heterps-run on the example CNN.
env = dict(os.environ,
           HETERPS_FUZZ_CHECKPOINT_SEED=os.path.join(target_dir("checkpoint"),
                                                     "matching"))
subprocess.run([os.path.join(fuzz_build, "heterps-fuzz-checkpoint")], env=env,
               check=True)
with tempfile.TemporaryDirectory() as work:
    np.save(os.path.join(work, "x.npy"), rng.random((16, 1, 28, 28), dtype=np.float32))
    np.save(os.path.join(work, "y.npy"), rng.integers(0, 10, 16))
    run = subprocess.run(
        [os.path.join(main_build, "bin/heterps-run"),
         os.path.join(source, "examples/models/fashion_cnn.onnx"), "--train",
         "--data", "inputs=x.npy,targets=y.npy", "--batch", "8",
         "--optimizer", "adam", "--epochs", "1", "--threads", "1",
         "--checkpoint", "ck"],
        cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    path = os.path.join(work, "ck/checkpoint.pb")
    if run.returncode == 0 and os.path.exists(path):
        with open(path, "rb") as f:
            write("checkpoint", "fashion_cnn", unwrap_checkpoint(f.read()))
    else:
        print("make-corpus: no heterps-run checkpoint seed: " +
              run.stderr.decode(errors="replace").strip(), file=sys.stderr)

# ps-request: one valid request of each kind, written by the target.
env = dict(os.environ, HETERPS_FUZZ_PS_SEEDS=target_dir("ps-request"))
subprocess.run([os.path.join(fuzz_build, "heterps-fuzz-ps-request")], env=env,
               check=True)

for target in sorted(os.listdir(out)):
    print("make-corpus: %s: %d seeds" % (target, len(os.listdir(os.path.join(out, target)))))
