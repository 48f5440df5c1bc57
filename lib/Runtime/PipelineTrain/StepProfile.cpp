//===- StepProfile.cpp - measured pipeline steps vs the cost model --------===//

#include "heterps/Runtime/PipelineTrain/StepProfile.h"

#include "heterps/Planner/CostModel.h"

#include <algorithm>

using namespace heterps::runtime::pipeline;

void StepProfile::add(const PipelineStepStats &step) {
  ++count;
  seconds += step.seconds;
  bubbles += step.bubbleFraction();
  for (const ReplicaStepStats &r : step.replicas) {
    if (r.stage >= static_cast<int>(sums.size()))
      sums.resize(r.stage + 1);
    Stage &s = sums[r.stage];
    if (count == 1)
      ++s.replicas;
    s.forward += r.forward;
    s.backward += r.backward;
    s.pull += r.pull;
    s.push += r.push;
    s.stashSlots = std::max(s.stashSlots, r.stashSlots);
  }
}

std::vector<StepProfile::Stage> StepProfile::stages() const {
  std::vector<Stage> out = sums;
  for (Stage &s : out) {
    double n = static_cast<double>(count);
    s.forward /= n;
    s.backward /= n;
    s.pull /= n * s.replicas;
    s.push /= n * s.replicas;
  }
  return out;
}

StepProfile::Prediction StepProfile::predict() const {
  Prediction p;
  std::vector<Stage> figures = stages();
  if (figures.empty())
    return p;
  // The cost model, on a batch of m micro-batches: one "layer" per stage.
  namespace pl = heterps::planner;
  pl::ClusterSpec spec;
  spec.deviceTypes.push_back(pl::DeviceType{"cpu", "cpu"});
  spec.job.batchSize = microBatches;
  std::vector<pl::Layer> layers;
  std::vector<pl::Stage> stages;
  for (const Stage &s : figures) {
    pl::LayerCost cost;
    cost.oct = s.forward + s.backward;
    cost.odt = s.pull + s.push;
    cost.alpha = 1;
    cost.beta = 0;
    cost.b0 = microBatches;
    layers.push_back(pl::Layer{"stage", "stage", 0, 0, 0, {cost}});
    stages.push_back(pl::Stage{0, {layers.size() - 1}, s.replicas});
  }
  pl::PlanFigures f = pl::evaluatePlan(spec, layers, stages);
  p.costModelSeconds = microBatches / f.throughput;

  std::vector<int> replicas;
  std::vector<double> forward, backward;
  double pull = 0, push = 0, busy = 0, devices = 0;
  for (const Stage &s : figures) {
    replicas.push_back(s.replicas);
    forward.push_back(s.forward / microBatches);
    backward.push_back(s.backward / microBatches);
    pull = std::max(pull, s.pull);
    push = std::max(push, s.push);
    busy += s.forward + s.backward;
    devices += s.replicas;
  }
  double compute =
      simulateSchedule(schedule, microBatches, replicas, forward, backward);
  p.scheduleSeconds = pull + compute + push;
  p.scheduleBubble = compute > 0 ? 1 - busy / (devices * compute) : 0;
  return p;
}
