#!/usr/bin/env python3
"""Placement strategies compared on measured step times on this machine.

Five strategies choose a plan for each of four models -- `tapp` (searches on
step times it measures by training candidate plans in one process,
heterps-run --strategy tapp), `tapp-processes` (the same search, each
candidate trained as a job of local processes: --distributed=local) and the
cost-model planners `rl`, `exact` and `greedy` -- and every
chosen plan is then trained pipelined by heterps-run and timed. The models: the
Fashion-MNIST CNN (examples/models), a CTR model with four small (dense)
embedding tables (benchmarks/ctr/ctr.py), the tiny BERT-style encoder
(benchmarks/transformers/models.py; trained on --seq tokens, and costed at that
length: heterps-run has no --onnx-dim, so a copy with the length fixed is
run) and an MLP chain of 12 Gemm+Relu layers of
width 256 written here with onnx.helper. Data are random .npy files.

The cluster is this 2-core machine seen as two CPU device types, `core-a` and
`core-b` (kind cpu, max_count 1, one core's rates each, the same price), so
that a plan has one or two stages, each stage training on its own core
(--threads 1). The job's throughput limit is meant to be out of reach, so
that every strategy maximises throughput (minimises the step time, TAPP's
objective). heterps-run provisions the chosen plan against that limit and
fails when it is unmet, so the plans are chosen and then run in two passes:

* rl, exact, greedy: heterps-opt places the model on the cluster with
  throughput_limit 1e9 (hps-annotate-costs, hps-place save=..., then
  hps-form-stages and hps-report: no provisioning) and saves the placement;
* tapp, tapp-processes: heterps-run --strategy tapp on the cluster with the
  limit just below the cost model's one-stage throughput (the least any plan
  reaches in the cost model, so that provisioning passes), which is far
  above any measured throughput: every candidate misses it and TAPP ranks
  them by shortfall, i.e. by measured step. (The script checks this and
  says so if not.)
* every chosen plan is then trained with heterps-run --placement FILE on that
  second cluster, --rounds times (strategies alternating within a round, in
  a rotated order) and the median of report["pipeline"]["step_s"] (the mean
  step after the first) is reported beside the cost model's step,
  batch / report["plan"]["throughput"]. Each plan is trained twice a round:
  in one process (a thread per stage) and as a distributed job of local
  processes (heterps-run --distributed=local: the coordinator, two
  parameter-server shards and a worker process per stage, over gRPC on
  loopback), so the nodes are processes as well as worker groups;
  --no-processes leaves the second out.

Usage (about 3 minutes here; needs the build in build/, or --build):

  /usr/bin/python3 benchmarks/placement/measured.py [--work DIR]
      [--build DIR] [--models cnn,ctr,encoder,chain] [--rounds 3]
      [--batch 32] [--steps 100] [--micro-batches 4] [--tapp-plans 30]
      [--tapp-seconds 60] [--rl-seconds 10] [--seq 32] [--no-processes]

Prints one markdown table (and a few lines about the run) on stdout; progress
goes to stderr.
"""

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
STRATEGIES = ["tapp", "tapp-processes", "rl", "exact", "greedy"]
MODELS = ["cnn", "ctr", "encoder", "chain"]

# One core of this machine (examples/clusters/this-machine-cpu.yaml
# describes both cores: 150 effective GFLOP/s; its 38 GB/s copy and 19 GB/s
# in-process parameter-server traffic are kept).
CLUSTER = """\
# This 2-core machine as two CPU device types of one core each (a stage on
# each core with --threads 1): examples/clusters/this-machine-cpu.yaml's
# figures with its GFLOP/s (both cores) and price halved; the same price.
device_types:
""" + "".join("""  - name: core-%s
    kind: cpu
    price_per_hour: 0.0425
    max_count: 1
    gflops: 75
    memory_bandwidth_gbs: 38
    network_bandwidth_gbs: 19
""" % core for core in "ab") + """job:
  batch_size: {batch}
  samples_per_epoch: 60000
  epochs: 1
  throughput_limit: {limit!r}
"""


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def one_line(text):
    """The error line of a failed run (heterps-run: error: ...)."""
    lines = [l for l in text.strip().splitlines() if l.strip()]
    for l in reversed(lines):
        if "error" in l.lower():
            return l.strip()
    return lines[-1].strip() if lines else "failed without a message"


# --------------------------------------------------------------- models ---

