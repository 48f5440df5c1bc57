#!/usr/bin/env python3
"""heterps-run against ONNX Runtime (CPU) on the same ONNX files.

Usage: bench.py ROOT MODEL_DIR ORT_DIR [--models a,b] [--batches 1,16]
                [--threads 2] [--iterations N] [--round-ms T] [--rounds R]

ROOT is the source tree (build/ inside), MODEL_DIR holds <model>.onnx
(benchmarks/import/export_torchvision.py writes them), ORT_DIR has
node_modules/onnxruntime-node. For each model and batch, one run.sh line:
the same random input (seed 0) goes to both; each timing is p50 over
--iterations runs (more where that takes less than --round-ms: a round of
30 sub-millisecond runs moved by +-8% between tables) after 3 warm-up
runs, both with --threads intra-op threads; the two alternate for
--rounds rounds and the table gives the median round of each (on this
shared VM a single process's timing moved by up to +-30% from one run to
the next, in bursts that hit one runtime and not the other). "speedup"
is ORT ms / heterps ms; GFLOP/s is the model's FLOPs (hps-layer-stats) x
batch / heterps p50, and "ORT of peak" ORT's rate against this machine's
sgemm peak: where ORT already runs near the peak, a direct algorithm
cannot be much faster (only fewer multiplications, Winograd's, can). The
differences are over the first output, relative to max |ORT|. Under the
table: the geometric mean speedup, over all runs and split by ORT's
share of the peak, and that bound over the runs (what heterps would give
with every model's FLOPs at the sgemm peak: 1 / ORT of peak) against
what the target needs and the runs give.
"""

import argparse
import json
import math
import os
import subprocess
import tempfile

import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "machine"))
from sgemm_peak import sgemm_peak  # noqa: E402

# A target the summary counts rows against (issue: zoo speed).
TARGET = 1.3


def input_dims(model_path, batch):
    model = onnx.load(model_path, load_external_data=False)
    init = {t.name for t in model.graph.initializer}
    inp = [i for i in model.graph.input if i.name not in init][0]
    dims = [d.dim_value if d.dim_value > 0 else batch
            for d in inp.type.tensor_type.shape.dim]
    return inp.name, dims


