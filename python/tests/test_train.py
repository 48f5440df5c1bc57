"""heterps.train: the same run as heterps-run --train, arrays as data,
callbacks that watch and stop, checkpoints, the trained model, the
pipelined trainer's trace and its picture, errors."""

import json
import os

import numpy as np
import pytest

import heterps
from conftest import FASHION_CNN, run_tool, spins_during, tool


def blobs(n, seed=0):
    """Ten separable classes of 28x28 images: a bright square per class."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n)
    images = rng.random((n, 1, 28, 28), dtype=np.float32) * 0.1
    for i, c in enumerate(labels):
        images[i, 0, 2 * c:2 * c + 8, 2 * c:2 * c + 8] += 1
    return images, labels


def test_same_run_as_heterps_run(tmp_path):
    x, y = blobs(256)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    spec = f"inputs={tmp_path / 'x.npy'},targets={tmp_path / 'y.npy'}"
    options = dict(optimizer="momentum", lr=0.05, epochs=2, batch=32, seed=7)
    run_tool(tool("heterps-run"), FASHION_CNN, "--train", "--data", spec,
             "--optimizer", "momentum", "--lr", "0.05", "--epochs", "2",
             "--batch", "32", "--seed", "7", "--threads", "1", "--report",
             tmp_path / "cli.json")
    cli = json.loads((tmp_path / "cli.json").read_text())
    report = heterps.train(FASHION_CNN, data=spec, threads=1, **options)
    from_arrays = heterps.train(FASHION_CNN, data=(x, y), threads=1, **options)
    for run in (report, from_arrays):
        assert [e["steps"] for e in run["epochs"]] == [8, 8]
        for ours, theirs in zip(run["epochs"], cli["epochs"]):
            assert ours["loss"] == pytest.approx(theirs["loss"], rel=1e-5)
    assert report["parameters"] == cli["parameters"]
    assert report["epochs"][1]["loss"] < report["epochs"][0]["loss"]


def test_callback_sees_steps_and_epochs_and_can_stop():
    x, y = blobs(128)
    events = []
    report = heterps.train(FASHION_CNN, data=(x, y), batch=16, epochs=2,
                           callback=events.append, progress=False)
    steps = [e for e in events if e["event"] == "step"]
    epochs = [e for e in events if e["event"] == "epoch"]
    assert [e["global_step"] for e in steps] == list(range(1, 17))
    assert [e["epoch"] for e in epochs] == [1, 2]
    assert epochs[1]["loss"] == report["epochs"][1]["loss"]
    assert not report["stopped"]

    stopped = heterps.train(FASHION_CNN, data=(x, y), batch=16, epochs=2,
                            callback=lambda e: e.get("step") != 3)
    assert stopped["stopped"] and stopped["global_step"] == 3
    assert stopped["epochs"] == []


def test_exceptions_in_callbacks_stop_and_propagate():
    x, y = blobs(64)
    seen = []

    def interrupt(event):
        seen.append(event)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        heterps.train(FASHION_CNN, data=(x, y), batch=16, callback=interrupt)
    assert len(seen) == 1


def test_checkpoint_resume_and_saved_model(tmp_path):
    x, y = blobs(128)
    ckpt = tmp_path / "ckpt"
    fast = dict(optimizer="momentum", lr=0.05, batch=16, epochs=2)
    first = heterps.train(FASHION_CNN, data=(x, y), checkpoint=ckpt,
                          stop_after_steps=5, **fast)
    assert first["stopped"] and (ckpt / "checkpoint.pb").exists()
    with pytest.raises(heterps.Error, match="resume=True"):
        heterps.train(FASHION_CNN, data=(x, y), batch=16, checkpoint=ckpt)
    saved = tmp_path / "trained.onnx"
    resumed = heterps.train(FASHION_CNN, data=(x, y), checkpoint=ckpt,
                            resume=True, save_model=saved, **fast)
    whole = heterps.train(FASHION_CNN, data=(x, y), **fast)
    assert resumed["global_step"] == 16
    assert resumed["epochs"][1]["loss"] == pytest.approx(
        whole["epochs"][1]["loss"], rel=1e-5)
    (logits,) = heterps.Session(saved).run(None, {"image": x})
    assert (logits.argmax(1) == y).mean() > 0.4  # 0.1 untrained


def test_pipelined_training_writes_trace_and_picture(tmp_path):
    x, y = blobs(128)
    trace = tmp_path / "run.json"
    report = heterps.train(FASHION_CNN, data=(x, y), batch=32, epochs=1,
                           micro_batches=2, schedule="1f1b", trace=trace)
    assert report["pipelined"]
    events = json.loads(trace.read_text())["traceEvents"]
    steps = [e["ts"] for e in events if e["ph"] == "i"]
    assert len(steps) == 4
    # The picture leaves out the first step, which sets up the kernels.
    spans = [e for e in events if e["ph"] == "X" and e["ts"] >= steps[1]]
    picture = (tmp_path / "run.svg").read_text()
    assert picture.startswith("<svg")
    for kind in ("forward", "backward", "pull", "push"):
        assert f'class="{kind}"' in picture
    assert picture.count("<rect class=") == len(spans)


def test_fashion_mnist_spec():
    if not os.path.exists("/usr/share/datasets/fashion-mnist"):
        pytest.skip("dataset-fashion-mnist is not installed")
    report = heterps.train(FASHION_CNN, data="fashion-mnist:train",
                           eval_data="fashion-mnist:test", max_steps=5,
                           batch=64, lr=0.05)
    assert report["samples"] == 60000
    assert "eval_accuracy" in report["epochs"][0]


def test_errors():
    x, y = blobs(32)
    with pytest.raises(ValueError, match="epochs must be at least 1, got 0"):
        heterps.train(FASHION_CNN, data=(x, y), epochs=0)
    with pytest.raises(ValueError, match="lr must be positive"):
        heterps.train(FASHION_CNN, data=(x, y), lr=0)
    with pytest.raises(ValueError, match="resume needs checkpoint"):
        heterps.train(FASHION_CNN, data=(x, y), resume=True)
    with pytest.raises(TypeError):
        heterps.train(FASHION_CNN, data=42)
    with pytest.raises(heterps.Error, match="same number of samples"):
        heterps.train(FASHION_CNN, data=(x, y[:5]))
    with pytest.raises(heterps.Error, match="optimizer"):
        heterps.train(FASHION_CNN, data=(x, y), optimizer="telepathy")
    with pytest.raises(heterps.Error, match="data spec 'nonsense'"):
        heterps.train(FASHION_CNN, data="nonsense")
    bad = x.copy()
    bad[3, 0, 0, 0] = np.nan
    with pytest.raises(heterps.Error, match="sample 3 holds NaN"):
        heterps.train(FASHION_CNN, data=(bad, y))


def test_progress_bar(capsys):
    x, y = blobs(64)
    heterps.train(FASHION_CNN, data=(x, y), batch=16, progress=True)
    err = capsys.readouterr().err
    assert "\repoch 1/1 [" in err and " 4/4 loss " in err
    assert err.endswith("\n")
    heterps.train(FASHION_CNN, data=(x, y), batch=16, progress=False)
    assert capsys.readouterr().err == ""


def test_training_releases_the_gil():
    x, y = blobs(4096)
    spins = spins_during(lambda: heterps.train(
        FASHION_CNN, data=(x, y), batch=4096, threads=1))
    assert spins > 500000, spins


def test_batchnorm_parameters_shared_with_statistics(tmp_path):
    """PyTorch's exporter merges equal initializers: a new BatchNorm's
    running variance (ones) and mean (zeros) become its scale and bias.
    The statistics the training forward updates must not overwrite the
    parameters: one SGD step gives PyTorch's gradients."""
    torch = pytest.importorskip("torch")
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False),
                          nn.BatchNorm2d(8), nn.ReLU6(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(8, 10)).eval()
    path = tmp_path / "bn.onnx"
    torch.onnx.export(model, torch.zeros(1, 3, 16, 16), str(path),
                      input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}},
                      training=torch.onnx.TrainingMode.PRESERVE,
                      do_constant_folding=False, opset_version=13)
    graph = onnx.load(str(path)).graph
    bn = [n for n in graph.node if n.op_type == "BatchNormalization"][0]
    merged = {n.output[0]: n.input[0] for n in graph.node
              if n.op_type == "Identity"}
    before = {t.name: numpy_helper.to_array(t)
              for t in onnx.load(str(path)).graph.initializer}
    x = np.random.default_rng(0).random((8, 3, 16, 16), dtype=np.float32)
    y = np.arange(8) % 10
    model.train()
    torch.nn.functional.cross_entropy(model(torch.from_numpy(x)),
                                      torch.from_numpy(y)).backward()
    trained = tmp_path / "trained.onnx"
    heterps.train(path, data=(x, y), batch=8, optimizer="sgd", lr=1.0,
                  threads=1, save_model=trained)
    after = {t.name: numpy_helper.to_array(t)
             for t in onnx.load(str(trained)).graph.initializer}
    for name, p in model.named_parameters():
        if name in before:
            step = before[name] - after[name]
            np.testing.assert_allclose(step, p.grad.numpy(), rtol=1e-3,
                                       atol=1e-5, err_msg=name)
    # The export did merge them (else this test checks nothing new): the
    # statistics are Identity nodes of the scale and bias.
    assert {merged.get(i, i) for i in bn.input[1:]} == {"1.weight", "1.bias"}
