#!/usr/bin/env python3
"""ONNX backend conformance: runs heterps-run on ONNX's test data.

Usage: conformance.py HETERPS_RUN EXCLUSIONS DIR [DIR...] [--verbose]

Each DIR holds test folders (model.onnx and test_data_set_*/input_*.pb,
output_*.pb), as Debian's libonnx-testdata ships them. For each test and
data set, heterps-run runs the model on the inputs and the outputs are
compared with the stored ones (rtol 1e-3, atol 1e-7, as ONNX's backend
tests). A test is

  passed       every data set matches;
  unsupported  the importer or the runtime says an operator or a form of
               it is not supported (the message says which);
  failed       anything else: wrong values, a crash, another error.

Prints passed / failed / unsupported per folder. Exits 1 when a test fails
that EXCLUSIONS does not list; EXCLUSIONS has one "folder/test: reason" per
line (# comments), like ONNX Runtime's backend-test filters, and a listed
test that now passes is reported so the list stays true.
"""

import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

RTOL, ATOL = 1e-3, 1e-7
UNSUPPORTED = ("unsupported", "not supported", "do not support")


def read_exclusions(path):
    excluded = {}
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if line:
            test, _, reason = line.partition(":")
            excluded[test.strip()] = reason.strip()
    return excluded


def graph_inputs(model_path):
    model = onnx.load(model_path, load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in initializers]


def load(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def run_test(run, test_dir):
    """Returns ("passed" | "failed" | "unsupported", detail)."""
    model = os.path.join(test_dir, "model.onnx")
    names = graph_inputs(model)
    for data in sorted(glob.glob(os.path.join(test_dir, "test_data_set_*"))):
        inputs = sorted(glob.glob(os.path.join(data, "input_*.pb")),
                        key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
        expected = sorted(glob.glob(os.path.join(data, "output_*.pb")),
                          key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
        with tempfile.TemporaryDirectory() as out:
            cmd = [run, model, "--output-dir", out]
            cmd += ["--input=%s=%s" % (n, p) for n, p in zip(names, inputs)]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True,
                                      timeout=120)
            except subprocess.TimeoutExpired:
                return "failed", "timed out"
            if proc.returncode != 0:
                message = (proc.stderr.strip().splitlines() or ["crash"])[-1]
                if proc.returncode == 1 and any(
                        u in message for u in UNSUPPORTED):
                    return "unsupported", message
                return "failed", message
            for k, path in enumerate(expected):
                got_path = os.path.join(out, "output_%d.pb" % k)
                if not os.path.exists(got_path):
                    return "failed", "output %d missing" % k
                want, got = load(path), load(got_path)
                if want.shape != got.shape:
                    return "failed", "output %d: shape %s, expected %s" % (
                        k, got.shape, want.shape)
                if not np.allclose(got, want, rtol=RTOL, atol=ATOL,
                                   equal_nan=True):
                    diff = np.max(np.abs(got.astype(np.float64) - want))
                    return "failed", "output %d: max abs diff %g" % (k, diff)
    return "passed", ""


def main():
    args = [a for a in sys.argv[1:] if a != "--verbose"]
    verbose = "--verbose" in sys.argv
    if len(args) < 3:
        sys.exit(__doc__)
    run, exclusions, dirs = args[0], read_exclusions(args[1]), args[2:]
    unexpected, fixed = [], []
    print("| folder | tests | passed | failed | unsupported |")
    print("|---|---:|---:|---:|---:|")
    for d in dirs:
        folder = os.path.basename(os.path.normpath(d))
        counts = {"passed": 0, "failed": 0, "unsupported": 0}
        for test_dir in sorted(glob.glob(os.path.join(d, "*", ""))):
            test = "%s/%s" % (folder, os.path.basename(os.path.normpath(
                test_dir)))
            status, detail = run_test(run, test_dir)
            counts[status] += 1
            if verbose and status != "passed":
                print("%s: %s: %s" % (test, status, detail), file=sys.stderr)
            if status == "failed" and test not in exclusions:
                unexpected.append("%s: %s" % (test, detail))
            if status == "passed" and test in exclusions:
                fixed.append(test)
        print("| %s | %d | %d | %d | %d |" % (
            folder, sum(counts.values()), counts["passed"], counts["failed"],
            counts["unsupported"]))
    for test in fixed:
        print("note: %s passes now; remove it from the exclusions" % test)
    for line in unexpected:
        print("FAILED (not excluded): " + line)
    print("%d unexpected failures" % len(unexpected))
    sys.exit(1 if unexpected else 0)


if __name__ == "__main__":
    main()
