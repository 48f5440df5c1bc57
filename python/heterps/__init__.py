"""HeterPS-MLIR from Python: import ONNX models, plan them on a cluster of
device types, run them on NumPy arrays and train them.

    import heterps, numpy as np
    model = heterps.import_onnx("examples/models/fashion_cnn.onnx")
    plan = heterps.plan(model, cluster="examples/clusters/heterps-paper.yaml",
                        strategy="exact")
    print(plan.report["cost"], plan.layers[0]["device"])
    open("plan.html", "w").write(plan.to_html())
    session = heterps.Session(model, threads=2)
    (logits,) = session.run(None, {"image": np.zeros((1, 1, 28, 28), np.float32)})
    heterps.train(model, data="fashion-mnist:train", epochs=1, lr=0.05)

Errors are heterps.Error (a RuntimeError) carrying the same one-line
message as heterps-opt and heterps-run; bad arguments are ValueError or
TypeError. The GIL is released while models are planned, run and trained.
See docs/python.md.
"""

import json
import os
import sys

import numpy as np

from . import _heterps
from ._heterps import Error

Error.__module__ = "heterps"  # shown as heterps.Error in tracebacks
from ._progress import ProgressBar

__all__ = ["Error", "Model", "Plan", "Session", "NodeArg", "import_onnx",
           "load", "plan", "train"]


class Model:
    """A model in the hps dialect. str() gives its IR."""

    def __init__(self, ir):
        self._ir = ir
        self._stats = None

    @property
    def path(self):
        """The file the model came from."""
        return self._ir.path

    def __str__(self):
        return str(self._ir)

    def __repr__(self):
        return (f"<heterps.{type(self).__name__} {os.path.basename(self.path)}"
                f", {len(self.layers)} layers>")

    def _layer_stats(self):
        if self._stats is None:
            self._stats = json.loads(self._ir.layer_stats_json())
        return self._stats

    @property
    def layers(self):
        """Per layer, in op order: name, op, kind, flops, param_bytes and
        activation_bytes (as heterps-opt --hps-layer-stats prints them)."""
        return self._layer_stats()["layers"]

    @property
    def totals(self):
        """The layers' flops, param_bytes and activation_bytes summed."""
        return self._layer_stats()["total"]

    def save(self, path):
        """Writes the IR (replacing `path` atomically); heterps.load and
        heterps-opt read it back."""
        self._ir.save(os.fspath(path))

    def plan(self, cluster, **options):
        """heterps.plan(self, cluster, ...)."""
        return plan(self, cluster, **options)


class Plan(Model):
    """A model with its placement: device type per layer, stages, replicas,
    and the cluster spec it was planned on (so a saved plan is
    self-contained)."""

    def __init__(self, ir):
        super().__init__(ir)
        self._report = None

    @property
    def report(self):
        """The plan's report as hps-report format=json writes it: cost,
        throughput, devices, stages, layers with their costs, and the
        search's figures (see docs/cost-model.md)."""
        if self._report is None:
            self._report = json.loads(self._ir.report("json"))
        return self._report

    @property
    def layers(self):
        """Per layer, in op order: the figures of Model.layers and the
        layer's device type, stage and the stage's replicas."""
        where = {}
        for stage in self.report["stages"]:
            for name in stage["layers"]:
                where[name] = (stage["device_type"], stage["index"],
                               stage["replicas"])
        layers = []
        for layer in super().layers:
            device, stage, replicas = where.get(layer["name"], (None, None, None))
            layers.append(dict(layer, device=device, stage=stage,
                               replicas=replicas))
        return layers

    @property
    def stages(self):
        """Per stage: index, device_type, layers, replicas, ct_s, dt_s, et_s
        and throughput."""
        return self.report["stages"]

    @property
    def cost(self):
        """Dollars for the whole job."""
        return self.report["cost"]

    @property
    def throughput(self):
        """Samples per second of the pipeline."""
        return self.report["throughput"]

    def to_text(self):
        """The report as hps-report's tables."""
        return self._ir.report("text")

    def to_html(self):
        """One self-contained HTML page of pictures of the plan (inline SVG,
        no scripts, nothing fetched), as hps-report format=html writes it."""
        return self._ir.report("html")

    @staticmethod
    def load(path):
        """A plan saved by Plan.save (or written by heterps-opt)."""
        loaded = load(path)
        if not isinstance(loaded, Plan):
            raise Error(f"{path}: holds a model without a plan "
                        "(plan it with heterps.plan)")
        return loaded


def import_onnx(path, dims=None):
    """Imports an ONNX model. `dims` fixes named dynamic dimensions, as
    heterps-opt --onnx-dim NAME=SIZE: {"batch": 1, "seq": 128}."""
    dims = dict(dims or {})
    for name, size in dims.items():
        if not isinstance(name, str) or int(size) < 1:
            raise ValueError(f"dims: {name!r}={size!r}: expected a name and a "
                             "size of at least 1")
    return Model(_heterps.import_onnx(os.fspath(path),
                                      {k: int(v) for k, v in dims.items()}))


