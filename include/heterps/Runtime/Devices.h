//===- Devices.h - the backends one plan runs on ----------------*- C++ -*-===//
//
// A plan places each op on a device type; the plan's `device_types` give
// each type's kind (cpu, cuda, ...), which picks the backend that runs it.
// Devices makes one backend per device type the plan uses (the host's CPU
// backend serves every type of kind cpu and is always there: graph inputs,
// outputs and parameters live in host memory) and moves tensors between
// their memory spaces. The Executor and the trainers insert a transfer
// wherever a value crosses from one space to another.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_DEVICES_H
#define HETERPS_RUNTIME_DEVICES_H

#include "heterps/Runtime/Backend.h"
#include "heterps/Runtime/Train/TrainKernel.h"

#include <map>
#include <mutex>
#include <set>

namespace heterps::runtime {

struct DeviceOptions {
  BackendOptions backend;
  /// Device type names that are this machine's CPU, besides "" and "cpu",
  /// for plans that do not give kinds.
  std::vector<std::string> cpuDeviceTypes;
  /// Run ops of kinds no backend of this runtime serves on the emulated
  /// device (its own memory, real transfers) instead of refusing them.
  bool emulateMissingDevices = false;
};

class Devices {
public:
  /// The backends of `plan`'s device types. An op on a device type of a
  /// kind no backend serves is an error naming the op and the kind.
  static llvm::Expected<std::unique_ptr<Devices>>
  create(const plan::Plan &plan, const DeviceOptions &options);
  ~Devices();

  /// The CPU backend, whose memory is the host's.
  Backend &host() const { return *backends.front(); }
  /// The backend that runs `op`: its device type's, or the host's when
  /// that backend has no kernel for the op's type (after prepareTraining:
  /// no training kernel, or no training kernels at all). The op then runs
  /// on the CPU, with transfers around it; fallbacks() lists such op types.
  Backend &of(const plan::Op &op) const;
  /// "<device type>: <op type>" for every op type that fell back to the
  /// CPU so far, sorted.
  std::vector<std::string> fallbacks() const;
  /// The backend whose memory is `space`, or null.
  Backend *owner(const MemorySpace &space) const;
  /// Device types that run on the emulated device, in order of first use.
  const std::vector<std::string> &emulated() const { return emulatedTypes; }

  /// Applies each backend's rewrites to its own ops.
  void rewriteForInference(plan::Plan &plan, WeightMap &weights) const;
  void rewriteForTraining(plan::Plan &plan, const WeightMap &weights) const;
  /// Makes every backend's training kernels (trainer() then serves them).
  llvm::Error prepareTraining(const train::TrainBackendOptions &options);
  /// The training kernels for `op` (after prepareTraining).
  const train::TrainBackend &trainer(const plan::Op &op) const;
  /// The training kernels whose tensors live in `space`.
  const train::TrainBackend &trainer(const MemorySpace &space) const;
  /// enterThread of every backend, for the calling thread.
  void enterThread() const;

  /// Starts moving `t` into `to`: `t` itself when it is there already,
  /// else a copy by the backend of the device side, through host memory
  /// when no backend copies between two device spaces directly. A tensor
  /// in a backend layout is made plain first.
  llvm::Expected<Transfer> transfer(const Tensor &t, MemorySpace &to) const;
  /// transfer() and wait for it.
  llvm::Expected<Tensor> moveTo(const Tensor &t, MemorySpace &to) const;

  /// Every backend's counters, summed by name.
  std::map<std::string, int64_t> counters() const;

private:
  Devices() = default;
  /// The host's backend first, then one per device type of another kind.
  std::vector<std::unique_ptr<Backend>> backends;
  /// Device type name -> index into `backends`.
  std::map<std::string, size_t> byDeviceType;
  std::vector<std::string> emulatedTypes;
  /// Per backend (same index): its training kernels (null: it has none).
  std::vector<std::unique_ptr<train::TrainBackend>> trainers;
  /// Per backend: the op types its training kernels take.
  std::vector<std::set<std::string>> trainable;
  mutable std::mutex fallbackMutex;
  mutable std::set<std::string> fellBack;
};

/// The kind of `deviceType` in `plan` ("cpu", "cuda", ...): from the plan's
/// device types, else "cpu" for "", "cpu" and `cpuTypes`, else "".
std::string deviceKind(const plan::Plan &plan, llvm::StringRef deviceType,
                       llvm::ArrayRef<std::string> cpuTypes = {});

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_DEVICES_H
