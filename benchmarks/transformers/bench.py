#!/usr/bin/env python3
"""heterps-run against ONNX Runtime (CPU) on transformer models.

Usage: bench.py ROOT MODEL_DIR ORT_DIR [--models vit-base,encoder-base,...]
                [--batches 1,8] [--seq 128] [--threads 2] [--iterations N]
                [--rounds R]

MODEL_DIR holds <name>.onnx as models.py writes them (vit-tiny.onnx,
encoder-base.onnx, ...). Token models get ids drawn with seed 0 below the
vocabulary size, shape [batch, seq]; ViT gets images. Both runtimes run the
same input; timings are p50 over --iterations runs after 3 warm-up runs,
alternating for --rounds rounds (median round each); "speedup" is ORT ms /
heterps ms. Differences are over the first output, relative to max |ORT|.
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


def model_input(path, batch, seq):
    """(name, array) of the model's input for this batch and sequence."""
    model = onnx.load(path, load_external_data=False)
    inp = model.graph.input[0]
    dims = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    rng = np.random.default_rng(0)
    if inp.type.tensor_type.elem_type == onnx.TensorProto.INT64:
        vocab = next(t.dims[0] for t in model.graph.initializer
                     if len(t.dims) == 2 and "tokens" in t.name)
        return inp.name, rng.integers(0, vocab, (batch, seq), dtype=np.int64)
    return inp.name, rng.random([batch] + dims[1:], dtype=np.float32)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("model_dir")
    p.add_argument("ort_dir")
    p.add_argument("--models", default="vit-base,encoder-base,decoder-base")
    p.add_argument("--batches", default="1,8")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    run = os.path.join(a.root, "build", "bin", "heterps-run")
    ort = os.path.join(a.root, "benchmarks", "inference", "ort-bench.js")
    env = dict(os.environ, NODE_PATH=os.path.join(a.ort_dir, "node_modules"))

    print("| model | batch | seq | ORT ms | heterps ms | speedup "
          "| max abs diff | max rel diff |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    speedups = []
    for m in a.models.split(","):
        path = os.path.join(a.model_dir, m + ".onnx")
        for batch in map(int, a.batches.split(",")):
            name, x = model_input(path, batch, a.seq)
            seq = x.shape[1] if x.dtype == np.int64 else "-"
            dtype = "int64" if x.dtype == np.int64 else "float32"
            with tempfile.TemporaryDirectory() as tmp:
                np.save(os.path.join(tmp, "x.npy"), x)
                x.tofile(os.path.join(tmp, "x.bin"))
                ort_out = os.path.join(tmp, "ort.bin")
                report = os.path.join(tmp, "run.json")
                ours_cmd = [run, path, "--threads", str(a.threads),
                            "--input", "%s=%s" % (name,
                                                  os.path.join(tmp, "x.npy"))]
                ort_runs, our_runs, error = [], [], None
                for _ in range(a.rounds):
                    res = subprocess.run(
                        ["node", ort, path, os.path.join(tmp, "x.bin"),
                         ",".join(map(str, x.shape)), "3", str(a.iterations),
                         str(a.threads), ort_out, dtype],
                        capture_output=True, text=True, env=env)
                    if res.returncode != 0:
                        error = "ORT: " + res.stderr.strip()
                        break
                    ort_runs.append(json.loads(res.stdout)["p50_ms"])
                    res = subprocess.run(
                        ours_cmd + ["--warmup", "3", "--iterations",
                                    str(a.iterations), "--report", report],
                        capture_output=True, text=True)
                    if res.returncode != 0:
                        error = res.stderr.strip().splitlines()[-1]
                        break
                    our_runs.append(json.load(open(report))["p50_ms"])
                if error:
                    print("| %s | %d | %s | %s |" % (m, batch, seq, error))
                    continue
                subprocess.run(ours_cmd + ["--output-dir",
                                           os.path.join(tmp, "out")],
                               capture_output=True, check=True)
                t = onnx.TensorProto()
                with open(os.path.join(tmp, "out", "output_0.pb"), "rb") as f:
                    t.ParseFromString(f.read())
                ours = numpy_helper.to_array(t).ravel()
                theirs = np.fromfile(ort_out, dtype=np.float32)
                diff = float(np.max(np.abs(ours - theirs)))
                rel = diff / max(float(np.max(np.abs(theirs))), 1e-30)
            ort_ms = float(np.median(ort_runs))
            ours_ms = float(np.median(our_runs))
            speedups.append(ort_ms / ours_ms)
            print("| %s | %d | %s | %.2f | %.2f | %.2fx | %.2e | %.2e |" % (
                m, batch, seq, ort_ms, ours_ms, ort_ms / ours_ms, diff, rel),
                flush=True)
    if speedups:
        geo = math.exp(sum(map(math.log, speedups)) / len(speedups))
        print("\ngeometric mean speedup over ORT: %.2fx (%d runs)" % (
            geo, len(speedups)))


if __name__ == "__main__":
    main()
