"""examples/python_quickstart.py, the README's Python twin, runs."""

import os
import subprocess
import sys

from conftest import SOURCE


def test_quickstart(tmp_path):
    done = subprocess.run(
        [sys.executable, str(SOURCE / "examples/python_quickstart.py"),
         str(tmp_path)], capture_output=True, text=True, timeout=300,
        env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert "<heterps.Model fashion_cnn.onnx, 10 layers>" in done.stdout
    assert "plan: throughput" in done.stdout
    assert "epoch 4: loss" in done.stdout
    for name in ("plan.html", "plan.mlir", "trained.onnx"):
        assert (tmp_path / name).stat().st_size > 0
