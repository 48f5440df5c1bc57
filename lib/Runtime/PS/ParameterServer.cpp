//===- ParameterServer.cpp - tables, shards and request routing -----------===//

#include "heterps/Runtime/PS/ParameterServer.h"

#include "PushLedger.h"
#include "Shards.h"

#include "heterps/Support/PrintableLine.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <google/protobuf/text_format.h>

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

ServerConfig ps::toConfig(const ServerOptions &options) {
  ServerConfig config;
  config.set_num_shards(options.numShards);
  config.set_num_workers(options.numWorkers);
  config.set_bsp(options.consistency == Consistency::BSP);
  const train::OptimizerOptions &dense = options.dense;
  config.set_optimizer(static_cast<int>(dense.kind));
  config.set_momentum(dense.momentum);
  config.set_nesterov(dense.nesterov);
  config.set_beta1(dense.beta1);
  config.set_beta2(dense.beta2);
  config.set_epsilon(dense.epsilon);
  config.set_weight_decay(dense.weightDecay);
  config.set_sparse_optimizer(static_cast<int>(options.sparse.kind));
  config.set_sparse_epsilon(options.sparse.epsilon);
  config.set_sparse_initial_accumulator(options.sparse.initialAccumulator);
  config.set_job(options.job);
  return config;
}

ServerOptions ps::withConfig(ServerOptions options,
                             const ServerConfig &config) {
  options.numWorkers = config.num_workers();
  options.consistency = config.bsp() ? Consistency::BSP : Consistency::ASP;
  train::OptimizerOptions &dense = options.dense;
  dense.kind = static_cast<train::OptimizerKind>(config.optimizer());
  dense.momentum = config.momentum();
  dense.nesterov = config.nesterov();
  dense.beta1 = config.beta1();
  dense.beta2 = config.beta2();
  dense.epsilon = config.epsilon();
  dense.weightDecay = config.weight_decay();
  options.sparse.kind =
      static_cast<SparseOptimizerOptions::Kind>(config.sparse_optimizer());
  options.sparse.epsilon = config.sparse_epsilon();
  options.sparse.initialAccumulator = config.sparse_initial_accumulator();
  options.job = config.job();
  return options;
}

/// The fields in which two configurations differ, as "name: ours vs theirs".
static std::string configDifferences(const ServerConfig &ours,
                                     const ServerConfig &theirs) {
  std::string out;
  const auto *descriptor = ServerConfig::descriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const auto *field = descriptor->field(i);
    std::string a, b;
    google::protobuf::TextFormat::PrintFieldValueToString(ours, field, -1, &a);
    google::protobuf::TextFormat::PrintFieldValueToString(theirs, field, -1,
                                                          &b);
    if (a != b)
      out += (out.empty() ? "" : ", ") + field->name() + " " + a + " vs " + b;
  }
  return out;
}

ParameterServer::ParameterServer(ServerOptions options)
    : opts(options), ledger(std::make_unique<PushLedger>()) {}
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
  for (size_t i = 0; i < options.served.size(); ++i)
    if (options.served[i] < 0 || options.served[i] >= options.numShards ||
        (i && options.served[i] <= options.served[i - 1]))
      return psError("served shards must ascend within [0, " +
                     llvm::Twine(options.numShards) + ")");
  return std::unique_ptr<ParameterServer>(new ParameterServer(options));
}

bool ParameterServer::serves(int shard) const {
  return opts.served.empty() ? shard >= 0 && shard < opts.numShards
                             : llvm::is_contained(opts.served, shard);
}

llvm::Error ParameterServer::setWorkers(TableInfo &info, int workers) const {
  if (workers < 0)
    return psError("table '" + info.name() + "' needs at least one worker, " +
                   "not " + llvm::Twine(workers));
  info.set_workers(workers ? workers : opts.numWorkers);
  return llvm::Error::success();
}