def make_cnn(work, n):
    rng = np.random.default_rng(0)
    x, y = (os.path.join(work, "cnn-%s.npy" % k) for k in "xy")
    np.save(x, rng.random((n, 1, 28, 28), dtype=np.float32))
    np.save(y, rng.integers(0, 10, n).astype(np.int64))
    return dict(model=os.path.join(ROOT, "examples", "models",
                                   "fashion_cnn.onnx"),
                data="inputs=%s,targets=%s" % (x, y), extra=[])


def make_ctr(work, n):
    ctr = os.path.join(ROOT, "benchmarks", "ctr", "ctr.py")
    model = os.path.join(work, "ctr.onnx")
    subprocess.run([sys.executable, ctr, "model", model, "--tables", "4",
                    "--rows", "1000"], check=True, capture_output=True)
    subprocess.run([sys.executable, ctr, "data", os.path.join(work, "ctr"),
                    "--tables", "4", "--rows", "1000", "--train", str(n),
                    "--eval", "64"], check=True, capture_output=True)
    d = os.path.join(work, "ctr")
    return dict(model=model, extra=["--loss", "bce-logits"],
                data="inputs=%s/train_ids.npy,targets=%s/train_clicks.npy"
                % (d, d))


def make_encoder(work, n, seq):
    models = os.path.join(ROOT, "benchmarks", "transformers", "models.py")
    subprocess.run([sys.executable, models, work, "encoder", "--size",
                    "tiny"], check=True, capture_output=True)
    # models.py SIZES["tiny"]: vocab 97, 5 classes, 64 positions.
    rng = np.random.default_rng(1)
    x, y = (os.path.join(work, "encoder-%s.npy" % k) for k in "xy")
    np.save(x, rng.integers(0, 97, (n, seq), dtype=np.int64))
    np.save(y, rng.integers(0, 5, n).astype(np.int64))
    # heterps-run has no --onnx-dim: the cost model would count the dynamic
    # sequence length as 1. A copy with it fixed to --seq costs every layer
    # at the length trained (what heterps-opt --onnx-dim seq=N does).
    model = onnx.load(os.path.join(work, "encoder-tiny.onnx"))
    for dim in model.graph.input[0].type.tensor_type.shape.dim:
        if dim.dim_param == "seq":
            dim.ClearField("dim_param")
            dim.dim_value = seq
    path = os.path.join(work, "encoder-tiny-seq%d.onnx" % seq)
    onnx.save(model, path)
    return dict(model=path, data="inputs=%s,targets=%s" % (x, y), extra=[])


def make_chain(work, n, layers=12, width=256, classes=10):
    rng = np.random.default_rng(2)
    nodes, inits, x = [], [], "x"
    for i in range(layers + 1):
        out = classes if i == layers else width
        w = rng.uniform(-1, 1, (out, width)).astype(np.float32) * np.float32(
            math.sqrt(6 / (width + out)))
        inits += [numpy_helper.from_array(w, "w%d" % i),
                  numpy_helper.from_array(np.zeros(out, np.float32),
                                          "b%d" % i)]
        nodes.append(helper.make_node("Gemm", [x, "w%d" % i, "b%d" % i],
                                      ["fc%d" % i], transB=1,
                                      name="fc%d" % i))
        x = "fc%d" % i
        if i < layers:
            nodes.append(helper.make_node("Relu", [x], ["relu%d" % i],
                                          name="relu%d" % i))
            x = "relu%d" % i
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                       ["batch", width])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT,
                                       ["batch", classes])], inits)
    model = os.path.join(work, "chain.onnx")
    onnx.save(helper.make_model(graph,
                                opset_imports=[helper.make_opsetid("", 13)]),
              model)
    xs, ys = (os.path.join(work, "chain-%s.npy" % k) for k in "xy")
    np.save(xs, rng.standard_normal((n, width)).astype(np.float32))
    np.save(ys, rng.integers(0, classes, n).astype(np.int64))
    return dict(model=model, data="inputs=%s,targets=%s" % (xs, ys),
                extra=[])


# ------------------------------------------------------------- running ---

class Tools:
    def __init__(self, build):
        self.run_bin = os.path.join(build, "bin", "heterps-run")
        self.opt_bin = os.path.join(build, "bin", "heterps-opt")
        self.env = dict(os.environ)
        lib = os.path.join(build, "lib")
        if os.path.isdir(lib):  # a copied build finds its own libraries
            self.env["LD_LIBRARY_PATH"] = ":".join(
                p for p in (lib, self.env.get("LD_LIBRARY_PATH")) if p)

    def call(self, cmd, timeout):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True,
                               env=self.env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, "timed out after %d s" % timeout
        if p.returncode != 0:
            return None, one_line(p.stderr + p.stdout)
        return p, None