def load(path):
    """A model or plan saved as IR (Model.save, Plan.save, heterps-opt -o)."""
    ir = _heterps.load_ir(os.fspath(path))
    return Plan(ir) if ir.is_planned() else Model(ir)


def _model_of(model):
    if isinstance(model, Model):
        return model
    path = os.fspath(model)
    return import_onnx(path) if path.endswith(".onnx") else load(path)


def plan(model, cluster, strategy="rl", throughput=None, seed=1,
         time_budget=10.0, certify=False, profile=None, placement=None):
    """Plans `model` (a Model or a path) on the cluster spec `cluster` (YAML):
    the hps-plan pipeline (costs, placement, stages, replicas), as
    heterps-opt --hps-plan does.

    strategy: rl (default), exact, greedy, random, genetic, exhaustive,
      manual (with `placement`, a JSON file) or all-<device type>.
    throughput: the floor in samples/s (default: the spec's job).
    time_budget: seconds of rl's search. certify: also run exact and
      record the optimum and the gap in the report.
    profile: a JSON profile of measured layer costs."""
    if throughput is not None and throughput < 0:
        raise ValueError(f"throughput must be at least 0, got {throughput}")
    if time_budget <= 0:
        raise ValueError(f"time_budget must be positive, got {time_budget}")
    ir = _model_of(model)._ir.plan(
        cluster=os.fspath(cluster), strategy=strategy,
        throughput=-1.0 if throughput is None else float(throughput),
        seed=int(seed), time_budget=float(time_budget), certify=bool(certify),
        profile=os.fspath(profile) if profile else "",
        placement=os.fspath(placement) if placement else "")
    return Plan(ir)


class NodeArg:
    """An input or output of a Session, as onnxruntime.NodeArg: name, shape
    (None for a dynamic dimension) and type ("tensor(float)")."""

    _TYPES = {"float32": "tensor(float)", "int64": "tensor(int64)",
              "bool": "tensor(bool)"}

    def __init__(self, name, shape, dtype):
        self.name = name
        self.shape = [None if d < 0 else d for d in shape]
        self.type = self._TYPES[dtype]
        self.dtype = np.dtype(dtype)

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape})"


class Session:
    """Runs a model on NumPy arrays, as onnxruntime.InferenceSession.

    `model` is a Model, a Plan (its ops run where the runtime serves their
    device types), or a path: an .onnx model, saved IR, or an executable
    plan file (heterps-opt --hps-lower-to-runtime). `threads`: threads per
    kernel (0: all cores). Inputs that are C-contiguous arrays of the
    input's element type are used in place, not copied; outputs own the
    memory the run wrote. emulate_missing_devices: ops placed on device
    kinds this machine has no backend for run on the emulated device
    (heterps-run --emulate-missing-devices); otherwise that is an error."""

    def __init__(self, model, threads=0, emulate_missing_devices=False):
        if not 0 <= int(threads) <= 1024:
            raise ValueError(f"threads must be between 0 and 1024, got {threads}")
        if isinstance(model, (str, os.PathLike)) and not os.fspath(
                model).endswith((".onnx", ".mlir")):
            self._session = _heterps.Session(
                plan_file=os.fspath(model), threads=int(threads),
                emulate=bool(emulate_missing_devices))
        else:
            self._session = _heterps.Session(
                model=_model_of(model)._ir, threads=int(threads),
                emulate=bool(emulate_missing_devices))

    def get_inputs(self):
        return [NodeArg(*i) for i in self._session.inputs()]

    def get_outputs(self):
        return [NodeArg(*o) for o in self._session.outputs()]

    def run(self, output_names, input_feed):
        """The outputs named in `output_names` (None: all), in that order,
        for the inputs in `input_feed` (name -> array)."""
        return self._session.run(output_names, input_feed)


_TRAIN_CHECKS = {
    "epochs": (1, "at least 1"), "batch": (1, "at least 1"),
    "lr": (0, "positive"), "momentum": (0, "at least 0"),
    "weight_decay": (0, "at least 0"), "lr_step": (1, "at least 1"),
    "lr_gamma": (0, "positive"), "max_steps": (0, "at least 0"),
    "checkpoint_every": (0, "at least 0"),
    "stop_after_steps": (0, "at least 0"), "micro_batches": (1, "at least 1"),
    "ps_shards": (1, "at least 1"),
}