llvm::Error ParameterServer::configure(const ServerConfig &config) {
  std::unique_lock lock(tablesMutex);
  if (!opts.configured) {
    if (config.num_shards() != opts.numShards)
      return psError("this server is one of " + llvm::Twine(opts.numShards) +
                     " shards; the job has " +
                     llvm::Twine(config.num_shards()));
    if (config.num_workers() < 1 || config.optimizer() < 0 ||
        config.optimizer() > static_cast<int>(train::OptimizerKind::Adagrad) ||
        config.sparse_optimizer() < 0 || config.sparse_optimizer() > 1)
      return psError("a configuration out of range: " +
                     config.ShortDebugString());
    opts = withConfig(std::move(opts), config);
    opts.configured = true;
    return llvm::Error::success();
  }
  ServerConfig ours = toConfig(opts);
  if (ours.job() != config.job())
    return psError("this server belongs to job " + ours.job() +
                   "; the caller's model or options make job " + config.job());
  std::string differences = configDifferences(ours, config);
  if (!differences.empty())
    return psError("mismatched options (this server vs the caller): " +
                   differences);
  return llvm::Error::success();
}

llvm::Error ParameterServer::addShard(TableInfo info, int shard,
                                      llvm::ArrayRef<float> values,
                                      float initScale, uint64_t seed) {
  const std::string &name = info.name();
  if (name.empty())
    return psError("a table needs a name");
  if (!serves(shard))
    return psError("shard " + llvm::Twine(shard) + " of table '" + name +
                   "' is not held by this server");
  if (llvm::Error e = setWorkers(info, info.workers()))
    return e;
  info.clear_shard_offsets();
  if (info.kind() == DENSE) {
    if (info.elements() < 0)
      return psError("dense table '" + name + "' has " +
                     llvm::Twine(info.elements()) + " elements");
    // Contiguous ranges of near-equal size, one per shard.
    for (int s = 0; s <= opts.numShards; ++s)
      info.add_shard_offsets(info.elements() * s / opts.numShards);
    int64_t range = info.shard_offsets(shard + 1) - info.shard_offsets(shard);
    if (static_cast<int64_t>(values.size()) != range)
      return psError("shard " + llvm::Twine(shard) + " of dense table '" +
                     name + "' holds " + llvm::Twine(range) + " values, not " +
                     llvm::Twine(values.size()));
  } else if (info.rows() < 1 || info.dim() < 1) {
    return psError("sparse table '" + name + "' needs rows and dim >= 1, not " +
                   llvm::Twine(info.rows()) + " x " + llvm::Twine(info.dim()));
  }

  std::unique_lock lock(tablesMutex);
  if (!opts.configured)
    return psError("table '" + name +
                   "' added before the server was configured");
  auto [it, added] = tables.try_emplace(name);
  if (added) {
    it->second = std::make_unique<Table>();
    it->second->info = info;
    it->second->dense.resize(info.kind() == DENSE ? opts.numShards : 0);
    it->second->sparse.resize(info.kind() == SPARSE ? opts.numShards : 0);
  }
  Table &table = *it->second;
  // The description is compared first: a table of the other kind has no
  // shard slots of this kind to look at.
  if (table.info.SerializeAsString() != info.SerializeAsString() ||
      (info.kind() == DENSE ? table.dense[shard] != nullptr
                            : table.sparse[shard] != nullptr))
    return psError("the parameter server already has a table '" + name + "'");
  if (info.kind() == DENSE) {
    Tensor slice(DType::F32, {static_cast<int64_t>(values.size())});
    if (!values.empty())
      std::memcpy(slice.rawData(), values.data(),
                  values.size() * sizeof(float));
    table.dense[shard] =
        std::make_unique<DenseShard>(table.info, std::move(slice), opts);
  } else {
    table.sparse[shard] =
        std::make_unique<SparseShard>(table.info, shard, initScale, seed, opts);
  }
  return llvm::Error::success();
}

llvm::Error ParameterServer::addDenseTable(const std::string &name,
                                           const Tensor &initial, int workers) {
  if (initial.dtype() != DType::F32 || !initial.isPlain())
    return psError("dense table '" + name + "' must be plain f32, not " +
                   initial.typeString());
  TableInfo info;
  info.set_name(name);
  info.set_kind(DENSE);
  info.set_elements(initial.numElements());
  info.set_workers(workers);
  const float *src = initial.data<float>();
  int64_t n = initial.numElements();
  for (int s = 0; s < opts.numShards; ++s)
    if (serves(s)) {
      int64_t begin = n * s / opts.numShards,
              end = n * (s + 1) / opts.numShards;
      if (llvm::Error e =
              addShard(info, s, llvm::ArrayRef(src + begin, src + end), 0, 0))
        return e;
    }
  return llvm::Error::success();
}