def write_cluster(path, batch, limit):
    with open(path, "w") as f:
        f.write(CLUSTER.format(batch=batch, limit=limit))
    return path


def opt_place(tools, m, cluster, strategy, work, rl_seconds):
    """heterps-opt: costs, placement (saved), stages, JSON report."""
    placement = os.path.join(work, "%s.%s.placement.json" % (m["name"],
                                                             strategy))
    report = os.path.join(work, "%s.%s.opt.json" % (m["name"], strategy))
    options = "strategy=%s save=%s" % (strategy, placement)
    if strategy == "rl":
        options += " time-budget=%g" % rl_seconds
    _, err = tools.call([tools.opt_bin, m["model"],
                         "--hps-annotate-costs=cluster=%s" % cluster,
                         "--hps-place=%s" % options, "--hps-form-stages",
                         "--hps-report=format=json output=%s" % report,
                         "-o", os.devnull], timeout=600)
    if err:
        return None, err
    return dict(placement=placement, report=json.load(open(report))), None


def train_cmd(tools, m, a, cluster, report, strategy_opts):
    """heterps-run training m pipelined on one core a stage."""
    return ([tools.run_bin, m["model"], "--cluster", cluster] +
            strategy_opts +
            ["--train", "--data", m["data"], "--batch", str(a.batch),
             "--threads", "1", "--schedule", "gpipe", "--micro-batches",
             str(a.micro_batches), "--max-steps", str(a.steps),
             "--report", report] + m["extra"])


def placement_of(plan):
    """{"layer": "type"} of a plan report's stages."""
    return {layer: s["device_type"] for s in plan["stages"]
            for layer in s["layers"]}


def describe(plan):
    """core-a [0,7) | core-b [7,12) over the plan's layer indices."""
    index = {l["name"]: i for i, l in enumerate(plan["layers"])}
    parts = []
    for s in plan["stages"]:
        ids = [index[l] for l in s["layers"]]
        parts.append("%s [%d,%d)" % (s["device_type"], min(ids),
                                     max(ids) + 1))
    return " \\| ".join(parts)


def spearman(a, b):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        for k, i in enumerate(order):
            r[i] = k
        return r
    if len(a) < 3:
        return float("nan")
    ra, rb = ranks(a), ranks(b)
    return float(np.corrcoef(ra, rb)[0, 1])


