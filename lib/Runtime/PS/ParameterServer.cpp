//===- ParameterServer.cpp - tables, shards and request routing -----------===//

#include "heterps/Runtime/PS/ParameterServer.h"

#include "Shards.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <numeric>

using namespace heterps::runtime;
using namespace heterps::runtime::ps;

static llvm::Error psError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<Consistency> ps::parseConsistency(llvm::StringRef name) {
  if (name == "bsp")
    return Consistency::BSP;
  if (name == "asp")
    return Consistency::ASP;
  return psError("unknown consistency '" + name + "' (expected bsp or asp)");
}

ParameterServer::ParameterServer(ServerOptions options) : opts(options) {}
ParameterServer::~ParameterServer() = default;

llvm::Expected<std::unique_ptr<ParameterServer>>
ParameterServer::create(ServerOptions options) {
  if (options.numShards < 1 || options.numShards > ServerOptions::kMaxShards)
    return psError("a parameter server has 1 to " +
                   llvm::Twine(ServerOptions::kMaxShards) + " shards, not " +
                   llvm::Twine(options.numShards));
  if (options.numWorkers < 1)
    return psError("a parameter server needs at least one worker, not " +
                   llvm::Twine(options.numWorkers));
  return std::unique_ptr<ParameterServer>(new ParameterServer(options));
}

llvm::Error ParameterServer::setWorkers(TableInfo &info, int workers) const {
  if (workers < 0)
    return psError("table '" + info.name() + "' needs at least one worker, " +
                   "not " + llvm::Twine(workers));
  info.set_workers(workers ? workers : opts.numWorkers);
  return llvm::Error::success();
}

llvm::Error ParameterServer::addDenseTable(const std::string &name,
                                           const Tensor &initial, int workers) {
  if (initial.dtype() != DType::F32 || !initial.isPlain())
    return psError("dense table '" + name + "' must be plain f32, not " +
                   initial.typeString());
  auto table = std::make_unique<Table>();
  TableInfo &info = table->info;
  info.set_name(name);
  info.set_kind(DENSE);
  if (llvm::Error e = setWorkers(info, workers))
    return e;
  int64_t n = initial.numElements();
  info.set_elements(n);
  // Contiguous ranges of near-equal size, one per shard.
  for (int s = 0; s <= opts.numShards; ++s)
    info.add_shard_offsets(n * s / opts.numShards);
  const auto *src = initial.data<float>();
  for (int s = 0; s < opts.numShards; ++s) {
    int64_t begin = info.shard_offsets(s), end = info.shard_offsets(s + 1);
    Tensor slice(DType::F32, {end - begin});
    std::memcpy(slice.rawData(), src + begin, (end - begin) * sizeof(float));
    table->dense.push_back(
        std::make_unique<DenseShard>(info, std::move(slice), opts));
  }
  std::unique_lock lock(tablesMutex);
  if (!tables.try_emplace(name, std::move(table)).second)
    return psError("the parameter server already has a table '" + name + "'");
  return llvm::Error::success();
}

llvm::Error ParameterServer::addSparseTable(const std::string &name,
                                            int64_t rows, int64_t dim,
                                            float initScale, uint64_t seed,
                                            int workers) {
  if (rows < 1 || dim < 1)
    return psError("sparse table '" + name + "' needs rows and dim >= 1, not " +
                   llvm::Twine(rows) + " x " + llvm::Twine(dim));
  auto table = std::make_unique<Table>();
  TableInfo &info = table->info;
  info.set_name(name);
  info.set_kind(SPARSE);
  info.set_rows(rows);
  info.set_dim(dim);
  if (llvm::Error e = setWorkers(info, workers))
    return e;
  for (int s = 0; s < opts.numShards; ++s)
    table->sparse.push_back(
        std::make_unique<SparseShard>(info, s, initScale, seed, opts));
  std::unique_lock lock(tablesMutex);
  if (!tables.try_emplace(name, std::move(table)).second)
    return psError("the parameter server already has a table '" + name + "'");
  return llvm::Error::success();
}

llvm::Expected<DenseTableState>
ParameterServer::saveDense(const std::string &name) {
  llvm::Expected<Table *> table = lookup(name, 0);
  if (!table)
    return table.takeError();
  const TableInfo &info = (*table)->info;
  if (info.kind() != DENSE)
    return psError("table '" + name + "' is not dense");
  DenseTableState state;
  state.values = Tensor(DType::F32, {info.elements()});
  for (int s = 0; s < opts.numShards; ++s)
    (*table)->dense[s]->save(state, info.shard_offsets(s));
  return state;
}

llvm::Error ParameterServer::restoreDense(const std::string &name,
                                          const DenseTableState &state) {
  llvm::Expected<Table *> table = lookup(name, 0);
  if (!table)
    return table.takeError();
  const TableInfo &info = (*table)->info;
  if (info.kind() != DENSE || state.values.numElements() != info.elements())
    return psError("table '" + name + "' holds " +
                   llvm::Twine(info.elements()) + " values, the state " +
                   llvm::Twine(state.values.numElements()));
  for (int s = 0; s < opts.numShards; ++s)
    (*table)->dense[s]->restore(state, info.shard_offsets(s));
  return llvm::Error::success();
}

