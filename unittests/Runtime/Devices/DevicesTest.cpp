//===- DevicesTest.cpp - a plan across the CPU and the emulated device ----===//
//
// The device seam end to end: a small CNN whose stages sit on the CPU and
// on a GPU type (kind cuda, which this runtime has no backend for, so it
// runs on the emulated device) infers, streams and trains - single-process
// and pipelined - to the outputs, losses and weights of the all-CPU run,
// with transfers exactly at the stage boundaries; tensors on the wrong
// device are caught. ctest label: devices.
//
//===----------------------------------------------------------------------===//

#include "../Train/TrainTestModels.h"

#include "heterps/Runtime/Backends/CPU/CPUBackend.h"
#include "heterps/Runtime/Executor.h"
#include "heterps/Runtime/Pipeline.h"
#include "heterps/Runtime/PipelineTrain/PipelineTrainer.h"

#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::testutil;
using namespace heterps::runtime::train;

namespace {

/// Where each op of the CNN runs: a device type per op ("" for the CPU)
/// and the stage it starts a new stage at.
using Placement = std::vector<std::string>;

/// x [N, 1, 6, 6] -> Conv(4, 3x3, pads 1) -> BatchNormalization -> Relu
///   -> MaxPool(2) -> Flatten -> Gemm(3). `devices[i]` places op i; a
/// stage begins wherever the device changes. Device types "gpu" and
/// "gpu2" are of kind `gpuKind`.
MLP makeCNN(const std::string &modelPath, const Placement &devices,
            const std::string &gpuKind = "cuda") {
  std::mt19937 rng(7);
  writeInitializers(modelPath,
                    {{"w1", randomTensor({4, 1, 3, 3}, rng, -0.5f, 0.5f)},
                     {"b1", randomTensor({4}, rng, -0.1f, 0.1f)},
                     {"scale", randomTensor({4}, rng, 0.5f, 1.5f)},
                     {"shift", randomTensor({4}, rng, -0.1f, 0.1f)},
                     {"mean", randomTensor({4}, rng, -0.1f, 0.1f)},
                     {"var", randomTensor({4}, rng, 0.5f, 1.5f)},
                     {"w2", randomTensor({3, 36}, rng, -0.3f, 0.3f)},
                     {"b2", randomTensor({3}, rng, -0.1f, 0.1f)}});
  PlanBuilder b;
  int x = b.input("x", {-1, 1, 6, 6});
  int y =
      b.op("Conv", {x, b.weightRef("w1", {4, 1, 3, 3}), b.weightRef("b1", {4})},
           {-1, 4, 6, 6}, Attrs().ints("pads", {1, 1, 1, 1}));
  y = b.op("BatchNormalization",
           {y, b.weightRef("scale", {4}), b.weightRef("shift", {4}),
            b.weightRef("mean", {4}), b.weightRef("var", {4})},
           {-1, 4, 6, 6});
  y = b.op("Relu", {y}, {-1, 4, 6, 6});
  y = b.op("MaxPool", {y}, {-1, 4, 3, 3},
           Attrs().ints("kernel_shape", {2, 2}).ints("strides", {2, 2}));
  y = b.op("Flatten", {y}, {-1, 36}, Attrs().i("axis", 1));
  y = b.op("Gemm", {y, b.weightRef("w2", {3, 36}), b.weightRef("b2", {3})},
           {-1, 3}, Attrs().i("trans_b", 1));
  b.output("logits", y);
  MLP cnn{b.build(), {}};
  int stage = 0;
  for (int i = 0; i < cnn.plan.ops_size(); ++i) {
    if (i > 0 && devices[i] != devices[i - 1])
      ++stage;
    cnn.plan.mutable_ops(i)->set_device(devices[i]);
    cnn.plan.mutable_ops(i)->set_stage(stage);
  }
  for (const char *gpu : {"gpu", "gpu2"}) {
    plan::DeviceType *t = cnn.plan.add_device_types();
    t->set_name(gpu);
    t->set_kind(gpuKind);
  }
  cnn.plan.set_model_path(modelPath);
  cnn.weights = llvm::cantFail(loadWeights(cnn.plan));
  return cnn;
}

const Placement kAllCPU = {"", "", "", "", "", ""};
/// Conv on the CPU; the rest, from the batch norm on, on the GPU.
const Placement kTwoStages = {"", "gpu", "gpu", "gpu", "gpu", "gpu"};
/// CPU, then two GPU types: a device-to-device copy between them.
const Placement kThreeStages = {"", "gpu", "gpu", "gpu2", "gpu2", "gpu2"};
/// Out to the GPU and back: CPU, GPU, CPU.
const Placement kThereAndBack = {"", "gpu", "gpu", "gpu", "", ""};

ExecutorOptions emulating() {
  ExecutorOptions options;
  options.emulateMissingDevices = true;
  options.autotune = false;
  return options;
}

data::Dataset makeImages(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  data::Dataset d;
  d.name = "images";
  d.inputs = randomTensor({n, 1, 6, 6}, rng);
  d.targets = Tensor(DType::I64, {n});
  for (int64_t i = 0; i < n; ++i) {
    const float *v = d.inputs.data<float>() + 36 * i;
    d.targets.data<int64_t>()[i] = v[0] + v[7] > 0 ? (v[14] > 0 ? 2 : 1) : 0;
  }
  return d;
}

float maxDifference(const Tensor &a, const Tensor &b) {
  EXPECT_EQ(a.shape(), b.shape());
  float worst = 0;
  for (int64_t i = 0; i < a.numElements(); ++i)
    worst = std::max(worst, std::abs(a.data<float>()[i] - b.data<float>()[i]));
  return worst;
}

float maxDifference(const WeightMap &a, const WeightMap &b) {
  float worst = 0;
  for (const auto &[v, t] : a)
    if (t.dtype() == DType::F32)
      worst = std::max(worst, maxDifference(t, b.at(v)));
  return worst;
}

TEST(Devices, AKindNoBackendServesIsOneClearError) {
  TempDir dir;
  MLP cnn = makeCNN(dir.file("m.onnx"), kTwoStages);
  auto refused = Executor::create(cnn.plan);
  ASSERT_FALSE(bool(refused));
  // Built without the CUDA backend, or with it on a machine without a GPU.
  std::string why =
      findBackend("cuda")
          ? "whose backend cannot start here: no CUDA device"
          : "which no backend serves (this runtime has: cpu, emulated; ";
  std::string error = llvm::toString(refused.takeError());
  EXPECT_TRUE(llvm::StringRef(error).starts_with(
      "op 1 'BatchNormalization1' (BatchNormalization) is placed on device "
      "type 'gpu', of kind 'cuda', " +
      why))
      << error;
  EXPECT_TRUE(llvm::StringRef(error).ends_with(
      "heterps-run --emulate-missing-devices runs it on the emulated "
      "device)"))
      << error;
  // A plan that gives a kind twice, or none, is malformed.
  plan::Plan twice = cnn.plan;
  *twice.add_device_types() = twice.device_types(0);
  EXPECT_EQ(llvm::toString(Executor::create(twice).takeError()),
            "plan: device type 'gpu' is listed twice");
}

TEST(Devices, InferenceAcrossDevicesEqualsTheCPU) {
  TempDir dir;
  std::mt19937 rng(1);
  Tensor x = randomTensor({5, 1, 6, 6}, rng);
  auto cpu = llvm::cantFail(
      Executor::create(makeCNN(dir.file("a.onnx"), kAllCPU).plan, emulating()));
  Tensor expected = llvm::cantFail(cpu->run({x}))[0];
  EXPECT_EQ(cpu->transfersPerRun(), 0);
  for (const Placement &placement : {kTwoStages, kThreeStages, kThereAndBack}) {
    auto exec = Executor::create(makeCNN(dir.file("b.onnx"), placement).plan,
                                 emulating());
    ASSERT_TRUE(bool(exec)) << llvm::toString(exec.takeError());
    auto out = (*exec)->run({x});
    ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
    // The batch norm is folded into the Conv on the CPU only.
    EXPECT_LT(maxDifference((*out)[0], expected), 1e-5f);
    EXPECT_TRUE((*out)[0].onHost());
    // One copy per stage boundary, and the output back to the host.
    int boundaries = 0;
    for (size_t i = 1; i < placement.size(); ++i)
      boundaries += placement[i] != placement[i - 1];
    bool endsOnGPU = !placement.back().empty();
    EXPECT_EQ((*exec)->transfersPerRun(), boundaries + endsOnGPU);
  }
}

// A weight read on the CPU and on a device lives in both memories; one
// only the device reads, and a weight that is a graph output, still give
// the all-CPU results.
TEST(Devices, WeightsReadOnSeveralDevices) {
  auto build = [](const std::string &gpu) {
    PlanBuilder b;
    int x = b.input("x", {3});
    int shared = b.weight("shared", Tensor::fromFloats({3}, {1.f, 2.f, 3.f}));
    int own = b.weight("own", Tensor::fromFloats({3}, {0.5f, 0.25f, 2.f}));
    int y = b.op("Add", {x, shared}, {3});
    y = b.op("Mul", {y, shared}, {3});
    b.place(gpu, 1);
    y = b.op("Sub", {y, own}, {3});
    b.place(gpu, 1);
    b.output("y", y);
    b.output("shared", shared);
    plan::Plan p = b.build();
    plan::DeviceType *t = p.add_device_types();
    t->set_name("gpu");
    t->set_kind("cuda");
    return p;
  };
  Tensor x = Tensor::fromFloats({3}, {1.f, -1.f, 4.f});
  auto cpu = llvm::cantFail(Executor::create(build(""), emulating()));
  auto split = llvm::cantFail(Executor::create(build("gpu"), emulating()));
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> expected = llvm::cantFail(cpu->run({x}));
    std::vector<Tensor> got = llvm::cantFail(split->run({x}));
    ASSERT_EQ(got.size(), 2u);
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_EQ(maxDifference(got[k], expected[k]), 0.f) << k;
  }
}

