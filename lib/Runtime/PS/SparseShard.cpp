//===- SparseShard.cpp - one shard's rows of an embedding table -----------===//

#include "Shards.h"

#include "heterps/Runtime/Hash.h"

#include "llvm/ADT/Twine.h"

#include <cmath>
#include <cstring>
#include <mutex>

using namespace heterps::runtime;
using namespace heterps::runtime::ps;

static llvm::Error psError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

SparseShard::SparseShard(const TableInfo &info, int shard, float initScale,
                         uint64_t seed, const ServerOptions &options)
    : options(options), info(info), shard(shard), initScale(initScale),
      seed(mix64(seed)), gate(info.name(), info.workers()) {}

llvm::Error SparseShard::checkId(int64_t id) const {
  if (id < 0 || id >= info.rows())
    return psError("table '" + info.name() + "': row id " + llvm::Twine(id) +
                   " is outside [0, " + llvm::Twine(info.rows()) + ")");
  if (id % options.numShards != shard)
    return psError("table '" + info.name() + "': row " + llvm::Twine(id) +
                   " was sent to shard " + llvm::Twine(shard) +
                   ", it lives on shard " +
                   llvm::Twine(id % options.numShards));
  return llvm::Error::success();
}

void SparseShard::initialRow(int64_t id, float *row) const {
  uint64_t key = mix64(seed + static_cast<uint64_t>(id) * kGolden64);
  for (int64_t j = 0; j < info.dim(); ++j)
    row[j] = initScale * (2.f * unitFloat(mix64(key + j)) - 1.f);
}

int64_t SparseShard::storedRows() {
  std::shared_lock lock(mutex);
  return static_cast<int64_t>(slots.size());
}

llvm::Error SparseShard::pull(const PullRequest &request,
                              PullResponse &response) {
  int64_t dim = info.dim();
  std::string *out = response.mutable_values();
  out->resize(request.ids_size() * dim * sizeof(float));
  auto *rows = reinterpret_cast<float *>(out->data());
  std::shared_lock lock(mutex);
  if (options.consistency == Consistency::BSP)
    if (llvm::Error e =
            gate.waitFor(lock, request.min_version(), options.waitTimeout))
      return e;
  for (int i = 0; i < request.ids_size(); ++i) {
    int64_t id = request.ids(i);
    if (llvm::Error e = checkId(id))
      return e;
    auto it = slots.find(id);
    if (it == slots.end())
      initialRow(id, rows + i * dim);
    else
      std::memcpy(rows + i * dim, values.data() + it->second * dim,
                  dim * sizeof(float));
  }
  response.set_version(gate.version());
  return llvm::Error::success();
}

void SparseShard::update(int64_t id, const float *grad, float lr) {
  int64_t dim = info.dim();
  auto [it, inserted] =
      slots.try_emplace(id, static_cast<int64_t>(slots.size()));
  if (inserted) {
    values.resize(values.size() + dim);
    initialRow(id, values.data() + it->second * dim);
    if (options.sparse.kind == SparseOptimizerOptions::Kind::Adagrad)
      accumulators.resize(accumulators.size() + dim,
                          options.sparse.initialAccumulator);
  }
  float *p = values.data() + it->second * dim;
  if (options.sparse.kind == SparseOptimizerOptions::Kind::SGD) {
    for (int64_t j = 0; j < dim; ++j)
      p[j] -= lr * grad[j];
    return;
  }
  float *s = accumulators.data() + it->second * dim;
  for (int64_t j = 0; j < dim; ++j) {
    s[j] += grad[j] * grad[j];
    p[j] -= lr * grad[j] / (std::sqrt(s[j]) + options.sparse.epsilon);
  }
}

llvm::Error SparseShard::push(const PushRequest &request,
                              PushResponse &response) {
  int64_t dim = info.dim();
  if (request.grads().size() != request.ids_size() * dim * sizeof(float))
    return psError(
        "table '" + info.name() + "': " + llvm::Twine(request.ids_size()) +
        " ids with " + llvm::Twine(request.grads().size()) +
        " bytes of gradients (expected " + llvm::Twine(dim) + " f32 per id)");
  for (int64_t id : request.ids())
    if (llvm::Error e = checkId(id))
      return e;
  const auto *g = reinterpret_cast<const float *>(request.grads().data());

  std::unique_lock lock(mutex);
  int arrived = 1;
  if (options.consistency == Consistency::BSP) {
    llvm::Expected<int> a = gate.arrive(request.worker(), request.step());
    if (!a)
      return a.takeError();
    arrived = *a;
  }
  if (arrived == 1) {
    pendingSlots.clear();
    pending.clear();
  }
  // Rows of one id are summed (repeated ids in a push, and in BSP the
  // workers' pushes) before the optimizer sees them, as PyTorch coalesces
  // a sparse gradient.
  for (int i = 0; i < request.ids_size(); ++i) {
    auto [it, inserted] = pendingSlots.try_emplace(
        request.ids(i), static_cast<int64_t>(pendingSlots.size()));
    if (inserted)
      pending.resize(pending.size() + dim, 0.f);
    float *sum = pending.data() + it->second * dim;
    for (int64_t j = 0; j < dim; ++j)
      sum[j] += g[i * dim + j];
  }
  bool apply =
      options.consistency == Consistency::ASP || arrived == info.workers();
  if (apply) {
    float scale = options.consistency == Consistency::BSP
                      ? 1.f / static_cast<float>(info.workers())
                      : 1.f;
    for (auto &[id, slot] : pendingSlots) {
      float *sum = pending.data() + slot * dim;
      if (scale != 1.f)
        for (int64_t j = 0; j < dim; ++j)
          sum[j] *= scale;
      update(id, sum, request.lr());
    }
    gate.advance();
  }
  response.set_version(gate.version());
  return llvm::Error::success();
}

int64_t SparseShard::save(std::vector<int64_t> &ids, std::vector<float> &rows,
                          std::vector<float> &accs) {
  std::shared_lock lock(mutex);
  int64_t dim = info.dim();
  for (const auto &[id, slot] : slots) {
    ids.push_back(id);
    rows.insert(rows.end(), values.begin() + slot * dim,
                values.begin() + (slot + 1) * dim);
    if (!accumulators.empty())
      accs.insert(accs.end(), accumulators.begin() + slot * dim,
                  accumulators.begin() + (slot + 1) * dim);
  }
  return gate.version();
}

void SparseShard::restore(llvm::ArrayRef<int64_t> ids,
                          llvm::ArrayRef<const float *> rows,
                          llvm::ArrayRef<const float *> accs, int64_t version) {
  std::unique_lock lock(mutex);
  int64_t dim = info.dim();
  slots.clear();
  values.clear();
  accumulators.clear();
  pendingSlots.clear();
  pending.clear();
  for (size_t i = 0; i < ids.size(); ++i) {
    slots.emplace(ids[i], static_cast<int64_t>(i));
    values.insert(values.end(), rows[i], rows[i] + dim);
    if (!accs.empty())
      accumulators.insert(accumulators.end(), accs[i], accs[i] + dim);
  }
  gate.reset(version);
}
