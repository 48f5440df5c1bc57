//===- MeasuredStepOracle.cpp - step times measured by the runtime --------===//
//
// See MeasuredStepOracle.h.
//
//===----------------------------------------------------------------------===//

#include "heterps/Measure/MeasuredStepOracle.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

#include <chrono>

using namespace heterps;
using namespace heterps::measure;
using runtime::Tensor;
namespace plan = runtime::plan;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<std::unique_ptr<MeasuredStepOracle>> MeasuredStepOracle::create(
    plan::Plan plan, const std::vector<planner::Layer> &layers,
    const planner::ClusterSpec &spec, runtime::WeightMap weights, Tensor inputs,
    Tensor targets, MeasureOptions options) {
  if (options.warmupSteps < 0 || options.timedSteps < 1)
    return error("measuring needs at least one timed step and no negative "
                 "warm-up");
  std::unique_ptr<MeasuredStepOracle> oracle(new MeasuredStepOracle());
  llvm::StringMap<int> layerIndex;
  for (const planner::Layer &l : layers)
    layerIndex[l.name] = static_cast<int>(layerIndex.size());
  std::vector<bool> found(layers.size(), false);
  for (const plan::Op &op : plan.ops()) {
    auto it = layerIndex.find(op.name());
    int layer = it == layerIndex.end() ? -1 : it->second;
    oracle->layerOfOp_.push_back(layer);
    if (layer >= 0)
      found[static_cast<size_t>(layer)] = true;
  }
  for (size_t i = 0; i < layers.size(); ++i)
    if (!found[i])
      return error("layer '" + layers[i].name + "' has no op in the plan");
  // The plan names each type's kind, which picks the backend of its ops.
  for (const planner::DeviceType &d : spec.deviceTypes) {
    oracle->typeNames_.push_back(d.name);
    if (llvm::none_of(plan.device_types(), [&](const plan::DeviceType &t) {
          return t.name() == d.name;
        })) {
      plan::DeviceType *type = plan.add_device_types();
      type->set_name(d.name);
      type->set_kind(d.kind);
    }
  }
  oracle->plan_ = std::move(plan);
  oracle->weights_ = std::move(weights);
  oracle->inputs_ = std::move(inputs);
  oracle->targets_ = std::move(targets);
  oracle->options_ = std::move(options);
  return oracle;
}

plan::Plan
MeasuredStepOracle::planFor(const std::vector<planner::Stage> &stages) const {
  std::vector<int> stageOfLayer(layerOfOp_.size(), 0);
  for (size_t s = 0; s < stages.size(); ++s)
    for (size_t l : stages[s].layers)
      if (l < stageOfLayer.size())
        stageOfLayer[l] = static_cast<int>(s);
  plan::Plan result = plan_;
  result.clear_stages();
  for (const planner::Stage &s : stages) {
    plan::Stage *stage = result.add_stages();
    stage->set_device(typeNames_.at(s.deviceType));
    stage->set_replicas(static_cast<int32_t>(s.replicas));
  }
  int stage = 0;
  for (int i = 0; i < result.ops_size(); ++i) {
    if (int layer = layerOfOp_[static_cast<size_t>(i)]; layer >= 0)
      stage = stageOfLayer[static_cast<size_t>(layer)];
    plan::Op *op = result.mutable_ops(i);
    op->set_stage(stage);
    op->set_device(result.stages(stage).device());
  }
  return result;
}

llvm::Expected<double>
MeasuredStepOracle::stepSeconds(const std::vector<planner::Stage> &stages) {
  if (stages.empty())
    return error("a plan to measure needs at least one stage");
  plan::Plan staged = planFor(stages);
  runtime::WeightMap weights;
  for (const auto &[value, tensor] : weights_)
    weights.emplace(value, tensor.clone());
  runtime::pipeline::PipelineTrainerOptions options = options_.trainer;
  options.replicas.clear();
  for (const planner::Stage &s : stages)
    options.replicas.push_back(static_cast<int>(s.replicas));
  auto trainer = runtime::pipeline::PipelineTrainer::create(
      staged, std::move(weights), options);
  if (!trainer)
    return trainer.takeError();
  using Clock = std::chrono::steady_clock;
  double timed = 0;
  for (int i = 0; i < options_.warmupSteps + options_.timedSteps; ++i) {
    Clock::time_point start = Clock::now();
    if (auto loss = (*trainer)->step(inputs_, targets_, options_.learningRate);
        !loss)
      return loss.takeError();
    if (i >= options_.warmupSteps)
      timed += std::chrono::duration<double>(Clock::now() - start).count();
  }
  return timed / options_.timedSteps;
}
