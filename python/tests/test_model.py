"""heterps.import_onnx, heterps.plan, reports and saved plans, checked
against heterps-opt on the same inputs."""

import json

import pytest

import heterps
from conftest import (CPU_CLUSTER, FASHION_CNN, PAPER_CLUSTER, run_tool,
                      spins_during, tool, tool_error)


def test_import_prints_ir_and_layer_figures():
    model = heterps.import_onnx(FASHION_CNN)
    ir = str(model)
    assert ir.startswith("module attributes")
    assert "hps.conv" in ir and "hps.gemm" in ir
    stats = json.loads(run_tool(tool("heterps-opt"), FASHION_CNN,
                                "--hps-layer-stats=format=json",
                                "-o", "/dev/null").stdout)
    assert model.layers == stats["layers"]
    assert model.totals == stats["total"]
    assert repr(model) == "<heterps.Model fashion_cnn.onnx, 10 layers>"


def test_import_errors_are_the_tools_messages(tmp_path):
    missing = tmp_path / "missing.onnx"
    with pytest.raises(heterps.Error) as raised:
        heterps.import_onnx(missing)
    assert str(raised.value) == tool_error(tool("heterps-opt"), missing)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07not a model\n\x1b[31m")
    with pytest.raises(heterps.Error) as raised:
        heterps.import_onnx(garbage)
    assert "\n" not in str(raised.value)
    assert str(raised.value) == tool_error(tool("heterps-opt"), garbage)


def test_named_dimensions(dense_model):
    path, _, _ = dense_model
    assert "tensor<?x6xf32>" in str(heterps.import_onnx(path))
    assert "tensor<3x6xf32>" in str(heterps.import_onnx(path, dims={"batch": 3}))
    with pytest.raises(ValueError):
        heterps.import_onnx(path, dims={"batch": 0})


def test_plan_matches_heterps_opt_hps_plan():
    plan = heterps.plan(FASHION_CNN, cluster=PAPER_CLUSTER, strategy="exact",
                        throughput=5000)
    options = f"cluster={PAPER_CLUSTER} strategy=exact throughput-limit=5000"
    report = json.loads(run_tool(
        tool("heterps-opt"), FASHION_CNN, f"--hps-plan={options}",
        "--hps-report=format=json", "-o", "/dev/null").stdout)
    for key in ("cost", "throughput", "devices", "stages", "feasible"):
        assert plan.report[key] == report[key], key
    assert plan.cost == report["cost"]
    assert [l["name"] for l in plan.layers] == [l["name"] for l in report["layers"]]
    for layer in plan.layers:
        stage = plan.stages[layer["stage"]]
        assert layer["name"] in stage["layers"]
        assert layer["device"] == stage["device_type"]
    assert plan.to_text().startswith("plan: throughput")


def test_plan_saves_and_loads_without_the_cluster_file(tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(PAPER_CLUSTER.read_text())
    plan = heterps.plan(FASHION_CNN, cluster=cluster, strategy="greedy")
    saved = tmp_path / "plan.mlir"
    plan.save(saved)
    cluster.unlink()
    loaded = heterps.Plan.load(saved)
    assert isinstance(loaded, heterps.Plan)
    assert loaded.report == plan.report
    model_file = tmp_path / "model.mlir"
    heterps.import_onnx(FASHION_CNN).save(model_file)
    assert type(heterps.load(model_file)) is heterps.Model
    with pytest.raises(heterps.Error, match="without a plan"):
        heterps.Plan.load(model_file)


def test_plan_errors():
    with pytest.raises(heterps.Error) as raised:
        heterps.plan(FASHION_CNN, cluster=PAPER_CLUSTER, strategy="psychic")
    assert "psychic" in str(raised.value)
    assert str(raised.value).startswith(str(FASHION_CNN))
    with pytest.raises(heterps.Error, match="no such file|No such file"):
        heterps.plan(FASHION_CNN, cluster="/nonexistent.yaml")
    with pytest.raises(ValueError):
        heterps.plan(FASHION_CNN, cluster=CPU_CLUSTER, throughput=-1)
    # A floor no plan meets: the provisioning pass's message.
    with pytest.raises(heterps.Error, match="samples/s"):
        heterps.plan(FASHION_CNN, cluster=CPU_CLUSTER, strategy="exact",
                     throughput=1e12)


def test_planning_releases_the_gil():
    spins = spins_during(lambda: heterps.plan(
        FASHION_CNN, cluster=PAPER_CLUSTER, strategy="rl", throughput=1500000,
        time_budget=1))
    assert spins > 100000, spins
