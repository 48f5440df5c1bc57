"""The CTR workload trained by heterps-run, 1 stage against 2 stages.

Four embedding tables of 10M rows x 16 (served sparsely by the parameter
server: never loaded, 2.5 GB if they were) + Concat + MLP 64-32-1, trained
with bce-logits on a synthetic click set drawn from a known ground truth
(ctr.py). A fixed budget: one epoch of 200k samples at batch 512, Adagrad
(dense at the server, sparse rows at the server), one thread per stage
replica. Prints samples/s (the median of 3 runs: this machine's timings
vary by tens of percent from run to run), eval AUC after the budget beside
the true logits' AUC (the ceiling), sparse rows stored and the peak RSS.

Usage: bench.py ROOT WORK_DIR
"""
import json
import os
import subprocess
import sys

MEASURE = ("import resource, subprocess, sys; "
           "subprocess.run(sys.argv[1:], check=True, "
           "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
           "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")

CONFIGS = [  # (label, extra heterps-run options)
    ("1 stage", []),
    ("2 stages, gpipe, m=4", ["--split-stages", "2", "--micro-batches", "4"]),
    ("2 stages, 1f1b, m=4", ["--split-stages", "2", "--micro-batches", "4",
                             "--schedule", "1f1b"]),
    ("2 stages, 1f1b, m=4, replicas 1,2",
     ["--split-stages", "2", "--micro-batches", "4", "--schedule", "1f1b",
      "--replicas", "1,2"]),
]


def main():
    root, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    ctr = os.path.join(root, "benchmarks", "ctr", "ctr.py")
    model = os.path.join(work, "ctr.onnx")
    data = os.path.join(work, "data")
    if not os.path.exists(model):
        subprocess.run([sys.executable, ctr, "model", model], check=True)
    truth = subprocess.run([sys.executable, ctr, "data", data],
                           check=True, capture_output=True, text=True)
    print("data:", truth.stdout.strip())
    tool = os.path.join(root, "build", "bin", "heterps-run")
    common = [tool, model, "--train", "--loss", "bce-logits",
              "--data", "inputs=%s/train_ids.npy,targets=%s/train_clicks.npy"
              % (data, data),
              "--eval-data", "inputs=%s/eval_ids.npy,targets=%s/eval_clicks.npy"
              % (data, data),
              "--batch", "512", "--epochs", "1", "--optimizer", "adagrad",
              "--lr", "0.05", "--threads", "1", "--sparse-min-rows", "1000000"]
    print()
    print("| run | samples/s | eval AUC | eval loss | sparse rows stored | "
          "of 40M | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, extra in CONFIGS:
        report = os.path.join(work, "report.json")
        rates = []
        for _ in range(3):
            # A wrapper per run: its only child is this heterps-run, so its
            # children's peak RSS is this run's.
            measured = subprocess.run(
                [sys.executable, "-c", MEASURE] + common + extra +
                ["--report", report], check=True, capture_output=True,
                text=True)
            rss = int(measured.stdout.split()[-1])
            r = json.load(open(report))
            epoch = r["epochs"][-1]
            rates.append(epoch["samples_per_s"])
        stored = r["pipeline"]["sparse_rows_stored"]
        print("| %s | %.0f | %.4f | %.4f | %d | %.2f%% | %d |" % (
            label, sorted(rates)[1], epoch["eval_auc"],
            epoch["eval_loss"], stored,
            100.0 * stored / r["pipeline"]["sparse_rows"], rss // 1024))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
