"""Pipelined training: measured step time and bubble fraction against the
predictions, per schedule, stage count and micro-batch count.

Each row is one `heterps-run --train` of the Fashion CNN cut into p stages
of equal op counts (--split-stages), batch 64, one thread per stage replica
(this machine has 2 cores: p = 2 is the honest case), SGD on random data.
The first step of each run is left out. Columns, from the run's report:
  measured      mean step time (pull + schedule + push)
  cost model    HeterPS cost model on the measured stage times: steady
                state, PS traffic overlapped, no fill or drain
  schedule      the schedule simulated with the measured per-micro-batch
                forward and backward times, plus the slowest pull and push
  bubble        idle share of the compute phase: measured, simulated, and
                the formula (p - 1) / (m + p - 1)

Usage: schedules.py ROOT [--steps N]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

BATCH = 64
CONFIGS = [  # (schedule, stages, micro-batches, replicas)
    ("gpipe", 1, 1, "1"),
    ("gpipe", 2, 1, "1,1"),
    ("gpipe", 2, 4, "1,1"),
    ("gpipe", 2, 8, "1,1"),
    ("1f1b", 2, 4, "1,1"),
    ("1f1b", 2, 8, "1,1"),
    ("gpipe", 4, 8, "1,1,1,1"),
    ("1f1b", 4, 8, "1,1,1,1"),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    tool = os.path.join(args.root, "build", "bin", "heterps-run")
    model = os.path.join(args.root, "examples", "models", "fashion_cnn.onnx")
    work = tempfile.mkdtemp(prefix="heterps-pipeline-bench")
    rng = np.random.default_rng(0)
    n = BATCH * args.steps
    np.save(os.path.join(work, "x.npy"),
            rng.random((n, 1, 28, 28), dtype=np.float32))
    np.save(os.path.join(work, "y.npy"), rng.integers(0, 10, n))

    print("| schedule | p | m | step ms | cost model ms | schedule ms | "
          "bubble measured | simulated | formula |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for schedule, p, m, replicas in CONFIGS:
        report = os.path.join(work, "report.json")
        cmd = [tool, model, "--train",
               "--data", "inputs=x.npy,targets=y.npy", "--batch", str(BATCH),
               "--threads", "1", "--schedule", schedule,
               "--micro-batches", str(m), "--replicas", replicas,
               "--report", report]
        if p > 1:
            cmd += ["--split-stages", str(p)]
        subprocess.run(cmd, cwd=work, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        r = json.load(open(report))["pipeline"]
        step = r["step_s"]
        print(f"| {schedule} | {p} | {m} | {1e3 * step:.2f} | "
              f"{1e3 * r['cost_model_step_s']:.2f} "
              f"({r['cost_model_step_s'] / step:.2f}x) | "
              f"{1e3 * r['schedule_model_step_s']:.2f} "
              f"({r['schedule_model_step_s'] / step:.2f}x) | "
              f"{r['bubble_fraction']:.3f} | "
              f"{r['schedule_model_bubble_fraction']:.3f} | "
              f"{r['bubble_fraction_formula']:.3f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