TEST(Devices, TransfersAreCountedPerMemorySpace) {
  TempDir dir;
  std::mt19937 rng(2);
  auto exec = llvm::cantFail(Executor::create(
      makeCNN(dir.file("m.onnx"), kThreeStages).plan, emulating()));
  Tensor x = randomTensor({3, 1, 6, 6}, rng);
  MemorySpace &host = MemorySpace::host();
  MemorySpace::TransferStats h0 = host.transferStats();
  ASSERT_TRUE(bool(exec->run({x})));
  MemorySpace::TransferStats h1 = host.transferStats();
  // Out of the host: the Conv's output; in: the logits. gpu -> gpu2 goes
  // device to device, past the host.
  EXPECT_EQ(h1.out - h0.out, 1);
  EXPECT_EQ(h1.in - h0.in, 1);
  EXPECT_EQ(h1.bytesOut - h0.bytesOut, int64_t(3 * 4 * 6 * 6 * 4));
  EXPECT_EQ(h1.bytesIn - h0.bytesIn, int64_t(3 * 3 * 4));
}

TEST(Devices, StreamingAcrossDevicesEqualsTheCPU) {
  TempDir dir;
  std::mt19937 rng(3);
  std::vector<std::vector<Tensor>> stream;
  for (int i = 0; i < 4; ++i)
    stream.push_back({randomTensor({2, 1, 6, 6}, rng)});
  auto cpu = llvm::cantFail(
      Executor::create(makeCNN(dir.file("a.onnx"), kAllCPU).plan, emulating()));
  PipelineOptions options;
  options.executor = emulating();
  auto pipeline = PipelineExecutor::create(
      makeCNN(dir.file("b.onnx"), kThreeStages).plan, options);
  ASSERT_TRUE(bool(pipeline)) << llvm::toString(pipeline.takeError());
  auto outs = (*pipeline)->run(stream);
  ASSERT_TRUE(bool(outs)) << llvm::toString(outs.takeError());
  for (size_t i = 0; i < stream.size(); ++i)
    EXPECT_LT(
        maxDifference((*outs)[i][0], llvm::cantFail(cpu->run(stream[i]))[0]),
        1e-5f);
}

