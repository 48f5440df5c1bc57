"""This machine's sgemm peak (sgemm-peak.c: oneDNN's dnnl_sgemm on 2048^3,
best of five), the yardstick the inference and training tables give their
GFLOP/s against."""

import os
import re
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def sgemm_peak(threads):
    """GFLOP/s of dnnl_sgemm on `threads` OpenMP threads."""
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "sgemm-peak")
        subprocess.run(["cc", "-O2", os.path.join(HERE, "sgemm-peak.c"),
                        "-o", exe, "-ldnnl"], check=True, capture_output=True)
        out = subprocess.run([exe], check=True, capture_output=True,
                             text=True, env=dict(os.environ,
                                                 OMP_NUM_THREADS=str(threads)))
    return float(re.search(r"\| ([0-9.]+) GFLOP/s", out.stdout).group(1))
