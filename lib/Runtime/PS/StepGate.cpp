//===- StepGate.cpp - BSP versions of a table shard -----------------------===//

#include "Shards.h"

#include "llvm/ADT/Twine.h"

using namespace heterps::runtime::ps;

static llvm::Error psError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<int> StepGate::arrive(int worker, int64_t step) {
  if (llvm::Error e = check(worker, step))
    return std::move(e);
  pushed[worker] = true;
  return ++arrived;
}

llvm::Error StepGate::check(int worker, int64_t step) const {
  if (worker < 0 || worker >= static_cast<int>(pushed.size()))
    return psError("table '" + table + "': worker " + llvm::Twine(worker) +
                   " is not one of the server's " + llvm::Twine(pushed.size()) +
                   " workers");
  if (step != applied)
    return psError("table '" + table + "': worker " + llvm::Twine(worker) +
                   " pushed a gradient of version " + llvm::Twine(step) +
                   ", but the table is at version " + llvm::Twine(applied) +
                   " (BSP: pull the current version first)");
  if (pushed[worker])
    return psError("table '" + table + "': worker " + llvm::Twine(worker) +
                   " pushed twice for version " + llvm::Twine(step));
  return llvm::Error::success();
}

void StepGate::advance() {
  ++applied;
  arrived = 0;
  std::fill(pushed.begin(), pushed.end(), false);
  changed.notify_all();
}

void StepGate::reset(int64_t version) {
  ++resets;
  applied = version;
  arrived = 0;
  std::fill(pushed.begin(), pushed.end(), false);
  changed.notify_all();
}

llvm::Error StepGate::timedOut(int64_t minVersion,
                               std::chrono::milliseconds timeout) const {
  std::string missing;
  for (size_t w = 0; w < pushed.size(); ++w)
    if (!pushed[w])
      missing += (missing.empty() ? "" : ", ") + std::to_string(w);
  return psError("table '" + table + "': waited " +
                 llvm::Twine(timeout.count()) + " ms for version " +
                 llvm::Twine(minVersion) + " (at " + llvm::Twine(applied) +
                 "); workers not yet pushed for version " +
                 llvm::Twine(applied) + ": " + missing);
}

llvm::Error StepGate::restoredWhileWaiting(int64_t minVersion) const {
  return psError("table '" + table + "' was restored to version " +
                 llvm::Twine(applied) + " while a pull waited for version " +
                 llvm::Twine(minVersion));
}