using Trained = std::pair<std::vector<double>, WeightMap>;

/// Losses and weights of 4 steps of `trainer` (a Trainer or a
/// PipelineTrainer) on batches of 8 from `data`.
template <typename T>
Trained trainSteps(llvm::Expected<std::unique_ptr<T>> trainer,
                   const data::Dataset &data) {
  EXPECT_TRUE(bool(trainer)) << llvm::toString(trainer.takeError());
  if (!trainer)
    return {};
  std::vector<double> losses;
  for (int i = 0; i < 4; ++i) {
    auto r =
        (*trainer)->step(data::sampleRows(data.inputs, i * 8 % 32, 8),
                         data::sampleRows(data.targets, i * 8 % 32, 8), 0.1f);
    EXPECT_TRUE(bool(r)) << llvm::toString(r.takeError());
    losses.push_back(r ? r->loss : NAN);
  }
  return {losses, llvm::cantFail((*trainer)->weights())};
}

/// Trainer steps on `placement`.
Trained trainSingle(const std::string &modelPath, const Placement &placement,
                    const data::Dataset &data) {
  TrainerOptions options;
  options.emulateMissingDevices = true;
  options.numThreads = 1;
  MLP cnn = makeCNN(modelPath, placement);
  return trainSteps(Trainer::create(cnn.plan, cnn.weights, options), data);
}

