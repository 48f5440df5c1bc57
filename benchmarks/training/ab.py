#!/usr/bin/env python3
"""Two builds of heterps-run side by side: is training slower after a change?

Usage: ab.py OLD_HETERPS_RUN NEW_HETERPS_RUN [--work DIR]
             [--models fashion_cnn resnet18 squeezenet1_0] [--batch 8]
             [--steps 4] [--threads 2] [--rounds 5]

Each model trains for two epochs of --steps steps (the Fashion CNN: 1500
steps on Fashion-MNIST at batch 32; the others: random images), and the
samples/s of the second epoch count (the first creates the primitives).
The two binaries alternate for --rounds rounds; the table gives the median
round of each and new/old (above 1.00: the change is faster). Models and
data are cached in --work (as benchmarks/training/bench.py makes them).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import MIN_STEPS, model_path, random_data  # noqa: E402
from models import image_shape  # noqa: E402


def samples_per_s(binary, model, data, batch, steps, threads):
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        subprocess.run(
            [binary, model, "--train", "--data", data, "--batch", str(batch),
             "--epochs", "2", "--max-steps", str(steps), "--optimizer",
             "momentum", "--threads", str(threads), "--report", report.name],
            check=True, capture_output=True, text=True)
        return json.load(open(report.name))["epochs"][1]["samples_per_s"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--work", default="/tmp/heterps-train-bench")
    p.add_argument("--models", nargs="+",
                   default=["fashion_cnn", "resnet18", "squeezenet1_0"])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    print("| model | batch | old samples/s | new samples/s | new/old |")
    print("|---|---:|---:|---:|---:|")
    ratios = []
    for name in a.models:
        model = model_path(a.work, name)
        steps = max(a.steps, MIN_STEPS.get(name, 0))
        batch = 32 if name == "fashion_cnn" else a.batch
        data = ("fashion-mnist:train" if name == "fashion_cnn" else
                random_data(a.work, image_shape(name), batch, steps))
        old, new = [], []
        for _ in range(a.rounds):
            old.append(samples_per_s(a.old, model, data, batch, steps,
                                     a.threads))
            new.append(samples_per_s(a.new, model, data, batch, steps,
                                     a.threads))
        o, n = statistics.median(old), statistics.median(new)
        ratios.append(n / o)
        print("| %s | %d | %.1f | %.1f | %.3f |" % (name, batch, o, n, n / o),
              flush=True)
    print("\ngeometric mean new/old: %.3f" % statistics.geometric_mean(ratios))


if __name__ == "__main__":
    main()
