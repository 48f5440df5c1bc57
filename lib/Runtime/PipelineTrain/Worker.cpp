//===- Worker.cpp - one replica of one pipeline stage ---------------------===//

#include "Worker.h"

#include "heterps/Runtime/Pipeline.h"
#include "heterps/Runtime/Plan.h"

#include "llvm/ADT/Twine.h"

using namespace heterps::runtime;
using namespace heterps::runtime::pipeline;
using Clock = TraceRecorder::Clock;

static double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

//===-- Worker ------------------------------------------------------------===//

PipelineTrainer::Worker::Worker(const PipelineTrainer &trainer,
                                const Layout &layout, int stage, int replica,
                                std::vector<Task> order)
    : trainer(trainer), layout(layout), stageIndex(stage), replica(replica),
      order(std::move(order)) {
  if (TraceRecorder *rec = trainer.options.trace)
    traceTrack = rec->addTrack("stage " + std::to_string(stage) + " replica " +
                               std::to_string(replica));
  thread = std::thread([this] {
    std::unique_lock lock(jobMutex);
    while (true) {
      jobChanged.wait(lock, [&] { return stopping || job; });
      if (!job)
        return;
      std::function<void()> run = std::move(job);
      job = nullptr;
      lock.unlock();
      run();
      lock.lock();
      busy = false;
      jobChanged.notify_all();
    }
  });
}

PipelineTrainer::Worker::~Worker() {
  {
    std::lock_guard lock(jobMutex);
    stopping = true;
  }
  jobChanged.notify_all();
  thread.join();
}

void PipelineTrainer::Worker::post(std::function<void()> work) {
  {
    std::lock_guard lock(jobMutex);
    job = std::move(work);
    busy = true;
  }
  jobChanged.notify_all();
}

void PipelineTrainer::Worker::join() {
  std::unique_lock lock(jobMutex);
  jobChanged.wait(lock, [&] { return !busy; });
}

llvm::Error PipelineTrainer::Worker::prepare(const WeightMap &all,
                                             ps::Transport &transport) {
  // The worker's own copies: pulls and running statistics write them.
  for (int32_t v : layout.weights[stageIndex])
    weights.emplace(v, all.at(v).clone());
  auto client = ps::PSClient::create(transport, replica);
  if (!client)
    return client.takeError();
  psClient = std::move(*client);
  const plan::Plan &plan = trainer.program;
  auto made = Devices::create(
      plan, train::trainingDevices(trainer.options.numThreads,
                                   trainer.options.emulateMissingDevices));
  if (!made)
    return made.takeError();
  devices = std::move(*made);
  if (llvm::Error e = devices->prepareTraining(train::TrainBackendOptions{
          trainer.options.numThreads, trainer.options.seed}))
    return e;
  for (int32_t v : layout.sparse[stageIndex])
    sparseSums.emplace(v, SparseGradSum(plan.values(v).dims(1)));
  // Gathers from sparse tables pull and push rows themselves.
  auto sparseLookup = [&](int op) -> std::unique_ptr<train::TrainKernel> {
    const plan::Op &o = plan.ops(op);
    auto sum =
        o.type() == "Gather" ? sparseSums.find(o.inputs(0)) : sparseSums.end();
    if (sum == sparseSums.end())
      return nullptr;
    return std::make_unique<SparseGatherKernel>(
        *psClient, plan.values(o.inputs(0)).name(),
        plan.values(o.inputs(0)).dims(1), sum->second, version);
  };
  auto [first, end] = stageRanges(plan)[stageIndex];
  int held = std::max(1, peakStash(order));
  for (int i = 0; i < held; ++i) {
    auto seq = train::OpSequence::create(plan, weights, first, end, *devices,
                                         sparseLookup);
    if (!seq)
      return seq.takeError();
    slots.push_back(std::move(*seq));
  }
  stash.resize(trainer.options.microBatches);
  for (int32_t v : layout.params[stageIndex])
    gradSums.emplace(v, Tensor(DType::F32, weights.at(v).shape()));
  return llvm::Error::success();
}

void PipelineTrainer::Worker::trace(std::string name, const char *category,
                                    Clock::time_point begin) {
  if (TraceRecorder *rec = trainer.options.trace)
    rec->record(traceTrack, std::move(name), category, begin, Clock::now());
}

