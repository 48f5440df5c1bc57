//===- ClientCheckpoint.cpp - a table's state from its shards, and back ---===//
//
// Save and Restore requests, one per shard, sent together: a checkpoint of
// a server in this process or of shards in other processes is the same.
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/PS/Client.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cstring>
#include <tuple>

using namespace heterps::runtime;
using namespace heterps::runtime::ps;

static llvm::Error checkpointError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Sends one request per shard, made by `fill`; the responses.
static llvm::Expected<std::vector<Response>>
everyShard(Transport &transport, int shards,
           llvm::function_ref<void(Request &, int)> fill) {
  std::vector<Request> requests(shards);
  std::vector<Response> responses(shards);
  for (int s = 0; s < shards; ++s) {
    requests[s].set_shard(s);
    fill(requests[s], s);
  }
  if (llvm::Error e = transport.send(requests, responses))
    return std::move(e);
  for (const Response &r : responses)
    if (!r.error().empty())
      return checkpointError(r.error());
  return responses;
}

static void copyBytes(const std::string &from, Tensor &to, int64_t offset,
                      int64_t length) {
  if (from.empty())
    return;
  if (to.isNull()) {
    to = Tensor(DType::F32, {length});
    std::memset(to.rawData(), 0, to.bytes());
  }
  std::memcpy(to.data<float>() + offset, from.data(), from.size());
}

static void putRange(const Tensor &from, int64_t offset, int64_t count,
                     std::string *to) {
  if (!from.isNull())
    to->assign(reinterpret_cast<const char *>(from.data<float>() + offset),
               count * sizeof(float));
}

llvm::Expected<DenseTableState> PSClient::saveDense(const std::string &name) {
  llvm::Expected<TableInfo> info = table(name);
  if (!info)
    return info.takeError();
  if (info->kind() != DENSE)
    return checkpointError("table '" + name + "' is not dense");
  auto responses = everyShard(transport, shards, [&](Request &r, int) {
    r.mutable_save()->set_table(name);
  });
  if (!responses)
    return responses.takeError();
  DenseTableState state;
  int64_t n = info->elements();
  state.values = Tensor(DType::F32, {n});
  for (int s = 0; s < shards; ++s) {
    const ShardState &shard = (*responses)[s].save();
    int64_t offset = info->shard_offsets(s);
    int64_t count = info->shard_offsets(s + 1) - offset;
    for (const std::string *bytes :
         {&shard.values(), &shard.first(), &shard.second()})
      if (!bytes->empty() &&
          static_cast<int64_t>(bytes->size()) != count * int64_t(sizeof(float)))
        return checkpointError("table '" + name + "': shard " + llvm::Twine(s) +
                               " saved the wrong number of values");
    copyBytes(shard.values(), state.values, offset, n);
    copyBytes(shard.first(), state.optimizer.first, offset, n);
    copyBytes(shard.second(), state.optimizer.second, offset, n);
    state.optimizer.steps = shard.optimizer_steps();
    state.version = shard.version();
  }
  return state;
}

llvm::Error PSClient::restoreDense(const std::string &name,
                                   const DenseTableState &state) {
  llvm::Expected<TableInfo> info = table(name);
  if (!info)
    return info.takeError();
  if (info->kind() != DENSE || state.values.numElements() != info->elements())
    return checkpointError(
        "table '" + name + "' holds " + llvm::Twine(info->elements()) +
        " values, the state " + llvm::Twine(state.values.numElements()));
  auto responses = everyShard(transport, shards, [&](Request &r, int s) {
    RestoreRequest *restore = r.mutable_restore();
    restore->set_table(name);
    ShardState *shard = restore->mutable_state();
    int64_t offset = info->shard_offsets(s);
    int64_t count = info->shard_offsets(s + 1) - offset;
    shard->set_version(state.version);
    putRange(state.values, offset, count, shard->mutable_values());
    putRange(state.optimizer.first, offset, count, shard->mutable_first());
    putRange(state.optimizer.second, offset, count, shard->mutable_second());
    shard->set_optimizer_steps(state.optimizer.steps);
  });
  return responses.takeError();
}

