//===- PipelineTrainer.cpp - pipelined training through the PS ------------===//

#include "heterps/Runtime/PipelineTrain/PipelineTrainer.h"

#include "Worker.h"

#include "heterps/Runtime/Pipeline.h"
#include "heterps/Runtime/Plan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <cstring>
#include <set>
#include <thread>

using namespace heterps::runtime;
using namespace heterps::runtime::pipeline;

static llvm::Error pipelineError(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

double PipelineStepStats::bubbleFraction() const {
  double begin = 0, end = 0, busy = 0;
  for (size_t i = 0; i < replicas.size(); ++i) {
    const ReplicaStepStats &r = replicas[i];
    begin = i ? std::min(begin, r.computeBegin) : r.computeBegin;
    end = std::max(end, r.computeEnd);
    busy += r.forward + r.backward;
  }
  double span = (end - begin) * static_cast<double>(replicas.size());
  return span > 0 ? 1 - busy / span : 0;
}

PipelineTrainer::PipelineTrainer(plan::Plan plan,
                                 PipelineTrainerOptions options)
    : program(std::move(plan)), options(std::move(options)) {
  if (this->options.exchange)
    exchange = this->options.exchange;
}

ReplicaRunner::~ReplicaRunner() = default;

PipelineTrainer::~PipelineTrainer() = default;

llvm::Expected<std::unique_ptr<PipelineTrainer>>
PipelineTrainer::create(const plan::Plan &plan, WeightMap weights,
                        PipelineTrainerOptions options) {
  std::unique_ptr<PipelineTrainer> trainer(
      new PipelineTrainer(plan, std::move(options)));
  if (llvm::Error e = trainer->prepare(std::move(weights)))
    return std::move(e);
  return std::move(trainer);
}

PipelineTrainer::Worker *PipelineTrainer::find(ReplicaId id) const {
  for (const auto &w : workers)
    if (w->stage() == id.stage && w->replicaIndex() == id.replica)
      return w.get();
  return nullptr;
}

PipelineTrainer::Worker &PipelineTrainer::leader(int s) const {
  return *find({s, 0});
}

/// Which values cross each boundary and which weights and parameters each
/// stage reads; an error for a sparse table read by two stages (its rows'
/// gradients would have two owners).
static llvm::Expected<PipelineTrainer::Layout>
layoutStages(const plan::Plan &plan, const WeightMap &weights,
             const std::set<int32_t> &sparse,
             const train::GradientPaths &paths) {
  std::vector<std::pair<int, int>> ranges = stageRanges(plan);
  int p = static_cast<int>(ranges.size());
  std::vector<int> defined(plan.values_size(), -1),
      lastUse(plan.values_size(), -1);
  PipelineTrainer::Layout layout;
  layout.weights.resize(p);
  layout.params.resize(p);
  layout.sparse.resize(p);
  std::vector<std::set<int32_t>> readers(plan.values_size());
  for (int s = 0; s < p; ++s)
    for (int i = ranges[s].first; i < ranges[s].second; ++i) {
      const plan::Op &op = plan.ops(i);
      for (int32_t in : op.inputs())
        if (in >= 0) {
          lastUse[in] = std::max(lastUse[in], s);
          readers[in].insert(s);
        }
      for (int32_t out : op.outputs())
        defined[out] = s;
    }
  // The loss reads the graph output on the last stage.
  lastUse[plan.outputs(0).value()] = p - 1;
  layout.live.resize(std::max(p - 1, 0));
  for (int32_t v = 0; v < plan.values_size(); ++v) {
    if (sparse.count(v))
      continue;
    if (weights.count(v)) {
      for (int s : readers[v])
        layout.weights[s].push_back(v);
      continue;
    }
    for (int b = std::max(defined[v], 0); b < lastUse[v] && b < p - 1; ++b)
      layout.live[b].push_back(v);
  }
  for (int32_t v : paths.paramValues) {
    const std::set<int> &stages = readers[v];
    if (!sparse.count(v)) {
      for (int s : stages)
        layout.params[s].push_back(v);
      if (stages.size() > 1)
        layout.sharedBy[v].assign(stages.begin(), stages.end());
      continue;
    }
    if (stages.size() > 1)
      return pipelineError("sparse table '" + plan.values(v).name() +
                           "' is read by stages " +
                           llvm::Twine(*stages.begin()) + " and " +
                           llvm::Twine(*stages.rbegin()) +
                           "; a sparse table must belong to one stage");
    layout.sparse[*stages.begin()].push_back(v);
  }
  return layout;
}

std::pair<int, int>
PipelineTrainer::Layout::pushers(int32_t v, int stage,
                                 llvm::ArrayRef<int> replicas) const {
  auto shared = sharedBy.find(v);
  if (shared == sharedBy.end())
    return {replicas[stage], 0};
  int all = 0, first = 0;
  for (int s : shared->second) {
    if (s == stage)
      first = all;
    all += replicas[s];
  }
  return {all, first};
}

llvm::Error PipelineTrainer::createTables(const WeightMap &weights,
                                          llvm::ArrayRef<int> only) {
  int p = numStages();
  if (!admin) {
    // Through the server's messages, wherever it is.
    auto client = ps::PSClient::create(*transport, 0);
    if (!client)
      return client.takeError();
    admin = std::move(*client);
  }
  if (admin->numShards() != options.serverShards)
    return pipelineError(
        "the parameter server has " + llvm::Twine(admin->numShards()) +
        " shards, the job asks for " + llvm::Twine(options.serverShards));
  if (llvm::Error e = admin->configure(serverConfig))
    return e;
  std::set<int32_t> added;
  for (int s = 0; s < p; ++s)
    for (int32_t v : layout->params[s])
      if (added.insert(v).second)
        if (llvm::Error e = admin->addDenseTable(
                program.values(v).name(), weights.at(v),
                layout->pushers(v, s, options.replicas).first, only))
          return e;
  for (int s = 0; s < p; ++s)
    for (int32_t v : layout->sparse[s]) {
      const plan::Value &table = program.values(v);
      if (llvm::Error e = admin->addSparseTable(
              table.name(), table.dims(0), table.dims(1),
              options.sparseInitScale, options.seed, options.replicas[s], only))
        return e;
    }

  return llvm::Error::success();
}

llvm::Error PipelineTrainer::prepare(WeightMap weights) {
  if (llvm::Error e = train::checkTrainingPlan(program))
    return e;
  train::separateRunningStatistics(program, weights);
  auto devices = Devices::create(
      program, train::trainingDevices(options.numThreads,
                                      options.emulateMissingDevices));
  if (!devices)
    return devices.takeError();
  (*devices)->rewriteForTraining(program, weights);
  if (llvm::Error e = (*devices)->prepareTraining(
          train::TrainBackendOptions{options.numThreads, options.seed}))
    return e;
  if (options.microBatches < 1)
    return pipelineError("--micro-batches must be at least 1, not " +
                         llvm::Twine(options.microBatches));
  int p = static_cast<int>(stageRanges(program).size());
  if (options.replicas.empty())
    for (int s = 0; s < p; ++s)
      options.replicas.push_back(s < program.stages_size()
                                     ? std::max(1, program.stages(s).replicas())
                                     : 1);
  if (static_cast<int>(options.replicas.size()) != p)
    return pipelineError("--replicas gives " +
                         llvm::Twine(options.replicas.size()) +
                         " counts for a plan of " + llvm::Twine(p) + " stages");
  int64_t allReplicas = 0;
  for (int k : options.replicas) {
    if (k < 1)
      return pipelineError("a stage needs at least one replica, not " +
                           llvm::Twine(k));
    allReplicas += k;
  }
  if (allReplicas > PipelineTrainerOptions::kMaxReplicas)
    return pipelineError("the stages have " + llvm::Twine(allReplicas) +
                         " replicas in all; one process runs at most " +
                         llvm::Twine(PipelineTrainerOptions::kMaxReplicas));
  if (options.numThreads == 0) {
    int workers = 0;
    for (int k : options.replicas)
      workers += k;
    int cores = static_cast<int>(std::thread::hardware_concurrency());
    options.numThreads = std::max(1, cores / std::max(workers, 1));
  }

  // Where gradients flow, from a set of kernels of the whole plan.
  {
    auto all = train::OpSequence::create(program, weights, 0,
                                         program.ops_size(), **devices);
    if (!all)
      return all.takeError();
    auto found = train::findGradientPaths(
        program, weights,
        [&](int i) -> const train::TrainKernel & { return all->kernel(i); },
        options.frozen);
    if (!found)
      return found.takeError();
    paths = std::move(*found);
  }
  // Gather tables the caller did not load are served sparsely.
  std::set<int32_t> sparse, tables = gatherTables(program, 0);
  for (const plan::Weight &w : program.weights())
    if (!weights.count(w.value())) {
      const std::string &name = program.values(w.value()).name();
      if (!tables.count(w.value()))
        return pipelineError("weight '" + name +
                             "' is missing (only Gather tables may be left "
                             "to the parameter server)");
      if (!llvm::is_contained(paths.paramValues, w.value()))
        return pipelineError("table '" + name +
                             "' is frozen, so the parameter server cannot "
                             "serve it: load it");
      sparse.insert(w.value());
    }
  if (!sparse.empty())
    for (const plan::Op &op : program.ops())
      if (op.type() == "Dropout" || op.type() == "BatchNormalization")
        return pipelineError(
            "a model with sparse tables is evaluated with its training "
            "kernels, so it cannot have " +
            op.type() + " ('" + op.name() + "') yet");
  sparseTables.assign(sparse.begin(), sparse.end());
  auto stageLayout = layoutStages(program, weights, sparse, paths);
  if (!stageLayout)
    return stageLayout.takeError();
  layout = std::make_unique<Layout>(std::move(*stageLayout));

  ps::ServerOptions serverOptions;
  serverOptions.numShards = options.serverShards;
  serverOptions.consistency = options.consistency;
  serverOptions.dense = options.optimizer;
  serverOptions.sparse = options.sparseOptimizer;
  serverOptions.job = options.job;
  transport = options.remoteServer;
  if (!transport) {
    auto created = ps::ParameterServer::create(serverOptions);
    if (!created)
      return created.takeError();
    server = std::move(*created);
    inProcess = std::make_unique<ps::InProcessTransport>(*server);
    transport = inProcess.get();
  }
  serverConfig = ps::toConfig(serverOptions);
  if (options.localReplicas.empty())
    if (llvm::Error e = createTables(weights))
      return e;

  auto orders =
      replicaOrders(options.schedule, options.microBatches, options.replicas);
  for (int s = 0; s < p; ++s)
    for (int r = 0; r < options.replicas[s]; ++r) {
      ReplicaId id{s, r};
      bool here = options.runner ? r == 0
                  : options.localReplicas.empty()
                      ? true
                      : llvm::is_contained(options.localReplicas, id);
      if (!here)
        continue;
      workers.push_back(
          std::make_unique<Worker>(*this, *layout, s, r, orders[s][r]));
      if (llvm::Error e = workers.back()->prepare(weights, *transport))
        return e;
    }
  for (auto &[v, t] : weights)
    if (llvm::none_of(layout->weights, [&](const std::vector<int32_t> &read) {
          return llvm::is_contained(read, v);
        }))
      unread.emplace(v, std::move(t));
  return llvm::Error::success();
}

PipelineTrainerOptions
PipelineTrainerOptions::from(const train::TrainerOptions &trainer) {
  PipelineTrainerOptions o;
  o.numThreads = trainer.numThreads;
  o.seed = trainer.seed;
  o.emulateMissingDevices = trainer.emulateMissingDevices;
  o.loss = trainer.loss;
  o.optimizer = trainer.optimizer;
  o.frozen = trainer.frozen;
  return o;
}

llvm::Error PipelineTrainer::checkData(const data::Dataset &data) const {
  return train::checkTrainingData(program, options.loss, data);
}

llvm::Expected<train::LossResult>
PipelineTrainer::step(const Tensor &inputs, const Tensor &targets, float lr) {
  if (broken)
    return pipelineError("an earlier step failed; the pipeline's replicas no "
                         "longer agree with the parameter server");
  int m = options.microBatches;
  int64_t batch = inputs.dim(0);
  if (batch < m)
    return pipelineError("a batch of " + llvm::Twine(batch) +
                         " samples cannot be cut into " + llvm::Twine(m) +
                         " micro-batches");
  StepInputs in;
  in.version = steps;
  in.lr = lr;
  in.batch = batch;
  in.losses.resize(m);
  for (int64_t j = 0, begin = 0; j < m; ++j) {
    int64_t size = batch / m + (j < batch % m);
    in.sizes.push_back(size);
    in.inputs.push_back(data::sampleRows(inputs, begin, size));
    in.targets.push_back(data::sampleRows(targets, begin, size));
    begin += size;
  }
  stats.replicas.clear();
  exchange->begin(steps);
  in.start = TraceRecorder::Clock::now();
  if (options.trace)
    options.trace->markStep(in.start);
  llvm::Error failed = options.runner
                           ? options.runner->runStep(in, stats.replicas)
                           : runWorkers(in, stats.replicas);
  stats.seconds =
      std::chrono::duration<double>(TraceRecorder::Clock::now() - in.start)
          .count();
  if (failed) {
    broken = true;
    return std::move(failed);
  }
  ++steps;

  train::LossResult result;
  for (int j = 0; j < m; ++j) {
    result.loss += in.losses[j].loss * double(in.sizes[j]) / double(batch);
    result.correct += in.losses[j].correct;
    result.judged += in.losses[j].judged;
  }
  return result;
}

llvm::Error PipelineTrainer::runWorkers(StepInputs &in,
                                        std::vector<ReplicaStepStats> &out) {
  out.assign(workers.size(), ReplicaStepStats());
  std::vector<std::optional<std::string>> errors(workers.size());
  for (size_t w = 0; w < workers.size(); ++w)
    workers[w]->post(
        [&, w] { errors[w] = workers[w]->runStep(in, *exchange, out[w]); });
  for (auto &worker : workers)
    worker->join();
  for (auto &error : errors)
    if (error)
      return pipelineError(*error);
  return llvm::Error::success();
}

llvm::Error PipelineTrainer::runLocal(StepInputs &step,
                                      std::vector<ReplicaStepStats> &out) {
  if (options.localReplicas.empty())
    return pipelineError("runLocal is for a worker process's replicas");
  exchange->begin(step.version);
  step.start = TraceRecorder::Clock::now();
  return runWorkers(step, out);
}

llvm::Expected<WeightMap> PipelineTrainer::localWeights(ReplicaId id) {
  Worker *worker = find(id);
  if (!worker)
    return pipelineError("stage " + llvm::Twine(id.stage) + " replica " +
                         llvm::Twine(id.replica) + " is not in this process");
  WeightMap out;
  for (const auto &[v, t] : worker->localWeights())
    out.emplace(v, t.clone());
  return out;
}

void PipelineTrainer::setLocalWeights(const WeightMap &weights) {
  for (auto &worker : workers)
    for (auto &[v, t] : worker->localWeights()) {
      auto it = weights.find(v);
      if (it != weights.end() && it->second.bytes() == t.bytes())
        std::memcpy(t.rawData(), it->second.rawData(), t.bytes());
    }
}

llvm::Expected<WeightMap> PipelineTrainer::weights() {
  WeightMap out;
  for (const auto &[v, t] : unread)
    out.emplace(v, t.clone());
  std::set<int32_t> pulled;
  for (int s = 0; s < numStages(); ++s) {
    Worker &worker = leader(s);
    if (options.runner) {
      // The running statistics are those of the replica's own process.
      auto remote = options.runner->stageWeights(s);
      if (!remote)
        return remote.takeError();
      for (auto &[v, t] : *remote)
        out.emplace(v, std::move(t));
    } else {
      for (const auto &[v, t] : worker.localWeights())
        out.emplace(v, t.clone());
    }
    for (int32_t v : layout->params[s]) {
      if (!pulled.insert(v).second)
        continue;
      ps::PSClient &client = worker.client();
      ps::Ticket ticket =
          client.pullDense(program.values(v).name(), out.at(v), steps);
      if (llvm::Error e = client.wait(ticket))
        return std::move(e);
    }
  }
  return out;
}

llvm::Expected<train::EvalResult>
PipelineTrainer::evaluate(const data::Dataset &data, int64_t batchSize) {
  auto current = weights();
  if (!current)
    return current.takeError();
  if (sparseTables.empty())
    return train::evaluateModel(program, *current, options.loss, data,
                                batchSize, options.numThreads);
  // No executor can hold a sparse table: run each stage's first kernel set
  // forward here, the lookups pulling the rows they need.
  for (int s = 0; s < numStages(); ++s)
    leader(s).setVersion(steps);
  train::EvalResult result;
  std::vector<float> scores, labels;
  double lossSum = 0;
  for (int64_t begin = 0, n = data.size(); begin < n; begin += batchSize) {
    int64_t count = std::min(batchSize, n - begin);
    std::vector<Tensor> values(program.values_size());
    for (const auto &[v, t] : *current)
      values[v] = t;
    values[program.inputs(0).value()] =
        data::sampleRows(data.inputs, begin, count);
    for (int s = 0; s < numStages(); ++s)
      if (llvm::Error e = leader(s).kernels().forward(values))
        return std::move(e);
    auto out = values[program.outputs(0).value()].toPlain();
    if (!out)
      return out.takeError();
    Tensor targets = data::sampleRows(data.targets, begin, count);
    auto loss = train::computeLoss(options.loss, *out, targets);
    if (!loss)
      return loss.takeError();
    lossSum += loss->loss * count;
    result.correct += loss->correct;
    result.judged += loss->judged;
    train::collectScores(options.loss, *out, targets, scores, labels);
  }
  result.loss = data.size() ? lossSum / data.size() : 0;
  result.auc = train::rocAuc(scores, labels);
  return result;
}

int64_t PipelineTrainer::storedSparseRows() const {
  if (!server)
    return -1;
  int64_t rows = 0;
  for (int32_t v : sparseTables)
    rows += server->storedRows(program.values(v).name());
  return rows;
}

std::set<int32_t>
heterps::runtime::pipeline::gatherTables(const plan::Plan &plan,
                                         int64_t minRows) {
  std::set<int32_t> weights, tables, disqualified;
  for (const plan::Weight &w : plan.weights())
    if (w.source_case() == plan::Weight::kInitializer)
      weights.insert(w.value());
  for (const plan::Op &op : plan.ops())
    for (auto [i, in] : llvm::enumerate(op.inputs())) {
      if (!weights.count(in))
        continue;
      bool lookup = op.type() == "Gather" && i == 0;
      for (const plan::Attribute &a : op.attributes())
        if (a.name() == "axis" && a.i() != 0)
          lookup = false;
      (lookup ? tables : disqualified).insert(in);
    }
  std::set<int32_t> out;
  for (int32_t v : tables) {
    const plan::Value &value = plan.values(v);
    if (!disqualified.count(v) && value.dtype() == plan::FLOAT &&
        value.dims_size() == 2 && value.dims(0) >= minRows)
      out.insert(v);
  }
  return out;
}

CheckpointStore::~CheckpointStore() = default;

llvm::Expected<train::Trainer::State> PipelineTrainer::state() {
  if (!admin)
    return pipelineError("a worker process holds no checkpoint");
  train::Trainer::State s;
  s.randomDraws.assign(program.ops_size(), steps * options.microBatches);
  if (options.checkpoints) {
    auto parts = options.checkpoints->save(steps);
    if (!parts)
      return parts.takeError();
    s.parts = std::move(*parts);
    s.partsStep = steps;
    return s;
  }
  for (int32_t v : sparseTables) {
    auto rows = admin->saveSparse(program.values(v).name());
    if (!rows)
      return rows.takeError();
    s.sparse[v] = std::move(*rows);
  }
  auto current = weights();
  if (!current)
    return current.takeError();
  s.weights = std::move(*current);
  for (int32_t v : paths.paramValues) {
    if (llvm::is_contained(sparseTables, v))
      continue;
    auto saved = admin->saveDense(program.values(v).name());
    if (!saved)
      return saved.takeError();
    train::Optimizer::State &slot = saved->optimizer;
    if (slot.steps == 0)
      continue;
    // The server keeps tables flat; the optimizer's moments have the
    // parameter's shape.
    const Shape &shape = s.weights.at(v).shape();
    for (Tensor *moment : {&slot.first, &slot.second})
      if (!moment->isNull())
        *moment = moment->reshaped(shape);
    s.optimizer[v] = std::move(slot);
  }
  return s;
}

JobRecovery::~JobRecovery() = default;

llvm::Error PipelineTrainer::recover(llvm::Error failure) {
  if (!options.recovery)
    return failure;
  broken = true;
  std::string why = llvm::toString(std::move(failure));
  auto remake = [&](const std::vector<int> &shards) -> llvm::Error {
    if (shards.empty())
      return llvm::Error::success();
    // Their values do not matter: a checkpoint is restored next.
    WeightMap zeros;
    for (int s = 0; s < numStages(); ++s)
      for (int32_t v : layout->params[s]) {
        const plan::Value &value = program.values(v);
        Tensor t(DType::F32, {value.dims().begin(), value.dims().end()});
        std::memset(t.rawData(), 0, t.bytes());
        zeros.emplace(v, std::move(t));
      }
    return createTables(zeros, shards);
  };
  if (llvm::Error e = options.recovery->recover(why, remake))
    return e;
  // The restarted shards are at version 0 until the checkpoint is
  // restored: what restore() reads first must not wait for a later one.
  steps = 0;
  return llvm::Error::success();
}

llvm::Error PipelineTrainer::restore(train::Trainer::State s,
                                     int64_t stepsDone) {
  if (!admin)
    return pipelineError("a worker process restores no checkpoint");
  if (!s.parts.empty()) {
    if (!options.checkpoints)
      return pipelineError("the checkpoint was written by the processes of "
                           "a distributed job: only such a job resumes it");
    if (s.partsStep != stepsDone)
      return pipelineError("the checkpoint's parts are of step " +
                           llvm::Twine(s.partsStep) + ", not " +
                           llvm::Twine(stepsDone));
    if (llvm::Error e = options.checkpoints->load(s.partsStep, s.parts))
      return e;
    steps = stepsDone;
    broken = false;
    return llvm::Error::success();
  }
  auto current = weights();
  if (!current)
    return current.takeError();
  if (s.weights.size() != current->size())
    return pipelineError("the state has " + llvm::Twine(s.weights.size()) +
                         " weights, the plan " + llvm::Twine(current->size()));
  for (const auto &[v, t] : s.weights) {
    auto it = current->find(v);
    if (it == current->end() || it->second.shape() != t.shape() ||
        it->second.dtype() != t.dtype())
      return pipelineError("value '" + program.values(v).name() +
                           "' does not fit the plan's weights");
  }
  for (int32_t v : sparseTables)
    if (!s.sparse.count(v))
      return pipelineError("the state has no rows for sparse table '" +
                           program.values(v).name() + "'");
  for (const auto &entry : s.sparse)
    if (!llvm::is_contained(sparseTables, entry.first))
      return pipelineError("'" + program.values(entry.first).name() +
                           "' is a sparse table there, not here");
  for (auto &[v, rows] : s.sparse) {
    rows.version = stepsDone;
    if (llvm::Error e = admin->restoreSparse(program.values(v).name(), rows))
      return e;
  }
  for (int32_t v : paths.paramValues) {
    if (llvm::is_contained(sparseTables, v))
      continue;
    ps::DenseTableState table;
    const Tensor &w = s.weights.at(v);
    table.values = w.reshaped({w.numElements()});
    auto slot = s.optimizer.find(v);
    if (slot != s.optimizer.end())
      table.optimizer = slot->second;
    table.version = stepsDone;
    if (llvm::Error e = admin->restoreDense(program.values(v).name(), table))
      return e;
  }
  // Every replica's copies: running statistics, and the parameters until
  // the next pull.
  setLocalWeights(s.weights);
  if (options.runner)
    if (llvm::Error e = options.runner->setWeights(s.weights))
      return e;
  for (auto &[v, t] : unread)
    t = s.weights.at(v);
  steps = stepsDone;
  broken = false;
  return llvm::Error::success();
}
