"""benchmarks/training/bench.py: its throughput table on a small model (a
row per batch, the speed-up the ratio of the two sides' samples/s,
PyTorch's share of the peak heterps' over the speed-up, and the summary:
the geometric mean and, for each row below 1.5x, the share of the peak
1.5x would need), and a failing heterps-run reported with its command line
and a non-zero exit; benchmarks/training/ab.py: its old/new table."""

import math
import os
import re
import subprocess
import sys

import pytest

BENCH = os.path.join(os.path.dirname(__file__), "..", "training", "bench.py")
HETERPS = os.environ.get("HETERPS_RUN")


def bench(tmp_path, heterps, *extra):
    return subprocess.run(
        [sys.executable, BENCH, "unused-root", str(tmp_path / "work"),
         "--heterps", heterps, "--models", "squeezenet1_1", "--batches", "2",
         "3", "--steps", "2", "--rounds", "1", "--threads", "1",
         "--skip-accuracy", *extra],
        capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not HETERPS, reason="HETERPS_RUN is not set")
def test_throughput_table_has_a_row_per_batch(tmp_path):
    out = bench(tmp_path, HETERPS)
    assert out.returncode == 0, out.stderr
    assert "dnnl_sgemm 2048^3 peak on 1 threads" in out.stdout
    rows = re.findall(r"^\| squeezenet1_1 \| (\d+) \| ([0-9.]+) \| ([0-9.]+) "
                      r"\| ([0-9.]+)x \| ([0-9.]+) \| (\d+)% \| (\d+)% \|$",
                      out.stdout, re.M)
    assert [r[0] for r in rows] == ["2", "3"], out.stdout
    speedups = []
    for batch, ours, ref, speedup, gflops, share, torch_share in rows:
        ours, ref, speedup = float(ours), float(ref), float(speedup)
        assert ours > 0 and ref > 0 and float(gflops) > 0
        # The table rounds samples/s to 0.05 and the speed-up to 0.005.
        low, high = (ours - 0.05) / (ref + 0.05), (ours + 0.05) / (ref - 0.05)
        assert low - 0.005 <= speedup <= high + 0.005
        # Both sides run the same FLOPs a sample; shares round to 0.5%.
        assert abs(int(torch_share) - int(share) / speedup) <= 1.5
        speedups.append(speedup)
        needs = re.search(r"^squeezenet1_1 at batch %s: 1.5x needs (\d+)%% of "
                          r"the sgemm peak \(PyTorch %s%%\)$" % (
                              batch, torch_share), out.stdout, re.M)
        assert bool(needs) == (speedup < 1.5), out.stdout
        if needs:
            assert abs(int(needs.group(1)) - 1.5 * int(torch_share)) <= 1.5
    mean = re.search(r"^geometric mean speed-up over PyTorch: ([0-9.]+)x "
                     r"\(2 runs\), (\d) at or above 1.5x$", out.stdout, re.M)
    assert mean, out.stdout
    assert abs(float(mean.group(1)) -
               math.sqrt(speedups[0] * speedups[1])) <= 0.01
    assert int(mean.group(2)) == sum(s >= 1.5 for s in speedups)


def test_failing_heterps_run_is_reported(tmp_path):
    out = bench(tmp_path, "/bin/false")
    assert out.returncode != 0
    assert "bench.py: /bin/false " in out.stderr
    assert "failed" in out.stderr


AB = os.path.join(os.path.dirname(__file__), "..", "training", "ab.py")


@pytest.mark.skipif(not HETERPS, reason="HETERPS_RUN is not set")
def test_ab_table_compares_two_builds(tmp_path):
    # The same binary as both builds: a row with both sides' samples/s and
    # their ratio (ab.py once broke on bench.py's random_data signature).
    out = subprocess.run(
        [sys.executable, AB, HETERPS, HETERPS, "--work", str(tmp_path),
         "--models", "squeezenet1_1", "--batch", "2", "--steps", "2",
         "--threads", "1", "--rounds", "1"],
        capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    row = re.search(r"^\| squeezenet1_1 \| 2 \| ([0-9.]+) \| ([0-9.]+) \| "
                    r"([0-9.]+) \|$", out.stdout, re.M)
    assert row, out.stdout
    old, new, ratio = map(float, row.groups())
    assert old > 0 and new > 0
    assert abs(ratio - new / old) <= 0.01 * ratio + 0.001
    assert "geometric mean new/old: %.3f" % ratio in out.stdout