std::optional<std::string>
PipelineTrainer::Worker::runStep(StepInputs &step, StageExchange &exchange,
                                 ReplicaStepStats &stats) {
  stats = ReplicaStepStats();
  stats.stage = stageIndex;
  stats.replica = replica;
  stats.stashSlots = static_cast<int>(slots.size());
  auto fail = [&](llvm::Error e) -> std::optional<std::string> {
    exchange.abort();
    return "stage " + std::to_string(stageIndex) + " replica " +
           std::to_string(replica) + ": " + llvm::toString(std::move(e));
  };
  devices->enterThread();
  version = step.version;

  Clock::time_point t = Clock::now();
  if (llvm::Error e = pull(step))
    return fail(std::move(e));
  stats.pull = secondsSince(t);
  trace("pull", "ps", t);

  for (auto &[v, sum] : gradSums)
    std::fill_n(sum.data<float>(), sum.numElements(), 0.f);
  for (auto &[v, sum] : sparseSums)
    sum.clear();
  // Kernel sets: a micro-batch takes a free one at its forward and gives
  // it back after its backward.
  std::vector<int> freeSlots, slotOf(trainer.options.microBatches, -1);
  for (int i = static_cast<int>(slots.size()) - 1; i >= 0; --i)
    freeSlots.push_back(i);
  bool first = true;
  for (const Task &task : order) {
    int j = task.microBatch;
    if (task.kind == Task::Forward) {
      slotOf[j] = freeSlots.back();
      freeSlots.pop_back();
    } else {
      freeSlots.push_back(slotOf[j]);
    }
    llvm::Expected<bool> ran = task.kind == Task::Forward
                                   ? forward(step, exchange, j, slotOf[j])
                                   : backward(step, exchange, j, slotOf[j]);
    if (!ran)
      return fail(ran.takeError());
    if (!*ran)
      return std::nullopt;
    if (first)
      stats.computeBegin =
          std::chrono::duration<double>(taskStart - step.start).count();
    first = false;
    // Busy from the input's arrival: waiting for it is pipeline bubble.
    double seconds = secondsSince(taskStart);
    bool fwd = task.kind == Task::Forward;
    (fwd ? stats.forward : stats.backward) += seconds;
    stats.microBatches += fwd;
    trace((fwd ? "F" : "B") + std::to_string(j), fwd ? "forward" : "backward",
          taskStart);
  }
  stats.computeEnd = secondsSince(step.start);

  t = Clock::now();
  if (llvm::Error e = push(step))
    return fail(std::move(e));
  stats.push = secondsSince(t);
  trace("push", "ps", t);
  return std::nullopt;
}

llvm::Error PipelineTrainer::Worker::pull(StepInputs &step) {
  std::vector<ps::PSClient::DenseOut> tables;
  for (int32_t v : layout.params[stageIndex])
    tables.push_back({trainer.program.values(v).name(), &weights.at(v)});
  if (tables.empty())
    return llvm::Error::success();
  return psClient->pullDenseNow(tables, step.version);
}

llvm::Error PipelineTrainer::Worker::push(StepInputs &step) {
  // Under BSP the server averages a table's n pushes (the stage's k
  // replicas, or all replicas of the stages that share it): n times each
  // replica's share makes the mean the whole batch's gradient. Under ASP
  // each push is an update of its own, scaled as the stage's whole batch.
  float k = static_cast<float>(trainer.options.replicas[stageIndex]);
  std::vector<ps::PSClient::DenseGrad> dense;
  for (auto &[v, sum] : gradSums) {
    auto [n, first] = layout.pushers(v, stageIndex, trainer.options.replicas);
    float scale = psClient->bsp() ? static_cast<float>(n) : k;
    if (scale != 1.f) {
      float *g = sum.data<float>();
      for (int64_t i = 0, e = sum.numElements(); i < e; ++i)
        g[i] *= scale;
    }
    dense.push_back({trainer.program.values(v).name(), &sum, first + replica});
  }
  // The sparse pushes go on the communication thread, the dense ones from
  // here after them.
  std::vector<ps::Ticket> tickets;
  for (auto &[v, sum] : sparseSums) {
    if (k != 1.f)
      sum.scale(k);
    tickets.push_back(psClient->pushSparse(trainer.program.values(v).name(),
                                           sum.ids(), sum.rows(), step.version,
                                           step.lr));
  }
  llvm::Error all = dense.empty()
                        ? llvm::Error::success()
                        : psClient->pushDenseNow(dense, step.version, step.lr);
  for (const ps::Ticket &ticket : tickets)
    all = llvm::joinErrors(std::move(all), psClient->wait(ticket));
  return all;
}

