#!/usr/bin/env python3
"""heterps-run against ONNX Runtime (CPU) on the same ONNX files.

Usage: bench.py ROOT MODEL_DIR ORT_DIR [--models a,b] [--batches 1,16]
                [--threads 2] [--iterations N] [--rounds R]

ROOT is the source tree (build/ inside), MODEL_DIR holds <model>.onnx
(benchmarks/import/export_torchvision.py writes them), ORT_DIR has
node_modules/onnxruntime-node. For each model and batch, one run.sh line:
the same random input (seed 0) goes to both; each timing is p50 over
--iterations runs after 3 warm-up runs, both with --threads intra-op
threads; the two alternate for --rounds rounds and the table gives the
median round of each (on this shared VM a single process's timing moved
by up to +-30% from one run to the next, in bursts that hit one runtime
and not the other). "speedup" is ORT ms / heterps
ms; GFLOP/s is the model's FLOPs (hps-layer-stats) x batch / heterps p50;
the differences are over the first output, relative to max |ORT|.
"""

import argparse
import json
import math
import os
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper


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
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    run = os.path.join(a.root, "build", "bin", "heterps-run")
    opt = os.path.join(a.root, "build", "bin", "heterps-opt")
    ort = os.path.join(a.root, "benchmarks", "inference", "ort-bench.js")
    env = dict(os.environ, NODE_PATH=os.path.join(a.ort_dir, "node_modules"))

    print("| model | batch | ORT ms | heterps ms | speedup | heterps GFLOP/s "
          "| max abs diff | max rel diff |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    speedups = []
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
                for _ in range(a.rounds):
                    res = subprocess.run(
                        ["node", ort, path, os.path.join(tmp, "x.bin"),
                         ",".join(map(str, dims)), "3", str(a.iterations),
                         str(a.threads), ort_out],
                        capture_output=True, text=True, env=env)
                    if res.returncode != 0:
                        error = "ORT: " + res.stderr.strip()
                        break
                    ort_runs.append(json.loads(res.stdout)["p50_ms"])
                    res = subprocess.run(
                        [run, path, "--batch", str(batch), "--threads",
                         str(a.threads), "--warmup", "3", "--iterations",
                         str(a.iterations), "--report", report],
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
            speedups.append(ort_ms / ours_ms)
            print("| %s | %d | %.2f | %.2f | %.2fx | %.1f | %.2e | %.2e |" % (
                m, batch, ort_ms, ours_ms, ort_ms / ours_ms,
                flops * batch / (ours_ms * 1e6), diff, rel), flush=True)
    if speedups:
        geo = math.exp(sum(map(math.log, speedups)) / len(speedups))
        print("\ngeometric mean speedup over ORT: %.2fx (%d runs)" % (
            geo, len(speedups)))


if __name__ == "__main__":
    main()
