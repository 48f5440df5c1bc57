//===- EmulatedKernels.h - CPU kernels on the emulated device ---*- C++ -*-===//
//
// Inference and training kernels of the emulated device: each wraps the
// CPU backend's kernel for the op, checks that its inputs are in device
// memory, runs it on the device's queue over views of the device buffers
// and copies its results into device memory.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_EMULATED_EMULATEDKERNELS_H
#define HETERPS_LIB_RUNTIME_BACKENDS_EMULATED_EMULATEDKERNELS_H

#include "EmulatedBackend.h"

#include "heterps/Runtime/Train/TrainKernel.h"

namespace heterps::runtime::emulated {

class EmulatedKernel final : public Kernel {
public:
  static llvm::Expected<std::unique_ptr<Kernel>>
  create(const EmulatedBackend &device, Backend &cpu, const OpInfo &info);
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override;

private:
  explicit EmulatedKernel(const EmulatedBackend &device) : device(device) {}
  const EmulatedBackend &device;
  /// Host views of the device's copies of the constants.
  std::vector<Tensor> constants;
  std::unique_ptr<Kernel> cpuKernel;
};

class EmulatedTrainBackend final : public train::TrainBackend {
public:
  EmulatedTrainBackend(const EmulatedBackend &device,
                       std::unique_ptr<train::TrainBackend> cpu)
      : device(device), cpu(std::move(cpu)) {}
  llvm::Expected<std::unique_ptr<train::TrainKernel>>
  createKernel(const OpInfo &info, int opIndex) const override;
  std::vector<std::string> opTypes() const override { return cpu->opTypes(); }
  llvm::Error accumulate(Tensor &dst, const Tensor &src) const override;

private:
  const EmulatedBackend &device;
  std::unique_ptr<train::TrainBackend> cpu;
};

} // namespace heterps::runtime::emulated

#endif // HETERPS_LIB_RUNTIME_BACKENDS_EMULATED_EMULATEDKERNELS_H