def model_flops(opt, model_path):
    out = subprocess.run([opt, model_path, "--hps-layer-stats=format=json",
                          "-o", "/dev/null"], capture_output=True, text=True,
                         check=True).stdout
    return sum(l["flops"] for l in json.loads(out)["layers"])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("model_dir")
    p.add_argument("ort_dir")
    p.add_argument("--models", default="alexnet,vgg16,resnet18,resnet50,"
                   "inception_v3,mobilenet_v2,squeezenet1_0,googlenet")
    p.add_argument("--batches", default="1,16")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--round-ms", type=float, default=0,
                   help="at least this long a round: more iterations for "
                   "fast models (from the first ORT round's p50)")
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    run = os.path.join(a.root, "build", "bin", "heterps-run")
    opt = os.path.join(a.root, "build", "bin", "heterps-opt")
    ort = os.path.join(a.root, "benchmarks", "inference", "ort-bench.js")
    env = dict(os.environ, NODE_PATH=os.path.join(a.ort_dir, "node_modules"))

    peak = sgemm_peak(a.threads)
    print("dnnl_sgemm 2048^3 peak on %d threads: %.1f GFLOP/s\n" % (
        a.threads, peak))
    print("| model | batch | ORT ms | heterps ms | speedup | heterps GFLOP/s "
          "| ORT of peak | max abs diff | max rel diff |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    speedups, ort_shares = [], []
    for m in a.models.split(","):
        path = os.path.join(a.model_dir, m + ".onnx")
        flops = model_flops(opt, path)
        for batch in map(int, a.batches.split(",")):
            name, dims = input_dims(path, batch)
            x = np.random.default_rng(0).random(dims, dtype=np.float32)
            with tempfile.TemporaryDirectory() as tmp:
                np.save(os.path.join(tmp, "x.npy"), x)
                x.tofile(os.path.join(tmp, "x.bin"))
                ort_out = os.path.join(tmp, "ort.bin")
                report = os.path.join(tmp, "run.json")
                ort_runs, our_runs, error = [], [], None
                iterations = a.iterations
                for _ in range(a.rounds):
                    res = subprocess.run(
                        ["node", ort, path, os.path.join(tmp, "x.bin"),
                         ",".join(map(str, dims)), "3", str(iterations),
                         str(a.threads), ort_out],
                        capture_output=True, text=True, env=env)
                    if res.returncode != 0:
                        error = "ORT: " + res.stderr.strip()
                        break
                    ort_runs.append(json.loads(res.stdout)["p50_ms"])
                    if len(ort_runs) == 1 and a.round_ms > 0:
                        iterations = max(iterations, math.ceil(
                            a.round_ms / max(ort_runs[0], 1e-3)))
                    res = subprocess.run(
                        [run, path, "--batch", str(batch), "--threads",
                         str(a.threads), "--warmup", "3", "--iterations",
                         str(iterations), "--report", report],
                        capture_output=True, text=True)
                    if res.returncode != 0:
                        error = res.stderr.strip().splitlines()[-1]
                        break
                    our_runs.append(json.load(open(report))["p50_ms"])
                if error:
                    print("| %s | %d | %s |" % (m, batch, error))
                    continue
                ort_ms = float(np.median(ort_runs))
                ours_ms = float(np.median(our_runs))
                subprocess.run([run, path, "--threads", str(a.threads),
                                "--input", "%s=%s" % (
                                    name, os.path.join(tmp, "x.npy")),
                                "--output-dir", os.path.join(tmp, "out")],
                               capture_output=True, check=True)
                t = onnx.TensorProto()
                t.ParseFromString(open(os.path.join(tmp, "out",
                                                    "output_0.pb"), "rb").read())
                ours = numpy_helper.to_array(t).ravel()
                theirs = np.fromfile(ort_out, dtype=np.float32)
                diff = float(np.max(np.abs(ours - theirs)))
                rel = diff / max(float(np.max(np.abs(theirs))), 1e-30)
            ort_share = flops * batch / (ort_ms * 1e6) / peak
            speedups.append(ort_ms / ours_ms)
            ort_shares.append(ort_share)
            print("| %s | %d | %.2f | %.2f | %.2fx | %.1f | %.0f%% | %.2e | "
                  "%.2e |" % (m, batch, ort_ms, ours_ms, ort_ms / ours_ms,
                              flops * batch / (ours_ms * 1e6),
                              100 * ort_share, diff, rel), flush=True)
    if speedups:
        print("\ngeometric mean speedup over ORT: %.2fx (%d runs)" % (
            geomean(speedups), len(speedups)))
        # Rows where ORT runs above 1/TARGET of the peak reach TARGET only
        # above the peak, by Winograd's fewer multiplications.
        near = [s for s, o in zip(speedups, ort_shares) if o * TARGET > 1]
        rest = [s for s, o in zip(speedups, ort_shares) if o * TARGET <= 1]
        for rows, what in [(near, "at or above"), (rest, "below")]:
            if rows:
                print("%d runs where ORT is %s %.0f%% of the sgemm peak: "
                      "geometric mean %.2fx, %d at or above 1.0x" % (
                          len(rows), what, 100 / TARGET, geomean(rows),
                          sum(s >= 1.0 for s in rows)))
        # A direct algorithm's bound: the speed-up heterps would have with
        # each model's FLOPs at the sgemm peak, and how close to that the
        # target needs the runs on (geometric) average.
        at_peak = geomean([1 / o for o in ort_shares])
        print("at the sgemm peak on every run heterps would give %.2fx; "
              "%.2fx needs %.0f%% of that, the runs give %.0f%%" % (
                  at_peak, TARGET, 100 * TARGET / at_peak,
                  100 * geomean(speedups) / at_peak))


def geomean(values):
    return math.exp(sum(map(math.log, values)) / len(values))


if __name__ == "__main__":
    main()
