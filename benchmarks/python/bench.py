"""The Python package against the C++ tools on the same models: what the
binding costs per call.

Inference: heterps.Session.run (NumPy in, NumPy out, no copies) against
heterps-run's timed loop (the executor called from C++), both median of
`--iterations` runs after warm-up, in alternating rounds, at 1 and 16
samples. Training: heterps.train against heterps-run --train on the same
data and options (samples/s of the last epoch).

    PYTHONPATH=build/python /usr/bin/python3 benchmarks/python/bench.py \
        [--models-dir DIR] [--models a,b] [--threads 2] [--rounds 3]

Models: the bundled Fashion CNN, and MODEL.onnx files from --models-dir
(default /tmp/heterps-tv-models, made by benchmarks/import/run.sh).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import heterps

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, "build/bin/heterps-run")


def cli_p50(model, batch, threads, iterations, warmup):
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        subprocess.run([RUN, model, "--batch", str(batch), "--threads",
                        str(threads), "--iterations", str(iterations),
                        "--warmup", str(warmup), "--report", report],
                       check=True, capture_output=True)
        return json.load(open(report))["p50_ms"]


def python_p50(session, feeds, iterations, warmup):
    times = []
    for i in range(warmup + iterations):
        start = time.perf_counter()
        session.run(None, feeds)
        if i >= warmup:
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def feeds_for(session, batch):
    feeds = {}
    rng = np.random.default_rng(0)
    for i in session.get_inputs():
        shape = [batch if d is None else d for d in i.shape]
        feeds[i.name] = rng.random(shape, dtype=np.float32)
    return feeds


def train_rates(model, threads):
    rng = np.random.default_rng(0)
    x = rng.random((2048, 1, 28, 28), dtype=np.float32)
    y = rng.integers(0, 10, 2048)
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, "x.npy"), x)
        np.save(os.path.join(tmp, "y.npy"), y)
        report = os.path.join(tmp, "r.json")
        spec = f"inputs={tmp}/x.npy,targets={tmp}/y.npy"
        subprocess.run([RUN, model, "--train", "--data", spec, "--epochs", "2",
                        "--batch", "64", "--threads", str(threads),
                        "--report", report], check=True, capture_output=True)
        cli = json.load(open(report))["epochs"][-1]["samples_per_s"]
    py = heterps.train(model, data=(x, y), epochs=2, batch=64, threads=threads,
                       progress=False)["epochs"][-1]["samples_per_s"]
    return cli, py


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", default="/tmp/heterps-tv-models")
    parser.add_argument("--models", default="resnet18,mobilenet_v2,squeezenet1_1")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()

    models = [os.path.join(ROOT, "examples/models/fashion_cnn.onnx")]
    for name in filter(None, args.models.split(",")):
        path = os.path.join(args.models_dir, name + ".onnx")
        if os.path.exists(path):
            models.append(path)
        else:
            print(f"skipped {name}: {path} not found", file=sys.stderr)

    print("| model | batch | heterps-run ms | Session.run ms | Python/C++ |")
    print("|---|---:|---:|---:|---:|")
    ratios = []
    for model in models:
        session = heterps.Session(model, threads=args.threads)
        for batch in (1, 16):
            feeds = feeds_for(session, batch)
            cli, py = [], []
            for _ in range(args.rounds):
                cli.append(cli_p50(model, batch, args.threads, args.iterations,
                                   args.warmup))
                py.append(python_p50(session, feeds, args.iterations,
                                     args.warmup))
            c, p = statistics.median(cli), statistics.median(py)
            ratios.append(p / c)
            print(f"| {os.path.basename(model)[:-5]} | {batch} | {c:.3f} | "
                  f"{p:.3f} | {p / c:.3f} |", flush=True)
    geomean = float(np.exp(np.mean(np.log(ratios))))
    print(f"| geomean | | | | {geomean:.3f} |")

    cli, py = train_rates(models[0], args.threads)
    print("\n| training (Fashion CNN, batch 64) | heterps-run --train | "
          "heterps.train | Python/C++ |")
    print("|---|---:|---:|---:|")
    print(f"| samples/s, epoch 2 | {cli:.0f} | {py:.0f} | {py / cli:.3f} |")


if __name__ == "__main__":
    main()
