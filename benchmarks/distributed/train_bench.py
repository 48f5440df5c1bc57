"""Multi-process training against the single-process pipelined trainer.

For the Fashion-MNIST CNN (batch 64) and the CTR workload (4 x 10M x 16
sparse tables + MLP, batch 512), 2 stages, GPipe and 1F1B with 4
micro-batches: samples/s of the same plan trained in one process (stages
as threads, the parameter server in process) and as a distributed job of
local processes (--distributed=local: coordinator, 2 parameter-server
shards, a worker per stage, all over loopback gRPC), run alternately, the
median of --rounds runs each; and the multi-process step time against the
schedule-aware prediction heterps-run prints (the simulated schedule with
each stage's measured times).

Usage: train_bench.py ROOT WORK_DIR [--rounds N] [--steps N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

SCHEDULES = [("gpipe", []), ("1f1b", ["--schedule", "1f1b"])]


def workloads(root, work):
    ctr = os.path.join(root, "benchmarks", "ctr", "ctr.py")
    model = os.path.join(work, "ctr.onnx")
    data = os.path.join(work, "ctr-data")
    if not os.path.exists(model):
        subprocess.run([sys.executable, ctr, "model", model], check=True)
    if not os.path.exists(data):
        subprocess.run([sys.executable, ctr, "data", data], check=True,
                       stdout=subprocess.DEVNULL)
    fashion = os.path.join(root, "examples", "models", "fashion_cnn.onnx")
    return [
        ("Fashion CNN", [fashion, "--data", "fashion-mnist:train",
                         "--batch", "64"]),
        ("CTR 4x10Mx16", [model, "--loss", "bce-logits", "--data",
                          "inputs=%s/train_ids.npy,targets=%s/train_clicks.npy"
                          % (data, data), "--batch", "512",
                          "--optimizer", "adagrad", "--lr", "0.05",
                          "--sparse-min-rows", "1000000"]),
    ]


def run(tool, args, report):
    subprocess.run([tool] + args + ["--report", report], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = json.load(open(report))
    p = r["pipeline"]
    return (r["epochs"][-1]["samples_per_s"], 1e3 * p["step_s"],
            1e3 * p["schedule_model_step_s"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("work")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    tool = os.path.join(args.root, "build", "bin", "heterps-run")
    report = os.path.join(args.work, "report.json")
    print("| model | schedule | 1 process samples/s | processes samples/s "
          "| ratio | processes step ms | predicted ms | predicted / measured |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, model_args in workloads(args.root, args.work):
        for schedule, extra in SCHEDULES:
            common = model_args + [
                "--train", "--epochs", "1", "--max-steps", str(args.steps),
                "--split-stages", "2", "--micro-batches", "4",
                "--threads", "1"] + extra
            one, many = [], []
            for _ in range(args.rounds):
                one.append(run(tool, common, report))
                many.append(run(tool, common + ["--distributed=local"],
                                report))
            rate1 = statistics.median(r[0] for r in one)
            rate = statistics.median(r[0] for r in many)
            step = statistics.median(r[1] for r in many)
            predicted = statistics.median(r[2] for r in many)
            print("| %s | %s | %.0f | %.0f | %.2fx | %.2f | %.2f | %.2f |" % (
                name, schedule, rate1, rate, rate / rate1, step, predicted,
                predicted / step))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