TEST(Devices, TrainingAcrossDevicesEqualsTheCPU) {
  TempDir dir;
  data::Dataset data = makeImages(32, 4);
  auto [cpuLosses, cpuWeights] = trainSingle(dir.file("a.onnx"), kAllCPU, data);
  // Per step, each way between the host and the GPUs. kTwoStages: in, the
  // Conv's output, four batch norm and two Gemm weights, the logits'
  // gradient; out, the logits, two running statistics, the Conv output's
  // gradient and four weight gradients. kThreeStages the same (gpu to
  // gpu2 goes device to device); kThereAndBack has the Gemm on the CPU.
  struct Case {
    const Placement &placement;
    int transfersPerStep;
  };
  for (const Case &c :
       {Case{kTwoStages, 8}, Case{kThreeStages, 8}, Case{kThereAndBack, 6}}) {
    MemorySpace::TransferStats h0 = MemorySpace::host().transferStats();
    auto [losses, weights] = trainSingle(dir.file("b.onnx"), c.placement, data);
    MemorySpace::TransferStats h1 = MemorySpace::host().transferStats();
    ASSERT_EQ(losses.size(), cpuLosses.size());
    for (size_t i = 0; i < losses.size(); ++i)
      EXPECT_NEAR(losses[i], cpuLosses[i], 1e-6);
    // The batch norm's running statistics came back from the device too.
    EXPECT_LT(maxDifference(weights, cpuWeights), 1e-6f);
    EXPECT_EQ(h1.out - h0.out, 4 * c.transfersPerStep);
    EXPECT_EQ(h1.in - h0.in, 4 * c.transfersPerStep);
  }
}

/// Pipelined steps (2 micro-batches) on kThreeStages, its GPU types of
/// kind `gpuKind`.
Trained trainPipelined(const std::string &modelPath, const std::string &gpuKind,
                       pipeline::ScheduleKind schedule,
                       const data::Dataset &data) {
  pipeline::PipelineTrainerOptions options;
  options.schedule = schedule;
  options.microBatches = 2;
  options.emulateMissingDevices = true;
  MLP cnn = makeCNN(modelPath, kThreeStages, gpuKind);
  return trainSteps(
      pipeline::PipelineTrainer::create(cnn.plan, cnn.weights, options), data);
}

