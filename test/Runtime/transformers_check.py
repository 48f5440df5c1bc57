#!/usr/bin/env python3
"""End-to-end check of the three transformer kinds at tiny sizes.

Usage: transformers_check.py HETERPS_RUN MODELS_PY WORK

Exports the tiny ViT, encoder and decoder of benchmarks/transformers/
models.py (random weights, dynamic batch and sequence) and, for each, runs
heterps-run at two input shapes (batch and sequence length both change
within one model) against PyTorch's outputs of the same module (relative
difference over max |PyTorch| below 1e-4), then trains it for two epochs,
single-stage and as a 2-stage pipeline. Prints one line per check; exits 1
on the first failure.
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
from onnx import numpy_helper


def main():
    run, models_py, work = sys.argv[1:4]
    spec = importlib.util.spec_from_file_location("models", models_py)
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    subprocess.run([sys.executable, models_py, work], check=True,
                   capture_output=True)
    rng = np.random.default_rng(0)
    for name in ("vit", "encoder", "decoder"):
        path = os.path.join(work, f"{name}-tiny.onnx")
        torch.manual_seed(0)
        module, _, _ = models.build(name, "tiny")
        module.eval()
        vocab = models.GPT_VOCAB["tiny"] if name == "decoder" else 97
        shapes = [(1, 5), (3, 12)] if name != "vit" else [(1, 0), (3, 0)]
        for batch, seq in shapes:
            x = (rng.random((batch, 3, 32, 32), dtype=np.float32)
                 if name == "vit" else
                 rng.integers(0, vocab, (batch, seq), dtype=np.int64))
            with torch.no_grad():
                want = module(torch.from_numpy(x)).numpy()
            with tempfile.TemporaryDirectory() as tmp:
                np.save(os.path.join(tmp, "x.npy"), x)
                subprocess.run([run, path, "--input",
                                "input=" + os.path.join(tmp, "x.npy"),
                                "--output-dir", tmp], check=True,
                               capture_output=True)
                got = numpy_helper.to_array(
                    onnx.load_tensor(os.path.join(tmp, "output_0.pb")))
            rel = float(np.abs(got - want).max() / np.abs(want).max())
            ok = got.shape == want.shape and rel < 1e-4
            print(f"{name} input {list(x.shape)}: output {list(got.shape)}, "
                  f"{'ok' if ok else 'WRONG'} (max rel diff {rel:.1e})")
            if not ok:
                return 1
        # Training data: classes per sample, or next tokens for the decoder.
        n = 16
        if name == "vit":
            x = rng.random((n, 3, 32, 32), dtype=np.float32)
        else:
            x = rng.integers(0, vocab, (n, 8), dtype=np.int64)
        y = (rng.integers(0, vocab, (n, 8), dtype=np.int64)
             if name == "decoder" else rng.integers(0, 5, (n,)))
        xp, yp = (os.path.join(work, f"{name}-{k}.npy") for k in "xy")
        np.save(xp, x)
        np.save(yp, y.astype(np.int64))
        for extra in ([], ["--split-stages", "2", "--micro-batches", "2"]):
            report = os.path.join(work, "report.json")
            subprocess.run([run, path, "--train", "--data",
                            f"inputs={xp},targets={yp}", "--batch", "4",
                            "--epochs", "2", "--lr", "0.05", "--report",
                            report] + extra, check=True, capture_output=True)
            losses = [e["loss"] for e in json.load(open(report))["epochs"]]
            ok = all(np.isfinite(losses)) and len(losses) == 2
            kind = "pipelined" if extra else "trained"
            print(f"{name} {kind}: {'ok' if ok else 'WRONG'} "
                  f"(2 epochs, {len(losses)} losses)")
            if not ok:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