llvm::Expected<train::SparseRows>
PSClient::saveSparse(const std::string &name) {
  llvm::Expected<TableInfo> info = table(name);
  if (!info)
    return info.takeError();
  if (info->kind() != SPARSE)
    return checkpointError("table '" + name + "' is not sparse");
  auto responses = everyShard(transport, shards, [&](Request &r, int) {
    r.mutable_save()->set_table(name);
  });
  if (!responses)
    return responses.takeError();
  int64_t dim = info->dim();
  bool accumulators = false;
  train::SparseRows out;
  for (const Response &r : *responses) {
    const ShardState &shard = r.save();
    if (shard.rows().size() !=
        static_cast<size_t>(shard.ids_size() * dim) * sizeof(float))
      return checkpointError("table '" + name + "': a shard saved " +
                             llvm::Twine(shard.ids_size()) +
                             " ids with the wrong number of values");
    accumulators = accumulators || !shard.accumulators().empty();
    out.version = shard.version();
  }
  // Every shard's rows, then in ascending ids: the same rows make the same
  // checkpoint.
  std::vector<std::tuple<int64_t, const float *, const float *>> all;
  for (const Response &r : *responses) {
    const ShardState &shard = r.save();
    const auto *values = reinterpret_cast<const float *>(shard.rows().data());
    const auto *acc =
        reinterpret_cast<const float *>(shard.accumulators().data());
    for (int i = 0; i < shard.ids_size(); ++i)
      all.emplace_back(shard.ids(i), values + i * dim,
                       shard.accumulators().empty() ? nullptr : acc + i * dim);
  }
  std::sort(all.begin(), all.end(), [](const auto &a, const auto &b) {
    return std::get<0>(a) < std::get<0>(b);
  });
  int64_t n = static_cast<int64_t>(all.size());
  out.values = Tensor(DType::F32, {n, dim});
  if (accumulators && n > 0)
    out.accumulators = Tensor(DType::F32, {n, dim});
  for (int64_t i = 0; i < n; ++i) {
    auto [id, values, acc] = all[i];
    out.ids.push_back(id);
    std::memcpy(out.values.data<float>() + i * dim, values,
                dim * sizeof(float));
    if (!out.accumulators.isNull() && acc)
      std::memcpy(out.accumulators.data<float>() + i * dim, acc,
                  dim * sizeof(float));
  }
  return out;
}

llvm::Error PSClient::restoreSparse(const std::string &name,
                                    const train::SparseRows &saved) {
  llvm::Expected<TableInfo> info = table(name);
  if (!info)
    return info.takeError();
  int64_t n = static_cast<int64_t>(saved.ids.size()), dim = info->dim();
  if (info->kind() != SPARSE || saved.values.shape() != Shape{n, dim} ||
      (!saved.accumulators.isNull() &&
       saved.accumulators.shape() != Shape{n, dim}))
    return checkpointError("table '" + name + "' holds rows of " +
                           llvm::Twine(dim) + "; the saved rows do not fit");
  std::vector<std::vector<int64_t>> byShard(shards);
  for (int64_t i = 0; i < n; ++i) {
    int64_t id = saved.ids[i];
    if (id < 0 || id >= info->rows())
      return checkpointError("table '" + name + "': saved row id " +
                             llvm::Twine(id) + " is outside [0, " +
                             llvm::Twine(info->rows()) + ")");
    byShard[id % shards].push_back(i);
  }
  auto responses = everyShard(transport, shards, [&](Request &r, int s) {
    RestoreRequest *restore = r.mutable_restore();
    restore->set_table(name);
    ShardState *shard = restore->mutable_state();
    shard->set_version(saved.version);
    for (int64_t i : byShard[s]) {
      shard->add_ids(saved.ids[i]);
      shard->mutable_rows()->append(
          reinterpret_cast<const char *>(saved.values.data<float>() + i * dim),
          dim * sizeof(float));
      if (!saved.accumulators.isNull())
        shard->mutable_accumulators()->append(
            reinterpret_cast<const char *>(saved.accumulators.data<float>() +
                                           i * dim),
            dim * sizeof(float));
    }
  });
  return responses.takeError();
}
