#!/usr/bin/env python3
"""Two builds of heterps-run side by side: is a change slower?

Usage: ab.py OLD_HETERPS_RUN NEW_HETERPS_RUN MODEL.onnx... [--batches 1,16]
             [--threads 2] [--iterations 30] [--rounds 5]

For each model and batch both binaries time the same model on random
inputs (heterps-run's timed mode: p50 over --iterations runs after 3
warm-up runs); the two alternate for --rounds rounds, and the table gives
the median round of each and new/old (below 1.00: the change is faster).
A change is measured this way against the commit before it, on the same
machine in one run (see docs/benchmarks.md).
"""

import argparse
import os
import re
import statistics
import subprocess


def p50(binary, model, batch, threads, iterations):
    out = subprocess.run(
        [binary, model, "--batch", str(batch), "--threads", str(threads),
         "--iterations", str(iterations)],
        capture_output=True, text=True, check=True).stdout
    return float(re.search(r"p50 ([0-9.]+) ms", out).group(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("models", nargs="+")
    p.add_argument("--batches", default="1,16")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    print("| model | batch | old ms | new ms | new/old |")
    print("|---|---:|---:|---:|---:|")
    ratios = []
    for model in a.models:
        for batch in map(int, a.batches.split(",")):
            old, new = [], []
            for _ in range(a.rounds):
                old.append(p50(a.old, model, batch, a.threads, a.iterations))
                new.append(p50(a.new, model, batch, a.threads, a.iterations))
            o, n = statistics.median(old), statistics.median(new)
            ratios.append(n / o)
            name = os.path.splitext(os.path.basename(model))[0]
            print("| %s | %d | %.3f | %.3f | %.3f |" % (name, batch, o, n,
                                                        n / o), flush=True)
    print("\ngeometric mean new/old: %.3f" %
          statistics.geometric_mean(ratios))


if __name__ == "__main__":
    main()