TEST(Devices, PipelinedTrainingAcrossDevicesEqualsTheCPU) {
  TempDir dir;
  data::Dataset data = makeImages(32, 5);
  for (auto schedule :
       {pipeline::ScheduleKind::GPipe, pipeline::ScheduleKind::OneFOneB}) {
    SCOPED_TRACE(pipeline::scheduleName(schedule));
    // The same three stages, all on the CPU.
    auto [cpuLosses, cpuWeights] =
        trainPipelined(dir.file("a.onnx"), "cpu", schedule, data);
    MemorySpace::TransferStats h0 = MemorySpace::host().transferStats();
    auto [losses, weights] =
        trainPipelined(dir.file("b.onnx"), "cuda", schedule, data);
    MemorySpace::TransferStats h1 = MemorySpace::host().transferStats();
    ASSERT_EQ(losses.size(), cpuLosses.size());
    for (size_t i = 0; i < losses.size(); ++i)
      EXPECT_NEAR(losses[i], cpuLosses[i], 1e-6);
    EXPECT_LT(maxDifference(weights, cpuWeights), 1e-6f);
    // Stages hand values on through host memory. Per step and micro-batch,
    // into the GPU stages: forward, the Conv's and the Relu's outputs and
    // the six weights of the batch norm and the Gemm; backward, the two
    // output gradients. Out of them: forward, the Relu's output, the
    // logits and the two running statistics; backward, the two input
    // gradients and the four weight gradients.
    EXPECT_EQ(h1.in - h0.in, 4 * 2 * 10);
    EXPECT_EQ(h1.out - h0.out, 4 * 2 * 10);
  }
}

TEST(Devices, HostCodeCannotReadDeviceMemory) {
  // The emulated device's queue is a thread: re-execute rather than fork.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TempDir dir;
  MLP cnn = makeCNN(dir.file("m.onnx"), kTwoStages);
  DeviceOptions options;
  options.emulateMissingDevices = true;
  auto devices = llvm::cantFail(Devices::create(cnn.plan, options));
  Backend &gpu = devices->of(cnn.plan.ops(1));
  EXPECT_EQ(gpu.name(), "emulated:gpu");
  Tensor onHost = Tensor::fromFloats({2}, {1.f, 2.f});
  Tensor onGPU = llvm::cantFail(devices->moveTo(onHost, gpu.memory()));
  EXPECT_EQ(&onGPU.space(), &gpu.memory());
  EXPECT_EQ(onGPU.typeString(), "f32[2] on emulated:gpu");
  EXPECT_DEATH((void)onGPU.data<float>(),
               "host code accessed tensor f32\\[2\\] on emulated:gpu, which "
               "lives in emulated:gpu memory: a transfer");
  Tensor back = llvm::cantFail(devices->moveTo(onGPU, MemorySpace::host()));
  EXPECT_EQ(back.data<float>()[1], 2.f);
}

TEST(Devices, DeviceKernelsRefuseHostTensors) {
  TempDir dir;
  MLP cnn = makeCNN(dir.file("m.onnx"), kTwoStages);
  DeviceOptions options;
  options.emulateMissingDevices = true;
  auto devices = llvm::cantFail(Devices::create(cnn.plan, options));
  const plan::Op &relu = cnn.plan.ops(2);
  auto kernel = devices->of(relu).createKernel(OpInfo(relu, {nullptr}));
  ASSERT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
  Tensor x = Tensor::fromFloats({2}, {-1.f, 1.f});
  std::vector<Tensor> out(1);
  EXPECT_EQ(llvm::toString((*kernel)->run({&x}, out)),
            "input 0 f32[2] is in host memory, not emulated:gpu: a transfer is "
            "missing");
  Tensor onGPU = llvm::cantFail(devices->moveTo(x, devices->of(relu).memory()));
  ASSERT_FALSE(bool((*kernel)->run({&onGPU}, out)));
  Tensor y = llvm::cantFail(devices->moveTo(out[0], MemorySpace::host()));
  EXPECT_EQ(y.data<float>()[0], 0.f);
  EXPECT_EQ(y.data<float>()[1], 1.f);
}

