//===- EmulatedKernels.cpp - CPU kernels on the emulated device -----------===//

#include "EmulatedKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::emulated;

/// Host views of `inputs` (null stays null), each checked to be in the
/// device's memory; `views` keeps them.
static llvm::Expected<std::vector<const Tensor *>>
viewInputs(const EmulatedBackend &device, llvm::ArrayRef<const Tensor *> inputs,
           std::vector<Tensor> &views) {
  views.clear();
  views.reserve(inputs.size());
  std::vector<const Tensor *> args;
  for (auto [k, t] : llvm::enumerate(inputs)) {
    if (!t) {
      args.push_back(nullptr);
      continue;
    }
    llvm::Expected<Tensor> view =
        device.hostView(*t, static_cast<int>(k), "input");
    if (!view)
      return view.takeError();
    args.push_back(&views.emplace_back(std::move(*view)));
  }
  return args;
}

/// Copies the CPU kernel's non-null `results` into device memory, as
/// `into`'s entries of the same index.
static llvm::Error adoptAll(const EmulatedBackend &device,
                            llvm::ArrayRef<Tensor> results,
                            llvm::MutableArrayRef<Tensor> into) {
  for (auto [k, result] : llvm::enumerate(results)) {
    if (result.isNull())
      continue;
    llvm::Expected<Tensor> adopted = device.adopt(result);
    if (!adopted)
      return adopted.takeError();
    into[k] = std::move(*adopted);
  }
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<Kernel>>
EmulatedKernel::create(const EmulatedBackend &device, Backend &cpu,
                       const OpInfo &info) {
  std::unique_ptr<EmulatedKernel> kernel(new EmulatedKernel(device));
  llvm::Expected<OpInfo> cpuInfo = device.hostInfo(info, kernel->constants);
  if (!cpuInfo)
    return cpuInfo.takeError();
  auto cpuKernel = cpu.createKernel(*cpuInfo);
  if (!cpuKernel)
    return cpuKernel.takeError();
  kernel->cpuKernel = std::move(*cpuKernel);
  return kernel;
}

llvm::Error EmulatedKernel::run(llvm::ArrayRef<const Tensor *> inputs,
                                llvm::MutableArrayRef<Tensor> outputs) {
  std::vector<Tensor> views;
  auto args = viewInputs(device, inputs, views);
  if (!args)
    return args.takeError();
  return device.queue().run([&]() -> llvm::Error {
    std::vector<Tensor> results(outputs.size());
    if (llvm::Error e = cpuKernel->run(*args, results))
      return e;
    return adoptAll(device, results, outputs);
  });
}

namespace {
class EmulatedTrainKernel final : public train::TrainKernel {
public:
  explicit EmulatedTrainKernel(const EmulatedBackend &device)
      : device(device) {}

  bool differentiable(int i) const override {
    return cpuKernel->differentiable(i);
  }
  bool updatesInput(int i) const override { return cpuKernel->updatesInput(i); }
  uint64_t randomDraws() const override { return cpuKernel->randomDraws(); }
  void setRandomDraws(uint64_t n) override { cpuKernel->setRandomDraws(n); }

  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override {
    std::vector<Tensor> views;
    auto args = viewInputs(device, inputs, views);
    if (!args)
      return args.takeError();
    return device.queue().run([&]() -> llvm::Error {
      // Running statistics update the device's copies in place.
      Tensor result;
      if (llvm::Error e = cpuKernel->forward(*args, result))
        return e;
      llvm::Expected<Tensor> adopted = device.adopt(result);
      if (!adopted)
        return adopted.takeError();
      output = std::move(*adopted);
      return llvm::Error::success();
    });
  }

  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs,
                       const Tensor &output, const Tensor &dOutput,
                       llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    std::vector<Tensor> views;
    auto args = viewInputs(device, inputs, views);
    if (!args)
      return args.takeError();
    llvm::Expected<Tensor> out = device.hostView(output, 0, "output");
    if (!out)
      return out.takeError();
    llvm::Expected<Tensor> dOut =
        device.hostView(dOutput, 0, "output gradient");
    if (!dOut)
      return dOut.takeError();
    return device.queue().run([&]() -> llvm::Error {
      std::vector<Tensor> grads(dInputs.size());
      if (llvm::Error e =
              cpuKernel->backward(*args, *out, *dOut, needGrad, grads))
        return e;
      return adoptAll(device, grads, dInputs);
    });
  }

  const EmulatedBackend &device;
  std::vector<Tensor> constants;
  std::unique_ptr<train::TrainKernel> cpuKernel;
};
} // namespace

llvm::Expected<std::unique_ptr<train::TrainKernel>>
EmulatedTrainBackend::createKernel(const OpInfo &info, int opIndex) const {
  auto kernel = std::make_unique<EmulatedTrainKernel>(device);
  llvm::Expected<OpInfo> cpuInfo = device.hostInfo(info, kernel->constants);
  if (!cpuInfo)
    return cpuInfo.takeError();
  auto cpuKernel = cpu->createKernel(*cpuInfo, opIndex);
  if (!cpuKernel)
    return cpuKernel.takeError();
  kernel->cpuKernel = std::move(*cpuKernel);
  return kernel;
}

llvm::Error EmulatedTrainBackend::accumulate(Tensor &dst,
                                             const Tensor &src) const {
  llvm::Expected<Tensor> sum = device.hostView(dst, 0, "gradient");
  if (!sum)
    return sum.takeError();
  llvm::Expected<Tensor> addend = device.hostView(src, 1, "gradient");
  if (!addend)
    return addend.takeError();
  return device.queue().run([&]() -> llvm::Error {
    if (llvm::Error e = cpu->accumulate(*sum, *addend))
      return e;
    llvm::Expected<Tensor> adopted = device.adopt(*sum);
    if (!adopted)
      return adopted.takeError();
    dst = std::move(*adopted);
    return llvm::Error::success();
  });
}
