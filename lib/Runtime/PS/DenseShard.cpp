//===- DenseShard.cpp - one shard's range of a dense table ----------------===//

#include "Shards.h"

#include "llvm/ADT/Twine.h"

#include <cstring>
#include <mutex>

using namespace heterps::runtime;
using namespace heterps::runtime::ps;

DenseShard::DenseShard(const std::string &table, Tensor values,
                       const ServerOptions &options)
    : options(options), table(table), gate(table, options.numWorkers),
      values(std::move(values)), pending(DType::F32, this->values.shape()),
      optimizer(options.dense) {}

llvm::Error DenseShard::pull(const PullRequest &request,
                             PullResponse &response) {
  std::shared_lock lock(mutex);
  if (options.consistency == Consistency::BSP)
    if (llvm::Error e =
            gate.waitFor(lock, request.min_version(), options.waitTimeout))
      return e;
  response.set_version(gate.version());
  response.set_values(values.rawData(), values.bytes());
  return llvm::Error::success();
}

llvm::Error DenseShard::push(const PushRequest &request,
                             PushResponse &response) {
  const std::string &bytes = request.grads();
  if (bytes.size() != pending.bytes())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::Twine("table '") + table + "': a shard gradient of " +
            llvm::Twine(bytes.size()) + " bytes for a range of " +
            llvm::Twine(pending.bytes()) + " bytes");
  std::unique_lock lock(mutex);
  float *sum = pending.data<float>();
  int64_t n = pending.numElements();
  if (options.consistency == Consistency::ASP) {
    std::memcpy(sum, bytes.data(), bytes.size());
    optimizer.update(0, values, pending, request.lr());
    gate.advance();
    response.set_version(gate.version());
    return llvm::Error::success();
  }
  llvm::Expected<int> arrived = gate.arrive(request.worker(), request.step());
  if (!arrived)
    return arrived.takeError();
  const auto *g = reinterpret_cast<const float *>(bytes.data());
  // The first arrival of a version overwrites what the last one left.
  if (*arrived == 1)
    std::memcpy(sum, g, bytes.size());
  else
    for (int64_t i = 0; i < n; ++i)
      sum[i] += g[i];
  if (*arrived == options.numWorkers) {
    float mean = 1.f / static_cast<float>(options.numWorkers);
    if (options.numWorkers > 1)
      for (int64_t i = 0; i < n; ++i)
        sum[i] *= mean;
    optimizer.update(0, values, pending, request.lr());
    gate.advance();
  }
  response.set_version(gate.version());
  return llvm::Error::success();
}