def _check_options(options):
    for key, (low, rule) in _TRAIN_CHECKS.items():
        value = options[key]
        bad = value <= low if rule == "positive" else value < low
        if bad:
            raise ValueError(f"{key} must be {rule}, got {value}")
    if not 0 <= options["threads"] <= 1024:
        raise ValueError(f"threads must be between 0 and 1024, got "
                         f"{options['threads']}")
    if options["resume"] and not options["checkpoint"]:
        raise ValueError("resume needs checkpoint=DIR")


def _arrays(data, what):
    """An (inputs, targets) pair as arrays the runtime takes: float64 as
    float32 and other integers as int64, C-contiguous."""
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise TypeError(f"{what}: expected a data spec string or an "
                        "(inputs, targets) pair of arrays")
    out = []
    for a in data:
        a = np.asarray(a)
        if a.dtype == np.float64:
            a = a.astype(np.float32)
        elif a.dtype.kind in "iu" and a.dtype != np.int64:
            a = a.astype(np.int64)
        out.append(np.ascontiguousarray(a))
    return tuple(out)


def train(model, data, *, eval_data=None, loss="softmax-ce", optimizer="sgd",
          lr=0.01, momentum=0.9, nesterov=False, weight_decay=0.0,
          lr_schedule="constant", lr_step=1, lr_gamma=0.1, epochs=1, batch=32,
          max_steps=0, seed=1, freeze=(), checkpoint="", checkpoint_every=0,
          resume=False, stop_after_steps=0, save_model="", threads=0,
          pipelined=False, schedule="gpipe", micro_batches=1, replicas=(),
          consistency="bsp", ps_shards=2, trace="",
          emulate_missing_devices=False, callback=None, progress=None):
    """Trains `model` (a Model, a Plan, or the path of an .onnx model or of
    saved IR) with the options of heterps-run --train, named alike
    (--lr-schedule is lr_schedule).

    data, eval_data: a data spec ("fashion-mnist:train",
      "inputs=X.npy,targets=Y.npy") or an (inputs, targets) pair of arrays.
    A plan of several stages, pipelined=True or a trace file trains
    through the in-process pipeline and parameter server (schedule,
    micro_batches, replicas, consistency, ps_shards); trace also writes the
    schedule's picture beside it (FILE.svg).
    callback(event) is called after every step ({"event": "step", "epoch",
    "step", "steps_per_epoch", "global_step", "loss", "samples_per_s",
    "seconds_left"}) and every epoch ({"event": "epoch"} and the epoch's
    report entry); returning False stops the run. progress: draw a progress
    bar on stderr (default: when stderr is a terminal). Ctrl-C stops the run
    (checkpointed when checkpoint is set) and raises KeyboardInterrupt.
    save_model writes the trained model as ONNX.

    Returns the report: parameters, samples, stopped, global_step,
    train_flops_per_sample and one entry per epoch (epoch, lr, steps, loss,
    seconds, samples_per_s, gflops_per_s, train_accuracy and, with
    eval_data, eval_loss and eval_accuracy)."""
    options = dict(
        loss=loss, optimizer=optimizer, lr=float(lr), momentum=float(momentum),
        nesterov=bool(nesterov), weight_decay=float(weight_decay),
        lr_schedule=lr_schedule, lr_step=int(lr_step), lr_gamma=float(lr_gamma),
        epochs=int(epochs), batch=int(batch), max_steps=int(max_steps),
        seed=int(seed), freeze=[str(f) for f in freeze],
        checkpoint=os.fspath(checkpoint), checkpoint_every=int(checkpoint_every),
        resume=bool(resume), stop_after_steps=int(stop_after_steps),
        save_model=os.fspath(save_model), threads=int(threads),
        pipelined=bool(pipelined), schedule=schedule,
        micro_batches=int(micro_batches), replicas=[int(r) for r in replicas],
        consistency=consistency, ps_shards=int(ps_shards),
        trace=os.fspath(trace),
        emulate_missing_devices=bool(emulate_missing_devices))
    _check_options(options)
    for key, value in (("data", data), ("eval_data", eval_data)):
        arrays = key.replace("data", "arrays")
        if value is None or isinstance(value, str):
            options[key], options[arrays] = value, None
        else:
            options[key], options[arrays] = None, _arrays(value, key)
    if options["data"] is None and options["arrays"] is None:
        raise TypeError("data: expected a data spec string or an "
                        "(inputs, targets) pair of arrays")

    bar = ProgressBar(epochs) if (progress if progress is not None
                                  else sys.stderr.isatty()) else None

    def on_step(event):
        if bar:
            bar.step(event)
        if callback is not None:
            return callback(dict(event, event="step"))
        return None

    def on_epoch(entry):
        if callback is not None:
            return callback(dict(entry, event="epoch"))
        return None

    options["on_step"] = on_step
    options["on_epoch"] = on_epoch
    try:
        return json.loads(_heterps.train(_model_of(model)._ir, options))
    finally:
        if bar:
            bar.close()