def fmt(v, digits=2):
    return "-" if v is None else "%.*f" % (digits, v)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", help="work directory (default: a temporary one, "
                   "removed at the end)")
    p.add_argument("--build", default=os.path.join(ROOT, "build"),
                   help="the build (bin/heterps-run, bin/heterps-opt, lib/)")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--micro-batches", type=int, default=4)
    p.add_argument("--tapp-plans", type=int, default=30)
    p.add_argument("--tapp-seconds", type=float, default=60)
    p.add_argument("--rl-seconds", type=float, default=10)
    p.add_argument("--seq", type=int, default=32,
                   help="the encoder's sequence length (data)")
    p.add_argument("--no-processes", action="store_true",
                   help="train the chosen plans in one process only, not "
                   "also as a distributed job of local processes")
    a = p.parse_args()
    tools = Tools(a.build)
    work = a.work or tempfile.mkdtemp(prefix="heterps-measured-")
    os.makedirs(work, exist_ok=True)
    models = a.models.split(",")
    strategies = a.strategies.split(",")
    n = a.batch * a.steps
    started = time.time()

    makers = {"cnn": lambda: make_cnn(work, n),
              "ctr": lambda: make_ctr(work, n),
              "encoder": lambda: make_encoder(work, n, a.seq),
              "chain": lambda: make_chain(work, n)}
    choose = write_cluster(os.path.join(work, "choose.yaml"), a.batch, 1e9)
    rows = {}      # (model, strategy) -> dict
    prepared = {}  # model -> dict with "measure" cluster
    notes = []
    for name in models:
        m = dict(makers[name](), name=name)
        prepared[name] = m
        # The cost model's one-stage throughput: the least of any plan.
        single, err = opt_place(tools, m, choose, "all-core-a", work, 0)
        if err:
            for s in strategies:
                rows[name, s] = dict(error=err)
            m["error"] = err
            continue
        t1 = single["report"]["throughput"]
        m["limit"] = float("%.6g" % (0.999 * t1))
        m["measure"] = write_cluster(os.path.join(work, name + ".yaml"),
                                     a.batch, m["limit"])
        for s in strategies:
            log("[%s] %s: choosing" % (name, s))
            row = rows.setdefault((name, s), {})
            if s.startswith("tapp"):
                report = os.path.join(work, "%s.%s.search.json" % (name, s))
                t0 = time.time()
                _, err = tools.call(
                    train_cmd(tools, m, a, m["measure"], report,
                              ["--strategy", "tapp", "--tapp-plans",
                               str(a.tapp_plans), "--search-seconds",
                               str(a.tapp_seconds)] +
                              (["--distributed=local"]
                               if s == "tapp-processes" else [])),
                    timeout=int(a.tapp_seconds * 3 + 120))
                if err:
                    row["error"] = err
                    continue
                plan = json.load(open(report))["plan"]
                placement = os.path.join(work, "%s.%s.placement.json"
                                         % (name, s))
                json.dump(placement_of(plan), open(placement, "w"))
                timed = plan.get("timed_plans", [])
                row.update(placement=placement, search_s=plan.get(
                    "search_time_s"), timed=len(timed), timed_plans=timed,
                    wall_s=time.time() - t0)
                fastest = max((a.batch / t["measured_step_s"]
                               for t in timed), default=0)
                if fastest >= m["limit"]:
                    notes.append(
                        "%s: a TAPP candidate measured %.0f samples/s, "
                        "above the limit %.0f: TAPP minimised cost among "
                        "those, not the step" % (name, fastest, m["limit"]))
            else:
                got, err = opt_place(tools, m, choose, s, work, a.rl_seconds)
                if err:
                    row["error"] = err
                    continue
                row.update(placement=got["placement"],
                           search_s=got["report"].get("search_time_s"),
                           evaluations=got["report"].get("evaluations"))

    # Each mode's median step per (model, strategy): in one process, and
    # as local processes talking gRPC.
    modes = {"steps": []}
    if not a.no_processes:
        modes["proc_steps"] = ["--distributed=local"]
    loads = []
    for r in range(a.rounds):
        loads.append(os.getloadavg()[0])
        for name in models:
            m = prepared[name]
            if "error" in m:
                continue
            order = strategies[r % len(strategies):] + \
                strategies[:r % len(strategies)]
            for s, (mode, extra) in ((s, mode) for s in order
                                     for mode in modes.items()):
                row = rows[name, s]
                if "placement" not in row or row.get("error"):
                    continue
                log("[%s] %s: round %d%s" % (name, s, r + 1, " (processes)"
                                             if extra else ""))
                report = os.path.join(work, "%s.%s.%s.r%d.json"
                                      % (name, s, mode, r))
                _, err = tools.call(
                    train_cmd(tools, m, a, m["measure"], report,
                              ["--placement", row["placement"]] + extra),
                    timeout=600)
                if err:
                    row["error"] = err
                    continue
                rep = json.load(open(report))
                row.setdefault(mode, []).append(rep["pipeline"]["step_s"])
                row["plan"] = rep["plan"]
    loads.append(os.getloadavg()[0])

    # ----------------------------------------------------------- table ---
    def median_spread(steps):
        mid = statistics.median(steps)
        return mid, "%.2f (±%.0f%%)" % (
            1e3 * mid, 50 * (max(steps) - min(steps)) / mid)

    procs = "proc_steps" in modes
    print("| model | strategy | stages | predicted step ms | measured step "
          "ms | predicted/measured | %ssearch s | plans timed |"
          % ("as processes ms | processes/one process | " if procs else ""))
    print("|---|---|---|" + "---:|" * (7 if procs else 5))
    best = {}  # mode -> model -> the fastest strategy's median
    for mode in modes:
        for name in models:
            steps = [statistics.median(rows[name, s][mode])
                     for s in strategies if rows[name, s].get(mode) and
                     not rows[name, s].get("error")]
            if steps:
                best.setdefault(mode, {})[name] = min(steps)
    for name in models:
        for s in strategies:
            row = rows[name, s]
            cells = [name, s]
            if row.get("error") or not row.get("steps"):
                cells += ["error: " + row.get("error", "no step measured")
                          .replace("|", "\\|")] + ["-"] * (7 if procs else 5)
                print("| " + " | ".join(cells) + " |")
                continue
            plan = row["plan"]
            predicted = a.batch / plan["throughput"]
            measured, text = median_spread(row["steps"])
            cells += [describe(plan), fmt(1e3 * predicted, 3), text,
                      fmt(predicted / measured, 3)]
            if procs:
                apart, text = median_spread(row["proc_steps"])
                cells += [text, fmt(apart / measured, 2)]
            cells += [fmt(row.get("search_s"), 1),
                      str(row["timed"]) if s.startswith("tapp") else "-"]
            print("| " + " | ".join(cells) + " |")
    print()
    for mode, label in (("steps", "in one process"),
                        ("proc_steps", "as local processes")):
        if mode not in modes:
            continue
        means = []
        for s in strategies:
            ratios = [statistics.median(rows[name, s][mode]) /
                      best[mode][name] for name in models
                      if rows[name, s].get(mode) and
                      not rows[name, s].get("error")]
            if ratios:
                g = math.exp(sum(map(math.log, ratios)) / len(ratios))
                means.append("%s %.3f (%d models)" % (s, g, len(ratios)))
            else:
                means.append("%s -" % s)
        print("Geometric mean of measured step / the best strategy's per "
              "model, %s: %s." % (label, ", ".join(means)))

    # core-a and core-b are the same hardware: plans with the same stage
    # boundaries are one plan, and their runs pooled tell plan from noise.
    pooled = []
    for name in models:
        shapes = {}
        for s in strategies:
            row = rows[name, s]
            if row.get("steps") and not row.get("error"):
                cut = tuple(len(st["layers"]) for st in row["plan"]["stages"])
                shapes.setdefault(cut, []).append(s)
        parts = []
        for cut, group in sorted(shapes.items()):
            steps = sorted(x for s in group for x in rows[name, s]["steps"])
            parts.append("%s (%d stage%s, layers %s): median %.2f ms of %d "
                         "runs, %.2f-%.2f" % (
                             "=".join(group), len(cut),
                             "" if len(cut) == 1 else "s",
                             "+".join(map(str, cut)),
                             1e3 * statistics.median(steps), len(steps),
                             1e3 * steps[0], 1e3 * steps[-1]))
        if parts:
            pooled.append("%s: %s" % (name, "; ".join(parts)))
    if pooled:
        print()
        print("The same plans up to the core names (core-a and core-b are "
              "alike), their runs in one process pooled:")
        for l in pooled:
            print("- " + l)

    # TAPP's own view: how the cost model ranks the plans TAPP timed.
    lines = []
    for name, s in ((name, s) for name in models for s in strategies
                    if s.startswith("tapp")):
        timed = rows.get((name, s), {}).get("timed_plans")
        if not timed:
            continue
        meas = [t["measured_step_s"] for t in timed]
        pred = [t["predicted_step_s"] for t in timed]
        by_model = min(range(len(timed)), key=lambda i: pred[i])
        fits = 0
        for t in timed:  # "core-a x1 [0, 3), core-b x1 [3, 10)"
            used = {}
            for device, k in re.findall(r"(\S+) x(\d+) \[", t["stages"]):
                used[device] = used.get(device, 0) + int(k)
            fits += all(k <= 1 for k in used.values())  # max_count 1
        lines.append(
            "%s, %s: %d plans (%d within max_count), measured %.2f-%.2f ms, "
            "predicted %.3f-%.3f ms, Spearman(predicted, measured) %.2f; the "
            "cost model's best of them measured %.2f ms (the fastest %.2f)"
            % (name, s, len(timed), fits, 1e3 * min(meas), 1e3 * max(meas),
                1e3 * min(pred), 1e3 * max(pred), spearman(pred, meas),
                1e3 * meas[by_model], 1e3 * min(meas)))
    if lines:
        print()
        print("TAPP's timed candidates (its search's own measurements, "
              "1 warm-up + 3 timed steps each, in one process for tapp and "
              "as a job of local processes for tapp-processes; the cost "
              "model's step ignores max_count):")
        for l in lines:
            print("- " + l)
    print()
    print("Run: batch %d, %d micro-batches (gpipe), %d steps per run (step = "
          "mean after the first), median of %d rounds (± half the range); "
          "--threads 1; tapp %d plans / %g s, rl %g s; 1-minute load "
          "average %s; %.0f s in all." % (
              a.batch, a.micro_batches, a.steps, a.rounds, a.tapp_plans,
              a.tapp_seconds, a.rl_seconds,
              " ".join("%.1f" % l for l in loads), time.time() - started))
    for name in models:
        if "limit" in prepared[name]:
            print("- %s: measuring cluster's throughput_limit %.6g "
                  "samples/s (0.999 x the cost model's one-stage plan)"
                  % (name, prepared[name]["limit"]))
    for note in notes:
        print("- note: " + note)
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
