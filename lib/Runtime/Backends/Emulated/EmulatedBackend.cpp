//===- EmulatedBackend.cpp - a second device on the host ------------------===//

#include "EmulatedBackend.h"
#include "EmulatedKernels.h"
#include "EmulatedMemory.h"

#include "heterps/Runtime/Train/TrainKernel.h"

#include <cstring>
#include <map>
#include <mutex>

using namespace heterps::runtime;
using namespace heterps::runtime::emulated;

static llvm::Error emulatedError(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

EmulatedMemory &EmulatedMemory::forDevice(llvm::StringRef deviceType) {
  static std::mutex mutex;
  // Never destroyed: buffers may outlive any backend.
  static auto *spaces = new std::map<std::string, EmulatedMemory *>();
  std::lock_guard lock(mutex);
  EmulatedMemory *&space = (*spaces)[deviceType.str()];
  if (!space)
    space = new EmulatedMemory("emulated:" + deviceType.str());
  return *space;
}

EmulatedBackend::EmulatedBackend(std::unique_ptr<Backend> cpuBackend,
                                 llvm::StringRef deviceType)
    : cpu(std::move(cpuBackend)), space(EmulatedMemory::forDevice(deviceType)),
      stream(std::make_unique<DeviceQueue>(
          [cpu = cpu.get()] { cpu->enterThread(); })) {
  for (const std::string &type : cpu->kernels().opTypes())
    registry.add(type, [this](const OpInfo &info) {
      return EmulatedKernel::create(*this, *cpu, info);
    });
}

// The queue's thread runs kernels that refer to `cpu`: stop it first.
EmulatedBackend::~EmulatedBackend() { stream.reset(); }

void EmulatedBackend::rewriteForInference(plan::Plan &plan, WeightMap &weights,
                                          OpFilter mine) const {
  cpu->rewriteForInference(plan, weights, mine);
}

void EmulatedBackend::rewriteForTraining(plan::Plan &plan,
                                         const WeightMap &weights,
                                         OpFilter mine) const {
  cpu->rewriteForTraining(plan, weights, mine);
}

llvm::Expected<std::unique_ptr<train::TrainBackend>>
EmulatedBackend::createTrainBackend(
    const train::TrainBackendOptions &options) const {
  auto cpuTrainer = cpu->createTrainBackend(options);
  if (!cpuTrainer)
    return cpuTrainer.takeError();
  return std::make_unique<EmulatedTrainBackend>(*this, std::move(*cpuTrainer));
}

static bool isEmulated(const MemorySpace &space) {
  return dynamic_cast<const EmulatedMemory *>(&space) != nullptr;
}

bool EmulatedBackend::canCopy(const MemorySpace &from,
                              const MemorySpace &to) const {
  bool fromOk = from.isHost() || isEmulated(from);
  bool toOk = to.isHost() || isEmulated(to);
  return fromOk && toOk && (&from == &space || &to == &space);
}

llvm::Expected<Transfer> EmulatedBackend::copy(const Tensor &src,
                                               MemorySpace &to) {
  if (!canCopy(src.space(), to) || !src.isPlain())
    return emulatedError("the " + name() + " device cannot copy " +
                         src.typeString() + " to " + to.name() + " memory");
  Tensor dst(src.dtype(), src.shape(), to);
  // Both sides are host RAM underneath; the queue does the copy.
  Tensor from = src.viewIn(MemorySpace::host());
  Tensor into = dst.viewIn(MemorySpace::host());
  std::shared_future<std::string> done =
      stream->submit([from, into]() mutable -> std::string {
        std::memcpy(into.rawData(), from.rawData(), from.bytes());
        return "";
      });
  return Transfer{std::move(dst), Completion(std::move(done))};
}

llvm::Expected<Tensor> EmulatedBackend::hostView(const Tensor &t, int index,
                                                 llvm::StringRef what) const {
  if (&t.space() != &space)
    return emulatedError(what + " " + llvm::Twine(index) + " " +
                         t.typeString() + " is in " + t.space().name() +
                         " memory, not " + space.name() +
                         ": a transfer is missing");
  return t.viewIn(MemorySpace::host());
}

llvm::Expected<Tensor> EmulatedBackend::adopt(const Tensor &t) const {
  llvm::Expected<Tensor> plain = t.toPlain();
  if (!plain)
    return plain.takeError();
  Tensor onDevice(plain->dtype(), plain->shape(), space);
  std::memcpy(onDevice.viewIn(MemorySpace::host()).rawData(), plain->rawData(),
              plain->bytes());
  return onDevice;
}

llvm::Expected<OpInfo>
EmulatedBackend::hostInfo(const OpInfo &info,
                          std::vector<Tensor> &views) const {
  views.clear();
  views.reserve(info.constants.size());
  std::vector<const Tensor *> constants;
  for (auto [k, c] : llvm::enumerate(info.constants)) {
    if (!c) {
      constants.push_back(nullptr);
      continue;
    }
    llvm::Expected<Tensor> view =
        hostView(*c, static_cast<int>(k), "constant input");
    if (!view)
      return view.takeError();
    constants.push_back(&views.emplace_back(std::move(*view)));
  }
  return OpInfo(info.op, std::move(constants));
}

void heterps::runtime::emulated::registerEmulatedBackend() {
  registerBackend("emulated",
                  [](const BackendOptions &options, llvm::StringRef deviceType)
                      -> llvm::Expected<std::unique_ptr<Backend>> {
                    const BackendFactory *cpu = findBackend("cpu");
                    if (!cpu)
                      return emulatedError("the emulated device needs the cpu "
                                           "backend's kernels");
                    auto kernels = (*cpu)(options, deviceType);
                    if (!kernels)
                      return kernels.takeError();
                    return std::make_unique<EmulatedBackend>(
                        std::move(*kernels), deviceType);
                  });
}
