//===- Pipeline.cpp - a plan's stages as a pipeline over batches ----------===//

#include "heterps/Runtime/Pipeline.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

using namespace heterps::runtime;

namespace {

/// A FIFO of at most `capacity` items; close() wakes every waiter, after
/// which push() refuses and pop() drains what is left.
template <typename T> class BoundedQueue {
public:
  explicit BoundedQueue(size_t capacity)
      : capacity(std::max<size_t>(1, capacity)) {}

  bool push(T item) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return closed || items.size() < capacity; });
    if (closed)
      return false;
    items.push_back(std::move(item));
    changed.notify_all();
    return true;
  }
  std::optional<T> pop() {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return closed || !items.empty(); });
    if (items.empty())
      return std::nullopt;
    T item = std::move(items.front());
    items.pop_front();
    changed.notify_all();
    return item;
  }
  void close() {
    std::lock_guard<std::mutex> lock(mutex);
    closed = true;
    changed.notify_all();
  }

private:
  size_t capacity;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<T> items;
  bool closed = false;
};

/// A batch on its way: the values later stages or the outputs still need.
struct Item {
  size_t index;
  std::map<int32_t, Tensor> env;
};

} // namespace

struct PipelineExecutor::Stage {
  int firstOp, endOp;
  std::vector<int32_t> inputIds, outputIds;
  /// Values no stage after this one nor the graph outputs need.
  std::vector<int32_t> dropAfter;
  std::vector<std::unique_ptr<Executor>> replicas;
};

std::vector<std::pair<int, int>>
heterps::runtime::stageRanges(const plan::Plan &plan) {
  std::vector<std::pair<int, int>> ranges;
  for (int i = 0; i < plan.ops_size(); ++i)
    if (ranges.empty() || plan.ops(i).stage() != plan.ops(i - 1).stage())
      ranges.push_back({i, i + 1});
    else
      ranges.back().second = i + 1;
  return ranges;
}

static llvm::Error pipelineError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<std::unique_ptr<PipelineExecutor>>
PipelineExecutor::create(const plan::Plan &plan, PipelineOptions options) {
  std::unique_ptr<PipelineExecutor> pipeline(new PipelineExecutor());
  pipeline->program = plan;
  pipeline->options = options;
  std::set<int32_t> weights;
  for (const plan::Weight &w : plan.weights())
    weights.insert(w.value());
  std::vector<std::pair<int, int>> ranges = stageRanges(plan);
  if (!options.replicas.empty() && options.replicas.size() != ranges.size())
    return pipelineError(
        "replicas given for " + llvm::Twine(options.replicas.size()) +
        " stages, but the plan has " + llvm::Twine(ranges.size()));

  // needLater[s]: values that ops from stage s on, or the graph outputs, read.
  std::vector<std::set<int32_t>> needLater(ranges.size() + 1);
  for (const plan::Binding &b : plan.outputs())
    needLater[ranges.size()].insert(b.value());
  for (size_t s = ranges.size(); s-- > 0;) {
    needLater[s] = needLater[s + 1];
    for (int i = ranges[s].first; i < ranges[s].second; ++i)
      for (int32_t v : plan.ops(i).inputs())
        if (v >= 0 && !weights.count(v))
          needLater[s].insert(v);
  }

  for (size_t s = 0; s < ranges.size(); ++s) {
    auto stage = std::make_unique<Stage>();
    stage->firstOp = ranges[s].first;
    stage->endOp = ranges[s].second;
    std::set<int32_t> produced, consumed, usedWeights;
    for (int i = stage->firstOp; i < stage->endOp; ++i) {
      for (int32_t v : plan.ops(i).inputs())
        if (v >= 0)
          (weights.count(v) ? usedWeights : consumed).insert(v);
      for (int32_t v : plan.ops(i).outputs())
        produced.insert(v);
    }
    plan::Plan sub;
    sub.set_version(plan.version());
    sub.set_model_path(plan.model_path());
    *sub.mutable_values() = plan.values();
    *sub.mutable_device_types() = plan.device_types();
    for (int32_t v : consumed)
      if (!produced.count(v)) {
        stage->inputIds.push_back(v);
        plan::Binding *b = sub.add_inputs();
        b->set_name(plan.values(v).name());
        b->set_value(v);
      }
    for (int32_t v : produced)
      if (needLater[s + 1].count(v)) {
        stage->outputIds.push_back(v);
        plan::Binding *b = sub.add_outputs();
        b->set_name(plan.values(v).name());
        b->set_value(v);
      }
    for (int32_t v : needLater[s])
      if (!needLater[s + 1].count(v))
        stage->dropAfter.push_back(v);
    for (const plan::Weight &w : plan.weights())
      if (usedWeights.count(w.value()))
        *sub.add_weights() = w;
    for (int i = stage->firstOp; i < stage->endOp; ++i)
      *sub.add_ops() = plan.ops(i);
    int stageIndex = plan.ops(stage->firstOp).stage();
    int replicas = !options.replicas.empty() ? options.replicas[s]
                   : stageIndex >= 0 && stageIndex < plan.stages_size()
                       ? plan.stages(stageIndex).replicas()
                       : 1;
    for (int r = 0; r < std::max(1, replicas); ++r) {
      auto executor = Executor::create(sub, options.executor);
      if (!executor)
        return pipelineError("stage " + llvm::Twine(s) + ": " +
                             llvm::toString(executor.takeError()));
      stage->replicas.push_back(std::move(*executor));
    }
    pipeline->stages.push_back(std::move(stage));
  }
  return std::move(pipeline);
}

