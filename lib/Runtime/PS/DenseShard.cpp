//===- DenseShard.cpp - one shard's range of a dense table ----------------===//

#include "Shards.h"

#include "llvm/ADT/Twine.h"

#include <cstring>
#include <mutex>

using namespace heterps::runtime;
using namespace heterps::runtime::ps;

DenseShard::DenseShard(const TableInfo &info, Tensor values,
                       const ServerOptions &options)
    : options(options), table(info.name()), workers(info.workers()),
      gate(table, workers), values(std::move(values)),
      pending(DType::F32, this->values.shape()), received(workers, 0),
      optimizer(options.dense) {}

llvm::Error DenseShard::pull(const PullRequest &request,
                             PullResponse &response) {
  std::shared_lock lock(mutex);
  if (options.consistency == Consistency::BSP)
    if (llvm::Error e =
            gate.waitFor(lock, request.min_version(), options.waitTimeout))
      return e;
  int64_t n = values.numElements();
  int64_t offset = request.offset(),
          count = request.count() ? request.count() : n - offset;
  if (offset < 0 || count < 0 || offset > n || count > n - offset)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::Twine("table '") + table + "': values [" + llvm::Twine(offset) +
            ", +" + llvm::Twine(count) + ") of a shard range of " +
            llvm::Twine(n));
  response.set_version(gate.version());
  response.set_values(values.data<float>() + offset, count * sizeof(float));
  return llvm::Error::success();
}

llvm::Error DenseShard::push(const PushRequest &request,
                             PushResponse &response) {
  const std::string &bytes = request.grads();
  int64_t n = pending.numElements();
  int64_t offset = request.offset(),
          count = request.count() ? request.count() : n - offset;
  auto pushError = [&](const llvm::Twine &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   llvm::Twine("table '") + table +
                                       "': " + what);
  };
  if (offset < 0 || count < 0 || offset > n || count > n - offset)
    return pushError("gradient values [" + llvm::Twine(offset) + ", +" +
                     llvm::Twine(count) + ") of a shard range of " +
                     llvm::Twine(n));
  if (static_cast<int64_t>(bytes.size()) != count * int64_t(sizeof(float)))
    return pushError("a shard gradient of " + llvm::Twine(bytes.size()) +
                     " bytes for a range of " +
                     llvm::Twine(count * int64_t(sizeof(float))) + " bytes");
  std::unique_lock lock(mutex);
  float *sum = pending.data<float>();
  const auto *g = reinterpret_cast<const float *>(bytes.data());
  if (options.consistency == Consistency::ASP) {
    // Each push is an update of its own: it cannot come in pieces.
    if (count != n)
      return pushError("an ASP push is the whole shard range");
    if (!bytes.empty())
      std::memcpy(sum, g, bytes.size());
    if (llvm::Error e = optimizer.update(0, values, pending, request.lr()))
      return e;
    gate.advance();
    response.set_version(gate.version());
    return llvm::Error::success();
  }
  int worker = request.worker();
  if (llvm::Error e = gate.check(worker, request.step()))
    return e;
  if (received[worker] + count > n)
    return pushError("worker " + llvm::Twine(worker) + " pushed more than " +
                     "its range for version " + llvm::Twine(request.step()));
  // The version's first piece starts the sum: it overwrites what the last
  // version left when it is a whole range, else the sum starts at zero.
  if (!started && count == n) {
    if (!bytes.empty())
      std::memcpy(sum, g, bytes.size());
  } else {
    if (!started)
      std::fill_n(sum, n, 0.f);
    for (int64_t i = 0; i < count; ++i)
      sum[offset + i] += g[i];
  }
  started = true;
  received[worker] += count;
  if (received[worker] < n) {
    response.set_version(gate.version());
    return llvm::Error::success();
  }
  llvm::Expected<int> arrived = gate.arrive(worker, request.step());
  if (!arrived)
    return arrived.takeError();
  if (*arrived == workers) {
    float mean = 1.f / static_cast<float>(workers);
    if (workers > 1)
      for (int64_t i = 0; i < n; ++i)
        sum[i] *= mean;
    if (llvm::Error e = optimizer.update(0, values, pending, request.lr()))
      return e;
    gate.advance();
    std::fill(received.begin(), received.end(), 0);
    started = false;
  }
  response.set_version(gate.version());
  return llvm::Error::success();
}

/// Copies `count` floats of `from` into `to` at `toOffset`; a null `from`
/// (a moment the optimizer has not needed yet) leaves `to` null.
static void copyRange(const Tensor &from, int64_t fromOffset, Tensor &to,
                      int64_t toOffset, int64_t count, int64_t toLength) {
  if (from.isNull() || count == 0)
    return;
  if (to.isNull())
    to = Tensor(DType::F32, {toLength});
  std::memcpy(to.data<float>() + toOffset, from.data<float>() + fromOffset,
              count * sizeof(float));
}

void DenseShard::save(DenseTableState &state, int64_t offset) {
  std::shared_lock lock(mutex);
  int64_t n = values.numElements(), total = state.values.numElements();
  copyRange(values, 0, state.values, offset, n, total);
  state.version = gate.version();
  auto slot = optimizer.slots().find(0);
  if (slot == optimizer.slots().end())
    return;
  copyRange(slot->second.first, 0, state.optimizer.first, offset, n, total);
  copyRange(slot->second.second, 0, state.optimizer.second, offset, n, total);
  state.optimizer.steps = slot->second.steps;
}

void DenseShard::restore(const DenseTableState &state, int64_t offset) {
  std::unique_lock lock(mutex);
  int64_t n = values.numElements();
  copyRange(state.values, offset, values, 0, n, n);
  std::map<int, train::Optimizer::State> slots;
  if (state.optimizer.steps > 0) {
    train::Optimizer::State &slot = slots[0];
    copyRange(state.optimizer.first, offset, slot.first, 0, n, n);
    copyRange(state.optimizer.second, offset, slot.second, 0, n, n);
    slot.steps = state.optimizer.steps;
  }
  optimizer.setSlots(std::move(slots));
  gate.reset(state.version);
  std::fill(received.begin(), received.end(), 0);
  started = false;
}
