//===- Devices.cpp - the backends one plan runs on ------------------------===//

#include "heterps/Runtime/Devices.h"
#include "heterps/Runtime/Plan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <cassert>

using namespace heterps::runtime;

static llvm::Error devicesError(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

std::string heterps::runtime::deviceKind(const plan::Plan &plan,
                                         llvm::StringRef deviceType,
                                         llvm::ArrayRef<std::string> cpuTypes) {
  for (const plan::DeviceType &t : plan.device_types())
    if (t.name() == deviceType)
      return t.kind();
  if (deviceType.empty() || deviceType == "cpu" ||
      llvm::is_contained(cpuTypes, deviceType))
    return "cpu";
  return "";
}

Devices::~Devices() = default;

llvm::Expected<std::unique_ptr<Devices>>
Devices::create(const plan::Plan &plan, const DeviceOptions &options) {
  std::unique_ptr<Devices> devices(new Devices());
  auto make = [&](llvm::StringRef kind, llvm::StringRef deviceType)
      -> llvm::Expected<std::unique_ptr<Backend>> {
    const BackendFactory *factory = findBackend(kind);
    if (!factory)
      return devicesError("no backend serves device kind '" + kind + "'");
    return (*factory)(options.backend, deviceType);
  };
  auto host = make("cpu", "");
  if (!host)
    return host.takeError();
  devices->backends.push_back(std::move(*host));

  for (int i = 0; i < plan.ops_size(); ++i) {
    const std::string &type = plan.ops(i).device();
    if (devices->byDeviceType.count(type))
      continue;
    std::string kind = deviceKind(plan, type, options.cpuDeviceTypes);
    if (kind == "cpu") {
      devices->byDeviceType[type] = 0;
      continue;
    }
    std::string backendKind = kind;
    if (kind.empty() || !findBackend(kind)) {
      if (!options.emulateMissingDevices) {
        std::string what =
            kind.empty() ? "whose kind the plan does not give"
                         : "of kind '" + kind + "', which no backend serves";
        return devicesError(
            describeOp(plan, i) + " is placed on device type '" + type + "', " +
            what + " (this runtime has: " + llvm::join(backendKinds(), ", ") +
            "; heterps-run --emulate-missing-devices runs it on the emulated "
            "device)");
      }
      backendKind = "emulated";
      devices->emulatedTypes.push_back(type);
    }
    auto backend = make(backendKind, type);
    if (!backend && backendKind != "emulated" &&
        options.emulateMissingDevices) {
      // A backend this runtime has, for a device this machine lacks (the
      // CUDA backend without a GPU).
      llvm::consumeError(backend.takeError());
      devices->emulatedTypes.push_back(type);
      backend = make("emulated", type);
    }
    if (!backend && backendKind == kind)
      return devicesError(
          describeOp(plan, i) + " is placed on device type '" + type +
          "', of kind '" + kind + "', whose backend cannot start here: " +
          llvm::toString(backend.takeError()) +
          " (heterps-run --emulate-missing-devices runs it on the emulated "
          "device)");
    if (!backend)
      return devicesError(describeOp(plan, i) + ": device type '" + type +
                          "': " + llvm::toString(backend.takeError()));
    devices->byDeviceType[type] = devices->backends.size();
    devices->backends.push_back(std::move(*backend));
  }
  return devices;
}

Backend &Devices::of(const plan::Op &op) const {
  auto it = byDeviceType.find(op.device());
  // Ops a rewrite added carry the device of the op they came from.
  assert(it != byDeviceType.end() && "op of a device type the plan lacked");
  if (it == byDeviceType.end() || it->second == 0)
    return host();
  size_t b = it->second;
  bool runs = trainers.empty() ? backends[b]->supports(op)
                               : trainers[b] && trainable[b].count(op.type());
  if (runs)
    return *backends[b];
  std::lock_guard lock(fallbackMutex);
  fellBack.insert(op.device() + ": " + op.type());
  return host();
}

std::vector<std::string> Devices::fallbacks() const {
  std::lock_guard lock(fallbackMutex);
  return {fellBack.begin(), fellBack.end()};
}

Backend *Devices::owner(const MemorySpace &space) const {
  for (const auto &b : backends)
    if (&b->memory() == &space)
      return b.get();
  return nullptr;
}

void Devices::rewriteForInference(plan::Plan &plan, WeightMap &weights) const {
  for (const auto &b : backends)
    b->rewriteForInference(
        plan, weights, [&](const plan::Op &op) { return &of(op) == b.get(); });
}

void Devices::rewriteForTraining(plan::Plan &plan,
                                 const WeightMap &weights) const {
  for (const auto &b : backends)
    b->rewriteForTraining(
        plan, weights, [&](const plan::Op &op) { return &of(op) == b.get(); });
}

llvm::Error
Devices::prepareTraining(const train::TrainBackendOptions &options) {
  trainers.clear();
  trainable.clear();
  for (const auto &b : backends) {
    auto trainer = b->createTrainBackend(options);
    if (!trainer) {
      // A device backend that cannot train leaves its ops to the host's.
      if (b == backends.front())
        return trainer.takeError();
      llvm::consumeError(trainer.takeError());
      trainers.emplace_back();
      trainable.emplace_back();
      continue;
    }
    std::vector<std::string> types = (*trainer)->opTypes();
    trainable.emplace_back(types.begin(), types.end());
    trainers.push_back(std::move(*trainer));
  }
  return llvm::Error::success();
}

const train::TrainBackend &Devices::trainer(const plan::Op &op) const {
  return trainer(of(op).memory());
}

const train::TrainBackend &Devices::trainer(const MemorySpace &space) const {
  for (size_t i = 0; i < backends.size(); ++i)
    if (&backends[i]->memory() == &space && trainers[i])
      return *trainers[i];
  return *trainers.front();
}

void Devices::enterThread() const {
  for (const auto &b : backends)
    b->enterThread();
}

llvm::Expected<Transfer> Devices::transfer(const Tensor &t,
                                           MemorySpace &to) const {
  MemorySpace &from = t.space();
  if (&from == &to)
    return Transfer{t, Completion()};
  if (!t.isPlain()) {
    // Copies move plain tensors; the layout makes its own tensor plain.
    llvm::Expected<Tensor> plain = t.toPlain();
    if (!plain)
      return plain.takeError();
    return transfer(*plain, to);
  }
  Backend *fromOwner = owner(from), *toOwner = owner(to);
  if (!fromOwner || !toOwner)
    return devicesError("no backend of this plan owns " +
                        (fromOwner ? to : from).name() + " memory");
  Backend *copier = toOwner->canCopy(from, to)     ? toOwner
                    : fromOwner->canCopy(from, to) ? fromOwner
                                                   : nullptr;
  if (!copier) {
    // Device to device through the host.
    llvm::Expected<Tensor> staged = moveTo(t, MemorySpace::host());
    if (!staged)
      return staged.takeError();
    return transfer(*staged, to);
  }
  llvm::Expected<Transfer> copy = copier->copy(t, to);
  if (copy)
    MemorySpace::recordTransfer(from, to, t.bytes());
  return copy;
}

llvm::Expected<Tensor> Devices::moveTo(const Tensor &t, MemorySpace &to) const {
  llvm::Expected<Transfer> moving = transfer(t, to);
  if (!moving)
    return moving.takeError();
  if (llvm::Error e = moving->done.wait())
    return std::move(e);
  return std::move(moving->tensor);
}

std::map<std::string, int64_t> Devices::counters() const {
  std::map<std::string, int64_t> sums;
  for (const auto &b : backends)
    for (const auto &[name, value] : b->counters())
      sums[name] += value;
  return sums;
}