PipelineExecutor::~PipelineExecutor() = default;

llvm::Expected<std::vector<std::vector<Tensor>>>
PipelineExecutor::run(const std::vector<std::vector<Tensor>> &stream) {
  for (size_t i = 0; i < stream.size(); ++i)
    if (static_cast<int>(stream[i].size()) != program.inputs_size())
      return pipelineError(
          "batch " + llvm::Twine(i) + " has " + llvm::Twine(stream[i].size()) +
          " inputs, the plan takes " + llvm::Twine(program.inputs_size()));
  size_t numStages = stages.size();
  std::vector<std::unique_ptr<BoundedQueue<Item>>> queues;
  for (size_t s = 0; s < numStages; ++s)
    queues.push_back(std::make_unique<BoundedQueue<Item>>(
        static_cast<size_t>(options.queueCapacity)));
  std::vector<std::vector<Tensor>> results(stream.size());

  std::mutex mutex; // guards firstError and the stage figures
  std::string firstError;
  auto fail = [&](const std::string &message) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (firstError.empty())
        firstError = message;
    }
    for (auto &q : queues)
      q->close();
  };
  lastStats.assign(numStages, StageStats());
  std::vector<int> live(numStages);

  std::vector<std::thread> workers;
  for (size_t s = 0; s < numStages; ++s) {
    Stage &stage = *stages[s];
    StageStats &stats = lastStats[s];
    stats.firstOp = stage.firstOp;
    stats.numOps = stage.endOp - stage.firstOp;
    stats.replicas = static_cast<int>(stage.replicas.size());
    live[s] = stats.replicas;
    for (auto &replica : stage.replicas)
      workers.emplace_back([&, s, executor = replica.get()] {
        double busy = 0;
        int64_t batches = 0;
        std::vector<Tensor> inputs;
        while (std::optional<Item> item = queues[s]->pop()) {
          inputs.clear();
          for (int32_t v : stage.inputIds)
            inputs.push_back(item->env[v]);
          auto start = std::chrono::steady_clock::now();
          auto outputs = executor->run(inputs);
          busy += std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - start)
                      .count();
          if (!outputs) {
            fail("batch " + std::to_string(item->index) + ", stage " +
                 std::to_string(s) + ": " +
                 llvm::toString(outputs.takeError()));
            break;
          }
          ++batches;
          for (size_t k = 0; k < stage.outputIds.size(); ++k)
            item->env[stage.outputIds[k]] = std::move((*outputs)[k]);
          for (int32_t v : stage.dropAfter)
            item->env.erase(v);
          if (s + 1 < numStages) {
            if (!queues[s + 1]->push(std::move(*item)))
              break; // stopped by an error elsewhere
          } else {
            std::vector<Tensor> &out = results[item->index];
            for (const plan::Binding &b : program.outputs())
              out.push_back(item->env[b.value()]);
          }
        }
        std::lock_guard<std::mutex> lock(mutex);
        lastStats[s].busySeconds += busy;
        lastStats[s].batches += batches;
        // The last worker of a stage ends the next stage's input.
        if (--live[s] == 0 && s + 1 < numStages)
          queues[s + 1]->close();
      });
  }

  for (size_t i = 0; i < stream.size(); ++i) {
    Item item{i, {}};
    for (int k = 0; k < program.inputs_size(); ++k)
      item.env[program.inputs(k).value()] = stream[i][k];
    if (!queues[0]->push(std::move(item)))
      break;
  }
  queues[0]->close();
  for (std::thread &t : workers)
    t.join();
  if (!firstError.empty())
    return pipelineError(firstError);
  return results;
}
