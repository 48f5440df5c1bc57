//===- Backend.cpp - device backends and their registry -------------------===//

#include "heterps/Runtime/Backend.h"
#include "heterps/Runtime/Train/TrainKernel.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

#include <mutex>

using namespace heterps::runtime;

static llvm::Error backendError(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

llvm::Error Completion::wait() const {
  if (!pending.valid())
    return llvm::Error::success();
  const std::string &error = pending.get();
  return error.empty() ? llvm::Error::success() : backendError(error);
}

Backend::~Backend() = default;

llvm::Expected<std::unique_ptr<Kernel>>
Backend::createKernel(const OpInfo &info) {
  const KernelFactory *factory = kernels().lookup(info.op.type());
  if (!factory)
    return backendError("op type '" + info.op.type() +
                        "' is not supported by the " + name() + " backend");
  return (*factory)(info);
}

llvm::Expected<std::unique_ptr<train::TrainBackend>>
Backend::createTrainBackend(const train::TrainBackendOptions &) const {
  return backendError("the " + name() + " backend cannot train");
}

bool Backend::canCopy(const MemorySpace &from, const MemorySpace &to) const {
  return (from.isHost() && &to == &memory()) ||
         (&from == &memory() && to.isHost());
}

namespace {
struct Registry {
  std::mutex mutex;
  llvm::StringMap<BackendFactory> factories;
};
} // namespace

static Registry &registry() {
  static Registry *r = new Registry();
  return *r;
}

static void ensureBuiltins() {
  static std::once_flag once;
  std::call_once(once, registerBuiltinBackends);
}

void heterps::runtime::registerBackend(llvm::StringRef kind,
                                       BackendFactory factory) {
  Registry &r = registry();
  std::lock_guard lock(r.mutex);
  r.factories[kind] = std::move(factory);
}

const BackendFactory *heterps::runtime::findBackend(llvm::StringRef kind) {
  ensureBuiltins();
  Registry &r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.factories.find(kind);
  // StringMap entries stay where they are when others are added.
  return it == r.factories.end() ? nullptr : &it->second;
}

std::vector<std::string> heterps::runtime::backendKinds() {
  ensureBuiltins();
  Registry &r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> kinds;
  for (const auto &entry : r.factories)
    kinds.push_back(entry.getKey().str());
  llvm::sort(kinds);
  return kinds;
}

heterps::runtime::train::TrainKernel::~TrainKernel() = default;
heterps::runtime::train::TrainBackend::~TrainBackend() = default;