llvm::Error ParameterServer::addSparseTable(const std::string &name,
                                            int64_t rows, int64_t dim,
                                            float initScale, uint64_t seed,
                                            int workers) {
  TableInfo info;
  info.set_name(name);
  info.set_kind(SPARSE);
  info.set_rows(rows);
  info.set_dim(dim);
  info.set_workers(workers);
  for (int s = 0; s < opts.numShards; ++s)
    if (serves(s))
      if (llvm::Error e = addShard(info, s, {}, initScale, seed))
        return e;
  return llvm::Error::success();
}

/// `bytes` as `count` floats (empty allowed when `optional`), or an error.
static llvm::Expected<Tensor> floats(const std::string &bytes, int64_t count,
                                     bool optional, const std::string &table,
                                     const char *what) {
  if (optional && bytes.empty())
    return Tensor();
  if (static_cast<int64_t>(bytes.size()) != count * int64_t(sizeof(float)))
    return psError("table '" + table + "' holds " + llvm::Twine(count) +
                   " values in this shard, the state's " + what + " " +
                   llvm::Twine(bytes.size() / sizeof(float)));
  Tensor t(DType::F32, {count});
  if (!bytes.empty())
    std::memcpy(t.rawData(), bytes.data(), bytes.size());
  return t;
}

static void putFloats(const Tensor &t, std::string *out) {
  if (!t.isNull())
    out->assign(static_cast<const char *>(t.rawData()), t.bytes());
}

llvm::Error ParameterServer::save(const Table &table, int shard,
                                  ShardState &out) {
  out.Clear();
  const TableInfo &info = table.info;
  if (info.kind() == DENSE) {
    int64_t n = info.shard_offsets(shard + 1) - info.shard_offsets(shard);
    DenseTableState state;
    state.values = Tensor(DType::F32, {n});
    table.dense[shard]->save(state, 0);
    out.set_version(state.version);
    putFloats(state.values, out.mutable_values());
    putFloats(state.optimizer.first, out.mutable_first());
    putFloats(state.optimizer.second, out.mutable_second());
    out.set_optimizer_steps(state.optimizer.steps);
    return llvm::Error::success();
  }
  std::vector<int64_t> ids;
  std::vector<float> rows, accs;
  out.set_version(table.sparse[shard]->save(ids, rows, accs));
  out.mutable_ids()->Add(ids.begin(), ids.end());
  out.set_rows(reinterpret_cast<const char *>(rows.data()),
               rows.size() * sizeof(float));
  out.set_accumulators(reinterpret_cast<const char *>(accs.data()),
                       accs.size() * sizeof(float));
  return llvm::Error::success();
}

