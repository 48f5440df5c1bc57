//===- EmulatedBackend.h - a second device on the host ----------*- C++ -*-===//
//
// The emulated device stands in for an accelerator this machine lacks
// (heterps-run --emulate-missing-devices) and proves the device seam in
// tests. It behaves as a device does, with the CPU's kernel math:
//  - its tensors live in a memory space of its own (one per device type,
//    with its own buffer pool), which host code may not touch: a tensor
//    that reaches a host kernel without a transfer stops the process, and
//    one that reaches an emulated kernel from host memory is an error;
//  - it runs kernels and copies in order on its own queue (a thread), the
//    copies asynchronously;
//  - data moves only through copy(): host <-> device, and device <-> device
//    between emulated spaces.
// Its kernels wrap the CPU backend's: inputs are handed to the CPU kernel
// as views of the device buffers, and results are copied into device
// memory. Its plan rewrites are the CPU's, so that results match an
// all-CPU run.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_EMULATED_EMULATEDBACKEND_H
#define HETERPS_LIB_RUNTIME_BACKENDS_EMULATED_EMULATEDBACKEND_H

#include "DeviceQueue.h"

#include "heterps/Runtime/Backend.h"

namespace heterps::runtime::emulated {

class EmulatedBackend final : public Backend {
public:
  /// Runs `cpu`'s kernels on the memory of device type `deviceType`.
  EmulatedBackend(std::unique_ptr<Backend> cpu, llvm::StringRef deviceType);
  ~EmulatedBackend() override;

  llvm::StringRef name() const override { return memory().name(); }
  MemorySpace &memory() const override { return space; }
  const KernelRegistry &kernels() const override { return registry; }
  void rewriteForInference(plan::Plan &plan, WeightMap &weights,
                           OpFilter mine) const override;
  void rewriteForTraining(plan::Plan &plan, const WeightMap &weights,
                          OpFilter mine) const override;
  llvm::Expected<std::unique_ptr<train::TrainBackend>>
  createTrainBackend(const train::TrainBackendOptions &options) const override;
  bool canCopy(const MemorySpace &from, const MemorySpace &to) const override;
  llvm::Expected<Transfer> copy(const Tensor &src, MemorySpace &to) override;

  /// For the wrappers: an error unless `t` (input `index` of `what`) is in
  /// this device's memory; else its buffer as the CPU kernels see it.
  llvm::Expected<Tensor> hostView(const Tensor &t, int index,
                                  llvm::StringRef what) const;
  /// A copy of `t` (a CPU kernel's result, any layout) in device memory.
  llvm::Expected<Tensor> adopt(const Tensor &t) const;
  /// Host views of `info`'s constants (which must be in device memory),
  /// kept in `views`, and an OpInfo for the CPU kernel pointing at them.
  llvm::Expected<OpInfo> hostInfo(const OpInfo &info,
                                  std::vector<Tensor> &views) const;
  DeviceQueue &queue() const { return *stream; }

private:
  std::unique_ptr<Backend> cpu;
  MemorySpace &space;
  KernelRegistry registry;
  std::unique_ptr<DeviceQueue> stream;
};

/// Registers the backend as kind "emulated" (Backends/Builtin.cpp).
void registerEmulatedBackend();

} // namespace heterps::runtime::emulated

#endif // HETERPS_LIB_RUNTIME_BACKENDS_EMULATED_EMULATEDBACKEND_H
