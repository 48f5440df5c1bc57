"""heterps.Session: outputs against numpy and heterps-run, the
InferenceSession-like interface, arrays used in place, errors, threads."""

import threading

import numpy as np
import pytest

import heterps
from conftest import FASHION_CNN, PAPER_CLUSTER, run_tool, spins_during, tool


def test_dense_model_against_numpy(dense_model):
    path, w, b = dense_model
    session = heterps.Session(path, threads=1)
    x = np.random.default_rng(1).standard_normal((5, 6)).astype(np.float32)
    (y,) = session.run(None, {"x": x})
    np.testing.assert_allclose(y, np.maximum(x @ w + b, 0), rtol=1e-5,
                               atol=1e-6)
    assert [(i.name, i.shape, i.type) for i in session.get_inputs()] == [
        ("x", [None, 6], "tensor(float)")]
    assert [(o.name, o.shape) for o in session.get_outputs()] == [
        ("y", [None, 4])]


def test_outputs_match_heterps_run(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper
    x = np.random.default_rng(2).random((3, 1, 28, 28), dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    run_tool(tool("heterps-run"), FASHION_CNN, "--threads", "1", "--input",
             f"image={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "out")
    expected = numpy_helper.to_array(
        onnx.load_tensor(str(tmp_path / "out" / "output_0.pb")))
    session = heterps.Session(heterps.import_onnx(FASHION_CNN), threads=1)
    (logits,) = session.run(["logits"], {"image": x})
    np.testing.assert_allclose(logits, expected, rtol=1e-6, atol=1e-7)


def test_arrays_are_used_in_place_and_left_unchanged(dense_model):
    path, w, b = dense_model
    session = heterps.Session(path)
    x = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
    x.setflags(write=False)  # a kernel writing into it would fault
    before = x.copy()
    (y,) = session.run(None, {"x": x})
    np.testing.assert_array_equal(x, before)
    # The output owns the runtime's buffer: no copy was made.
    assert not y.flags.owndata and y.base is not None
    # A strided view is copied once, with the same result.
    wide = np.zeros((4, 12), np.float32)
    wide[:, ::2] = x
    (z,) = session.run(None, {"x": wide[:, ::2]})
    np.testing.assert_array_equal(y, z)
    del session
    assert y.sum() == z.sum()  # outputs outlive the session


def test_input_errors(dense_model):
    path, _, _ = dense_model
    session = heterps.Session(path)
    x = np.zeros((2, 6), np.float32)
    with pytest.raises(heterps.Error, match="input 'x': expected float32, got float64"):
        session.run(None, {"x": x.astype(np.float64)})
    with pytest.raises(heterps.Error, match="missing input 'x'"):
        session.run(None, {})
    with pytest.raises(heterps.Error, match="'z' is no input"):
        session.run(None, {"x": x, "z": x})
    with pytest.raises(heterps.Error, match="'nope' is no output"):
        session.run(["nope"], {"x": x})
    with pytest.raises(heterps.Error, match=r"\[2, 7\]|2, 7"):
        session.run(None, {"x": np.zeros((2, 7), np.float32)})
    with pytest.raises(ValueError):
        heterps.Session(path, threads=-1)


def test_plan_on_missing_devices_needs_emulation():
    plan = heterps.plan(FASHION_CNN, cluster=PAPER_CLUSTER, strategy="all-v100")
    with pytest.raises(heterps.Error, match="v100"):
        heterps.Session(plan)
    session = heterps.Session(plan, emulate_missing_devices=True)
    x = np.random.default_rng(4).random((2, 1, 28, 28), dtype=np.float32)
    (emulated,) = session.run(None, {"image": x})
    (cpu,) = heterps.Session(FASHION_CNN).run(None, {"image": x})
    np.testing.assert_allclose(emulated, cpu, rtol=1e-5, atol=1e-6)


def test_sessions_run_from_several_threads(dense_model):
    path, w, b = dense_model
    session = heterps.Session(path, threads=1)
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal((8, 6)).astype(np.float32) for _ in range(4)]
    results = [None] * 4

    def work(i):
        own = heterps.Session(path, threads=1)
        for k in range(20):
            # A session of its own, and one all threads share.
            (results[i],) = (own if k % 2 else session).run(
                None, {"x": inputs[i]})

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, y in zip(inputs, results):
        np.testing.assert_allclose(y, np.maximum(x @ w + b, 0), rtol=1e-5,
                                   atol=1e-6)


def test_runs_release_the_gil():
    session = heterps.Session(FASHION_CNN, threads=1)
    x = np.random.default_rng(6).random((4096, 1, 28, 28), dtype=np.float32)
    session.run(None, {"image": x[:8]})  # kernels set up
    spins = spins_during(lambda: session.run(None, {"image": x}))
    assert spins > 500000, spins
