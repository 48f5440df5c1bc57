"""Detection and recovery times of distributed jobs, and checkpoint costs.

For the workloads of benchmarks/distributed/train_bench.py (the
Fashion-MNIST CNN, batch 64, SGD; the CTR workload, 4 x 10M x 16 sparse
tables + MLP, batch 512, Adagrad), 2 stages of 1 replica, 2 parameter-server
shards, a checkpoint every 50 steps: each failure (a stage worker killed,
a shard killed, a worker stopped with SIGSTOP so that only the heartbeats
find it) is injected by test/Faults/Inputs/inject.py in the second epoch.
From its output: seconds from the strike to the coordinator's "given up
for dead" line (detection) and to its "recovered" line (every process
back, the checkpoint restored); the first step done after that is one
step later (the uninterrupted run's median step time is added); and the
steps redone. The median of --rounds runs each.

Then the cost of checkpoints at the default interval (one after each
epoch), from the uninterrupted run's report: milliseconds per checkpoint
(every shard writes its tables and optimizer state and every worker its
weights, at once, each file fsynced; then the coordinator writes the
manifest) and the size of the manifest with its parts.

Usage: faults_bench.py ROOT WORK_DIR [--rounds N]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                "distributed"))
from train_bench import workloads  # noqa: E402  (the same two workloads)

FAILURES = [
    ("worker killed", ["--rank", "4"]),
    ("shard killed", ["--rank", "1"]),
    ("worker stopped", ["--rank", "4", "--signal", "STOP",
                        "--resume-after", "30"]),
]


def uninterrupted(tool, args, work):
    """The median step time and the checkpoints' cost at the default
    interval, of a run without failures."""
    ck = os.path.join(work, "ck")
    shutil.rmtree(ck, ignore_errors=True)
    report = os.path.join(work, "report.json")
    subprocess.run([tool] + args + ["--checkpoint", ck, "--report", report],
                   check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    r = json.load(open(report))
    c = r["checkpoints"]
    return (r["pipeline"]["step_s"], 1e3 * c["seconds"] / c["count"],
            c["bytes"] / 1e6, c["count"])


def inject(root, tool, args, failure, work):
    ck = os.path.join(work, "ck-fail")
    shutil.rmtree(ck, ignore_errors=True)
    out = subprocess.run(
        [sys.executable, os.path.join(root, "test", "Faults", "Inputs",
                                      "inject.py"),
         "--when", r"epoch 2/3 step \d+/"] + failure + ["--", tool] + args +
        ["--checkpoint", ck, "--checkpoint-every", "50"],
        capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("the job failed:\n" + out.stdout[-3000:])
    times = re.search(r"detected after ([0-9.]+) s, recovered after "
                      r"([0-9.]+) s", out.stdout)
    redo = re.search(r"(\d+) steps to redo", out.stdout)
    if not times or not redo:
        sys.exit("no recovery in:\n" + out.stdout[-3000:])
    return float(times.group(1)), float(times.group(2)), int(redo.group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("work")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=150)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    tool = os.path.join(args.root, "build", "bin", "heterps-run")
    costs = []
    print("| model | failure | detected s | back s | first step after s "
          "| steps redone |")
    print("|---|---|---:|---:|---:|---:|")
    for name, model_args in workloads(args.root, args.work):
        common = model_args + [
            "--train", "--epochs", "3", "--max-steps", str(args.steps),
            "--split-stages", "2", "--micro-batches", "2", "--threads", "1",
            "--distributed=local"]
        step, ms, mb, count = uninterrupted(tool, common, args.work)
        costs.append((name, step, ms, mb, count))
        for label, failure in FAILURES:
            runs = [inject(args.root, tool, common, failure, args.work)
                    for _ in range(args.rounds)]
            detected = statistics.median(r[0] for r in runs)
            back = statistics.median(r[1] for r in runs)
            redone = statistics.median(r[2] for r in runs)
            print("| %s | %s | %.2f | %.2f | %.2f | %.0f |" % (
                name, label, detected, back, back + step, redone))
            sys.stdout.flush()
    print()
    print("| model | step ms | checkpoint ms | checkpoint MB | checkpoints "
          "| cost per epoch of %d steps |" % args.steps)
    print("|---|---:|---:|---:|---:|---:|")
    for name, step, ms, mb, count in costs:
        print("| %s | %.2f | %.1f | %.1f | %d | %.1f%% |" % (
            name, 1e3 * step, ms, mb, count,
            100 * ms / (1e3 * step * args.steps)))


if __name__ == "__main__":
    main()