llvm::Expected<train::SparseRows>
ParameterServer::saveSparse(const std::string &name) {
  llvm::Expected<Table *> table = lookup(name, 0);
  if (!table)
    return table.takeError();
  const TableInfo &info = (*table)->info;
  if (info.kind() != SPARSE)
    return psError("table '" + name + "' is not sparse");
  std::vector<int64_t> ids;
  std::vector<float> rows, accs;
  train::SparseRows out;
  for (int s = 0; s < opts.numShards; ++s)
    out.version = (*table)->sparse[s]->save(ids, rows, accs);
  // Ascending ids: the same rows make the same checkpoint.
  std::vector<size_t> order(ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return ids[a] < ids[b]; });
  int64_t n = static_cast<int64_t>(ids.size()), dim = info.dim();
  out.values = Tensor(DType::F32, {n, dim});
  if (!accs.empty())
    out.accumulators = Tensor(DType::F32, {n, dim});
  for (int64_t i = 0; i < n; ++i) {
    size_t from = order[i];
    out.ids.push_back(ids[from]);
    std::memcpy(out.values.data<float>() + i * dim, rows.data() + from * dim,
                dim * sizeof(float));
    if (!accs.empty())
      std::memcpy(out.accumulators.data<float>() + i * dim,
                  accs.data() + from * dim, dim * sizeof(float));
  }
  return out;
}

llvm::Error ParameterServer::restoreSparse(const std::string &name,
                                           const train::SparseRows &saved) {
  llvm::Expected<Table *> table = lookup(name, 0);
  if (!table)
    return table.takeError();
  const TableInfo &info = (*table)->info;
  int64_t n = static_cast<int64_t>(saved.ids.size()), dim = info.dim();
  bool adagrad = opts.sparse.kind == SparseOptimizerOptions::Kind::Adagrad;
  // No stored rows: no accumulators either, whatever the optimizer.
  bool accumulators = !saved.accumulators.isNull();
  if (info.kind() != SPARSE || saved.values.shape() != Shape{n, dim} ||
      (n > 0 && adagrad != accumulators))
    return psError("table '" + name + "' holds rows of " + llvm::Twine(dim) +
                   (adagrad ? " with" : " without") +
                   " Adagrad accumulators; the saved rows do not fit");
  std::vector<std::vector<int64_t>> ids(opts.numShards);
  std::vector<std::vector<const float *>> rows(opts.numShards),
      accs(opts.numShards);
  for (int64_t i = 0; i < n; ++i) {
    int64_t id = saved.ids[i];
    if (id < 0 || id >= info.rows())
      return psError("table '" + name + "': saved row id " + llvm::Twine(id) +
                     " is outside [0, " + llvm::Twine(info.rows()) + ")");
    int s = static_cast<int>(id % opts.numShards);
    ids[s].push_back(id);
    rows[s].push_back(saved.values.data<float>() + i * dim);
    if (adagrad)
      accs[s].push_back(saved.accumulators.data<float>() + i * dim);
  }
  for (int s = 0; s < opts.numShards; ++s)
    (*table)->sparse[s]->restore(ids[s], rows[s], accs[s], saved.version);
  return llvm::Error::success();
}

int64_t ParameterServer::storedRows(const std::string &name) const {
  std::shared_lock lock(tablesMutex);
  auto it = tables.find(name);
  int64_t rows = 0;
  if (it != tables.end())
    for (const auto &shard : it->second->sparse)
      rows += shard->storedRows();
  return rows;
}

llvm::Expected<ParameterServer::Table *>
ParameterServer::lookup(const std::string &name, int shard) {
  if (shard < 0 || shard >= opts.numShards)
    return psError("shard " + llvm::Twine(shard) + " does not exist (the " +
                   "server has " + llvm::Twine(opts.numShards) + ")");
  std::shared_lock lock(tablesMutex);
  auto it = tables.find(name);
  if (it == tables.end())
    return psError("the parameter server has no table '" + name + "'");
  return it->second.get();
}

llvm::Error ParameterServer::serve(const Request &request, Response &response) {
  switch (request.body_case()) {
  case Request::kList: {
    ListTablesResponse *list = response.mutable_list();
    list->Clear();
    list->set_num_shards(opts.numShards);
    list->set_num_workers(opts.numWorkers);
    list->set_bsp(opts.consistency == Consistency::BSP);
    std::shared_lock lock(tablesMutex);
    for (const auto &[name, table] : tables)
      *list->add_tables() = table->info;
    return llvm::Error::success();
  }
  case Request::kPull: {
    llvm::Expected<Table *> table =
        lookup(request.pull().table(), request.shard());
    if (!table)
      return table.takeError();
    PullResponse *out = response.mutable_pull();
    if ((*table)->info.kind() == DENSE)
      return (*table)->dense[request.shard()]->pull(request.pull(), *out);
    return (*table)->sparse[request.shard()]->pull(request.pull(), *out);
  }
  case Request::kPush: {
    llvm::Expected<Table *> table =
        lookup(request.push().table(), request.shard());
    if (!table)
      return table.takeError();
    PushResponse *out = response.mutable_push();
    if ((*table)->info.kind() == DENSE)
      return (*table)->dense[request.shard()]->push(request.push(), *out);
    return (*table)->sparse[request.shard()]->push(request.push(), *out);
  }
  case Request::BODY_NOT_SET:
    break;
  }
  return psError("an empty request");
}

void ParameterServer::handle(const Request &request, Response &response) {
  // Not Clear(): a response of the same kind keeps its buffers, so pulls
  // into a reused response do not allocate (and page-fault) every time.
  response.clear_error();
  if (llvm::Error e = serve(request, response)) {
    response.clear_body();
    response.set_error(llvm::toString(std::move(e)));
  }
}