llvm::Expected<bool> PipelineTrainer::Worker::forward(StepInputs &step,
                                                      StageExchange &exchange,
                                                      int j, int slot) {
  const plan::Plan &plan = trainer.program;
  int last = trainer.numStages() - 1;
  std::vector<Tensor> values(plan.values_size());
  for (const auto &[v, t] : weights)
    values[v] = t;
  if (stageIndex == 0) {
    values[plan.inputs(0).value()] = step.inputs[j];
  } else {
    auto in = exchange.take(StageExchange::Forward, stageIndex - 1, j);
    if (!in)
      return false;
    for (auto [i, v] : llvm::enumerate(layout.live[stageIndex - 1]))
      values[v] = std::move((*in)[i]);
  }
  taskStart = Clock::now();
  // Masks depend on the step and the micro-batch, not on the replica.
  const train::OpSequence &ops = slots[slot];
  for (int i = ops.begin(); i < ops.end(); ++i)
    ops.kernel(i).setRandomDraws(step.version * trainer.options.microBatches +
                                 j);
  if (llvm::Error e = ops.forward(values))
    return std::move(e);

  if (stageIndex == last) {
    llvm::Expected<Tensor> out = values[plan.outputs(0).value()].toPlain();
    if (!out)
      return out.takeError();
    auto loss = train::computeLoss(trainer.options.loss, *out, step.targets[j]);
    if (!loss)
      return loss.takeError();
    // Weighted so that the micro-batches' gradients sum to the batch's.
    float weight = float(step.sizes[j]) / float(step.batch);
    float *g = loss->grad.data<float>();
    for (int64_t i = 0, n = loss->grad.numElements(); i < n; ++i)
      g[i] *= weight;
    step.losses[j] = std::move(*loss);
  } else {
    std::vector<Tensor> out;
    for (int32_t v : layout.live[stageIndex])
      out.push_back(values[v]);
    exchange.put(StageExchange::Forward, stageIndex, j, std::move(out));
  }
  stash[j] = std::move(values);
  return true;
}

llvm::Expected<bool> PipelineTrainer::Worker::backward(StepInputs &step,
                                                       StageExchange &exchange,
                                                       int j, int slot) {
  const plan::Plan &plan = trainer.program;
  int last = trainer.numStages() - 1;
  std::vector<Tensor> values = std::move(stash[j]);
  std::vector<Tensor> grads(plan.values_size());
  if (stageIndex == last) {
    grads[plan.outputs(0).value()] = std::move(step.losses[j].grad);
  } else {
    auto in = exchange.take(StageExchange::Backward, stageIndex, j);
    if (!in)
      return false;
    for (auto [i, v] : llvm::enumerate(layout.live[stageIndex]))
      grads[v] = std::move((*in)[i]);
  }
  taskStart = Clock::now();
  if (llvm::Error e =
          slots[slot].backward(values, grads, trainer.paths.requiresGrad))
    return std::move(e);
  for (auto &[v, sum] : gradSums) {
    if (grads[v].isNull())
      continue;
    llvm::Expected<Tensor> g = grads[v].toPlain();
    if (!g)
      return g.takeError();
    float *dst = sum.data<float>();
    const float *src = g->data<float>();
    for (int64_t i = 0, n = sum.numElements(); i < n; ++i)
      dst[i] += src[i];
  }
  if (stageIndex > 0) {
    std::vector<Tensor> out;
    for (int32_t v : layout.live[stageIndex - 1])
      out.push_back(std::move(grads[v]));
    exchange.put(StageExchange::Backward, stageIndex - 1, j, std::move(out));
  }
  return true;
}