llvm::Error ParameterServer::restore(const Table &table, int shard,
                                     const ShardState &in) {
  const TableInfo &info = table.info;
  const std::string &name = info.name();
  if (info.kind() == DENSE) {
    int64_t n = info.shard_offsets(shard + 1) - info.shard_offsets(shard);
    DenseTableState state;
    auto values = floats(in.values(), n, false, name, "values");
    auto first = floats(in.first(), n, true, name, "first moments");
    auto second = floats(in.second(), n, true, name, "second moments");
    for (llvm::Expected<Tensor> *t : {&values, &first, &second})
      if (!*t)
        return t->takeError();
    state.values = std::move(*values);
    state.optimizer.first = std::move(*first);
    state.optimizer.second = std::move(*second);
    state.optimizer.steps = in.optimizer_steps();
    state.version = in.version();
    table.dense[shard]->restore(state, 0);
    return llvm::Error::success();
  }
  int64_t n = in.ids_size(), dim = info.dim();
  bool adagrad = opts.sparse.kind == SparseOptimizerOptions::Kind::Adagrad;
  // No stored rows: no accumulators either, whatever the optimizer.
  bool accumulators = !in.accumulators().empty();
  if (static_cast<int64_t>(in.rows().size()) !=
          n * dim * int64_t(sizeof(float)) ||
      (accumulators && in.accumulators().size() != in.rows().size()) ||
      (n > 0 && adagrad != accumulators))
    return psError("table '" + name + "' holds rows of " + llvm::Twine(dim) +
                   (adagrad ? " with" : " without") +
                   " Adagrad accumulators; the saved rows do not fit");
  std::vector<float> rows(n * dim), accs(accumulators ? n * dim : 0);
  if (n > 0)
    std::memcpy(rows.data(), in.rows().data(), in.rows().size());
  if (accumulators && n > 0)
    std::memcpy(accs.data(), in.accumulators().data(),
                in.accumulators().size());
  std::vector<const float *> rowPtrs, accPtrs;
  for (int64_t i = 0; i < n; ++i) {
    int64_t id = in.ids(i);
    if (id < 0 || id >= info.rows())
      return psError("table '" + name + "': saved row id " + llvm::Twine(id) +
                     " is outside [0, " + llvm::Twine(info.rows()) + ")");
    if (id % opts.numShards != shard)
      return psError("table '" + name + "': row " + llvm::Twine(id) +
                     " does not belong to shard " + llvm::Twine(shard));
    rowPtrs.push_back(rows.data() + i * dim);
    if (accumulators)
      accPtrs.push_back(accs.data() + i * dim);
  }
  table.sparse[shard]->restore(llvm::ArrayRef(in.ids().data(), in.ids().size()),
                               rowPtrs, accPtrs, in.version());
  return llvm::Error::success();
}

bool ParameterServer::holds(const Table &table, int shard) {
  return table.info.kind() == DENSE ? table.dense[shard] != nullptr
                                    : table.sparse[shard] != nullptr;
}

llvm::Expected<ShardCheckpoint> ParameterServer::saveShard(int shard) {
  if (!serves(shard))
    return psError("shard " + llvm::Twine(shard) +
                   " is not held by this server");
  ShardCheckpoint out;
  out.set_shard(shard);
  std::shared_lock lock(tablesMutex);
  for (const auto &[name, table] : tables) {
    if (!holds(*table, shard))
      continue;
    TableCheckpoint *t = out.add_tables();
    t->set_table(name);
    if (llvm::Error e = save(*table, shard, *t->mutable_state()))
      return std::move(e);
  }
  return out;
}

llvm::Error ParameterServer::restoreShard(const ShardCheckpoint &checkpoint) {
  int shard = checkpoint.shard();
  if (!serves(shard))
    return psError("the checkpoint is of shard " + llvm::Twine(shard) +
                   ", which this server does not hold");
  std::shared_lock lock(tablesMutex);
  size_t held = llvm::count_if(
      tables, [&](const auto &entry) { return holds(*entry.second, shard); });
  if (static_cast<size_t>(checkpoint.tables_size()) != held)
    return psError("the checkpoint holds " +
                   llvm::Twine(checkpoint.tables_size()) + " tables of shard " +
                   llvm::Twine(shard) + ", the server " + llvm::Twine(held));
  for (const TableCheckpoint &t : checkpoint.tables()) {
    auto it = tables.find(t.table());
    if (it == tables.end() || !holds(*it->second, shard))
      return psError("the checkpoint holds table '" + t.table() +
                     "', which shard " + llvm::Twine(shard) +
                     " here does not have");
    if (llvm::Error e = restore(*it->second, shard, t.state()))
      return e;
  }
  return llvm::Error::success();
}

int64_t ParameterServer::storedRows(const std::string &name) const {
  std::shared_lock lock(tablesMutex);
  auto it = tables.find(name);
  int64_t rows = 0;
  if (it != tables.end())
    for (const auto &shard : it->second->sparse)
      if (shard)
        rows += shard->storedRows();
  return rows;
}