/// A backend registered from outside the library, as a new one would be:
/// the CPU's kernels on host memory, without rewrites or training.
class InferenceOnly final : public CPUBackend {
public:
  llvm::StringRef name() const override { return "inference-only"; }
  void rewriteForInference(plan::Plan &, WeightMap &, OpFilter) const override {
  }
  llvm::Expected<std::unique_ptr<train::TrainBackend>>
  createTrainBackend(const train::TrainBackendOptions &options) const override {
    return Backend::createTrainBackend(options);
  }
};

TEST(Devices, ABackendRegisteredByKindRunsItsOpsOnly) {
  registerBackend("inference-only",
                  [](const BackendOptions &, llvm::StringRef)
                      -> llvm::Expected<std::unique_ptr<Backend>> {
                    return std::make_unique<InferenceOnly>();
                  });
  auto build = [](const std::string &device) {
    PlanBuilder b;
    int x = b.input("x", {1, 1, 4, 4});
    int y = b.op("Conv",
                 {x, b.weight("w", Tensor::fromFloats({1, 1, 1, 1}, {2.f}))},
                 {1, 1, 4, 4});
    b.place(device, 0);
    y = b.op("Relu", {y}, {1, 1, 4, 4});
    b.place(device, 0);
    b.output("y", y);
    plan::Plan p = b.build();
    plan::DeviceType *t = p.add_device_types();
    t->set_name("other");
    t->set_kind("inference-only");
    return p;
  };
  // The CPU fuses the Relu into the Conv; on the other backend the CPU's
  // rewrites leave its ops alone.
  auto onCPU = llvm::cantFail(Executor::create(build(""), emulating()));
  EXPECT_EQ(onCPU->plan().ops_size(), 1);
  auto onOther = Executor::create(build("other"), emulating());
  ASSERT_TRUE(bool(onOther)) << llvm::toString(onOther.takeError());
  EXPECT_EQ((*onOther)->plan().ops_size(), 2);
  Tensor x = Tensor::fromFloats({1, 1, 4, 4}, std::vector<float>(16, -1.f));
  EXPECT_EQ(llvm::cantFail((*onOther)->run({x}))[0].data<float>()[0], 0.f);
  // A backend without training kernels leaves its ops' training to the
  // CPU, and says so.
  DeviceOptions options;
  plan::Plan other = build("other");
  auto devices = llvm::cantFail(Devices::create(other, options));
  EXPECT_TRUE(devices->fallbacks().empty());
  llvm::cantFail(devices->prepareTraining({}));
  EXPECT_EQ(&devices->of(other.ops(0)), &devices->host());
  EXPECT_EQ(devices->fallbacks(), std::vector<std::string>{"other: Conv"});
}

TEST(Devices, CopiesOutsideABackendsMemoryAreRefused) {
  TempDir dir;
  DeviceOptions options;
  options.emulateMissingDevices = true;
  MLP two = makeCNN(dir.file("a.onnx"), kTwoStages);
  MLP three = makeCNN(dir.file("b.onnx"), kThreeStages);
  auto devices = llvm::cantFail(Devices::create(two.plan, options));
  auto others = llvm::cantFail(Devices::create(three.plan, options));
  Backend &gpu = devices->of(two.plan.ops(1));
  MemorySpace &gpu2 = others->of(three.plan.ops(3)).memory();
  Tensor x = Tensor::fromFloats({2}, {1.f, 2.f});
  EXPECT_EQ(llvm::toString(devices->transfer(x, gpu2).takeError()),
            "no backend of this plan owns emulated:gpu2 memory");
  EXPECT_EQ(llvm::toString(gpu.copy(x, gpu2).takeError()),
            "the emulated:gpu device cannot copy f32[2] to emulated:gpu2 "
            "memory");
  Tensor onGPU = llvm::cantFail(devices->moveTo(x, gpu.memory()));
  EXPECT_EQ(llvm::toString(
                devices->host().copy(onGPU, MemorySpace::host()).takeError()),
            "the cpu backend copies only within host memory, not from "
            "emulated:gpu to host");
}

} // namespace