llvm::Expected<ParameterServer::Table *>
ParameterServer::lookup(const std::string &name, int shard) {
  if (shard < 0 || shard >= opts.numShards)
    return psError("shard " + llvm::Twine(shard) + " does not exist (the " +
                   "server has " + llvm::Twine(opts.numShards) + ")");
  if (!serves(shard))
    return psError("shard " + llvm::Twine(shard) +
                   " is not held by this server");
  std::shared_lock lock(tablesMutex);
  auto it = tables.find(name);
  if (it == tables.end())
    return psError("the parameter server has no table '" + name + "'");
  Table *table = it->second.get();
  if (table->info.kind() == DENSE ? !table->dense[shard]
                                  : !table->sparse[shard])
    return psError("table '" + name + "' has no shard " + llvm::Twine(shard) +
                   " yet");
  return table;
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
  case Request::kFence:
    response.mutable_fence();
    return fence(request.fence().epoch());
  case Request::kConfigure:
    response.mutable_configure();
    return configure(request.configure().config());
  case Request::kAdd: {
    const AddTableRequest &add = request.add();
    const std::string &bytes = add.values();
    if (bytes.size() % sizeof(float))
      return psError("table '" + add.info().name() +
                     "': " + llvm::Twine(bytes.size()) +
                     " bytes of values is not a whole number of f32");
    // Copied out: the message's bytes need not be aligned for floats.
    std::vector<float> values(bytes.size() / sizeof(float));
    if (!bytes.empty())
      std::memcpy(values.data(), bytes.data(), bytes.size());
    response.mutable_add();
    return addShard(add.info(), request.shard(), values, add.init_scale(),
                    add.seed());
  }
  case Request::kSave: {
    llvm::Expected<Table *> table =
        lookup(request.save().table(), request.shard());
    if (!table)
      return table.takeError();
    return save(**table, request.shard(), *response.mutable_save());
  }
  case Request::kRestore: {
    llvm::Expected<Table *> table =
        lookup(request.restore().table(), request.shard());
    if (!table)
      return table.takeError();
    response.mutable_restore();
    return restore(**table, request.shard(), request.restore().state());
  }
  case Request::BODY_NOT_SET:
    break;
  }
  return psError("an empty request");
}

int64_t ParameterServer::epoch() const {
  std::shared_lock lock(epochMutex);
  return currentEpoch;
}

int64_t ParameterServer::replayedPushes() const { return ledger->replayed(); }

static llvm::Error fenced(int64_t theirs, int64_t ours) {
  return psError("fenced out: the request belongs to epoch " +
                 llvm::Twine(theirs) +
                 " of the job, which has moved on to "
                 "epoch " +
                 llvm::Twine(ours) + " (this process was given up for dead)");
}

llvm::Error ParameterServer::fence(int64_t epoch) {
  std::unique_lock lock(epochMutex);
  if (epoch < currentEpoch)
    return fenced(epoch, currentEpoch);
  currentEpoch = epoch;
  return llvm::Error::success();
}

/// A failure into `response`: one printable line (names in it come from
/// the caller, a process over the network, maybe a hostile one).
static void putError(llvm::Error e, Response &response) {
  response.clear_body();
  response.set_error(heterps::printableLine(llvm::toString(std::move(e))));
}

void ParameterServer::push(const Request &request, Response &response,
                           int64_t epoch) {
  std::shared_lock lock(epochMutex);
  if (epoch != kNoEpoch && epoch < currentEpoch)
    return putError(fenced(epoch, currentEpoch), response);
  ledger->once(request.push(), response, [&](Response &out) {
    if (llvm::Error e = serve(request, out))
      putError(std::move(e), out);
  });
}

void ParameterServer::handle(const Request &request, Response &response,
                             int64_t epoch) {
  // Not Clear(): a response of the same kind keeps its buffers, so pulls
  // into a reused response do not allocate (and page-fault) every time.
  response.clear_error();
  if (request.body_case() == Request::kPush)
    return push(request, response, epoch);
  if (request.body_case() != Request::kFence && epoch != kNoEpoch)
    if (int64_t ours = this->epoch(); epoch < ours)
      return putError(fenced(epoch, ours), response);
  if (llvm::Error e = serve(request, response))
    putError(std::move(e), response);
}
