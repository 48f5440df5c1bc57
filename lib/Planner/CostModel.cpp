//===- CostModel.cpp - HeterPS formulas, stages and provisioning ----------===//

#include "heterps/Planner/CostModel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

using namespace heterps::planner;

LayerCost heterps::planner::analyticCost(const Layer &layer,
                                         const DeviceType &device,
                                         int64_t batch, Step step) {
  bool training = step == Step::Training;
  LayerCost c;
  c.b0 = static_cast<double>(batch);
  double passes = training ? (layer.paramBytes > 0 ? 3 : 2) : 1;
  c.oct =
      passes * static_cast<double>(layer.flops) * c.b0 / (device.gflops * 1e9);
  double activations = (training ? 3.0 : 1.0) *
                       static_cast<double>(layer.activationBytes) * c.b0 /
                       (device.memoryBandwidthGBs * 1e9);
  // A sparse table (an embedding) moves only the rows the batch touches,
  // which the gathered activations bound; dense parameters move whole.
  double moved = static_cast<double>(layer.paramBytes);
  if (layer.kind == "embedding")
    moved = std::min(moved, static_cast<double>(layer.activationBytes) * c.b0);
  double parameters =
      training ? 2.0 * moved / (device.networkBandwidthGBs * 1e9) : 0.0;
  c.odt = activations + parameters;
  c.alpha = device.alpha;
  // Each replica moves its share of the activations but pulls and pushes
  // all parameters: only the activation part shrinks with more replicas.
  c.beta = c.odt > 0 ? activations / c.odt : 0.0;
  return c;
}

StageTimes heterps::planner::layerTimes(const LayerCost &cost, int64_t batch,
                                        int64_t k) {
  double scale = static_cast<double>(batch) / cost.b0;
  double kd = static_cast<double>(k);
  StageTimes t;
  t.ct = cost.oct * scale * (1.0 - cost.alpha + cost.alpha / kd);
  t.dt = cost.odt * scale * (1.0 - cost.beta + cost.beta / kd);
  return t;
}

void SplitTimes::add(const LayerCost &cost, double batch) {
  double scale = batch / cost.b0;
  ctSerial += cost.oct * scale * (1 - cost.alpha);
  ctParallel += cost.oct * scale * cost.alpha;
  dtSerial += cost.odt * scale * (1 - cost.beta);
  dtParallel += cost.odt * scale * cost.beta;
}

StageTimes heterps::planner::stageTimes(const std::vector<Layer> &layers,
                                        const Stage &stage, int64_t batch,
                                        int64_t k) {
  StageTimes sum;
  for (size_t i : stage.layers) {
    StageTimes t = layerTimes(layers[i].costs[stage.deviceType], batch, k);
    sum.ct += t.ct;
    sum.dt += t.dt;
  }
  return sum;
}

/// B / ET, infinite for a stage that costs nothing.
static double throughputOf(const StageTimes &t, int64_t batch) {
  double et = t.et();
  return et > 0 ? static_cast<double>(batch) / et
                : std::numeric_limits<double>::infinity();
}

PlanFigures heterps::planner::evaluatePlan(const ClusterSpec &spec,
                                           const std::vector<Layer> &layers,
                                           const std::vector<Stage> &stages) {
  PlanFigures f;
  int64_t batch = spec.job.batchSize;
  f.throughput = std::numeric_limits<double>::infinity();
  double pricePerSecond = 0;
  for (const Stage &s : stages) {
    StageTimes t = stageTimes(layers, s, batch, s.replicas);
    f.stages.push_back(t);
    f.stageThroughput.push_back(throughputOf(t, batch));
    f.throughput = std::min(f.throughput, f.stageThroughput.back());
    const DeviceType &d = spec.deviceTypes[s.deviceType];
    f.devices[d.name] += s.replicas;
    pricePerSecond += d.pricePerSecond() * static_cast<double>(s.replicas);
  }
  double samples = static_cast<double>(spec.job.epochs) *
                   static_cast<double>(spec.job.samplesPerEpoch);
  f.totalTime = std::isinf(f.throughput) ? 0.0 : samples / f.throughput;
  f.cost = f.totalTime * pricePerSecond;
  return f;
}

std::vector<Stage>
heterps::planner::formStages(const std::vector<size_t> &deviceOfLayer) {
  std::vector<Stage> stages;
  for (size_t i = 0; i < deviceOfLayer.size(); ++i) {
    if (stages.empty() || stages.back().deviceType != deviceOfLayer[i])
      stages.push_back(Stage{deviceOfLayer[i], {}, 1});
    stages.back().layers.push_back(i);
  }
  return stages;
}

/// The fewest replicas meeting the floor need not be the cheapest: the job
/// costs (L·M/B) · P · E with P = sum of p_t · k and E the slowest stage's
/// time, and while the slowest stage holds the pipeline back the others
/// stand idle but are paid. Lowering a cap on E from the floor's, each cap
/// needs, per stage, the fewest replicas whose time stays under it; the
/// cheapest plan is one of those, and the caps where they change are
/// exactly the times of the slowest stages. So give the slowest stages one
/// more replica at a time and keep the cheapest P · E, until a type runs out,
/// the slowest stage stops speeding up, or P times the least E any counts
/// within max_count reach cannot beat the best. `used` is the devices per
/// type of `stages`, which meet the floor within the limits.
static void addReplicasWhileCheaper(const ClusterSpec &spec,
                                    const std::vector<Layer> &layers,
                                    std::vector<Stage> &stages,
                                    std::map<size_t, int64_t> used) {
  // The stages' times as serial and parallel parts: ET(k) in O(1).
  std::vector<SplitTimes> times(stages.size());
  std::vector<double> et(stages.size());
  double price = 0, leastE = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    const Stage &s = stages[i];
    const DeviceType &d = spec.deviceTypes[s.deviceType];
    for (size_t l : s.layers)
      times[i].add(layers[l].costs[s.deviceType],
                   static_cast<double>(spec.job.batchSize));
    et[i] = times[i].et(static_cast<double>(s.replicas));
    price += d.pricePerSecond() * static_cast<double>(s.replicas);
    leastE = std::max(leastE, times[i].et(static_cast<double>(
                                  std::max<int64_t>(d.maxCount, 1))));
  }
  std::vector<int64_t> best;
  for (const Stage &s : stages)
    best.push_back(s.replicas);
  double e = stages.empty() ? 0 : *std::max_element(et.begin(), et.end());
  double bestCost = price * e;
  std::vector<size_t> slowest;
  while (e > 0) {
    // Every stage at E needs one more replica to get under it; if one
    // cannot have it or would not speed up, no lower cap can be met.
    slowest.clear();
    for (size_t i = 0; i < stages.size(); ++i)
      if (et[i] >= e)
        slowest.push_back(i);
    bool canSpeedUp = true;
    for (size_t i : slowest) {
      Stage &s = stages[i];
      const DeviceType &d = spec.deviceTypes[s.deviceType];
      double faster = times[i].et(static_cast<double>(s.replicas + 1));
      canSpeedUp &= used[s.deviceType] < d.maxCount && faster < et[i];
      ++s.replicas;
      ++used[s.deviceType];
      et[i] = faster;
      price += d.pricePerSecond();
    }
    if (!canSpeedUp || price * leastE >= bestCost)
      break;
    e = *std::max_element(et.begin(), et.end());
    if (price * e < bestCost * (1 - 1e-12)) {
      bestCost = price * e;
      for (size_t i = 0; i < stages.size(); ++i)
        best[i] = stages[i].replicas;
    }
  }
  for (size_t i = 0; i < stages.size(); ++i)
    stages[i].replicas = best[i];
}

Provisioning heterps::planner::provision(const ClusterSpec &spec,
                                         const std::vector<Layer> &layers,
                                         std::vector<Stage> &stages,
                                         double throughputLimit) {
  Provisioning result;
  int64_t batch = spec.job.batchSize;
  auto throughputAt = [&](const Stage &s, int64_t k) {
    return throughputOf(stageTimes(layers, s, batch, k), batch);
  };

  // Smallest k per stage meeting the limit. Throughput never decreases with
  // k, so the first k that meets it is the smallest; max_count bounds the
  // search (no stage can use more devices than its type has).
  bool eachStageCanMeet = true;
  for (Stage &s : stages) {
    int64_t cap = spec.deviceTypes[s.deviceType].maxCount;
    s.replicas = 1;
    while (s.replicas < cap && throughputAt(s, s.replicas) < throughputLimit)
      ++s.replicas;
    eachStageCanMeet &= throughputAt(s, s.replicas) >= throughputLimit;
  }
  std::map<size_t, int64_t> used;
  for (const Stage &s : stages)
    used[s.deviceType] += s.replicas;
  bool withinLimits = true;
  for (auto [type, count] : used)
    withinLimits &= count <= spec.deviceTypes[type].maxCount;
  if (eachStageCanMeet && withinLimits) {
    result.feasible = true;
    addReplicasWhileCheaper(spec, layers, stages, used);
    return result;
  }

  // Infeasible: find the best throughput the limits allow. Start from one
  // device per stage and give one more device to the bottleneck stage while
  // its type has devices left and that raises its throughput. The pipeline
  // runs at its slowest stage, so only adding to the bottleneck can help.
  used.clear();
  for (Stage &s : stages) {
    s.replicas = 1;
    ++used[s.deviceType];
  }
  for (auto [type, count] : used)
    if (count > spec.deviceTypes[type].maxCount) {
      std::ostringstream os;
      os << "the plan has " << count << " stages on device type '"
         << spec.deviceTypes[type].name << "' but max_count is "
         << spec.deviceTypes[type].maxCount;
      result.reason = os.str();
      return result;
    }
  while (true) {
    size_t bottleneck = 0;
    double worst = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < stages.size(); ++i) {
      double t = throughputAt(stages[i], stages[i].replicas);
      if (t < worst) {
        worst = t;
        bottleneck = i;
      }
    }
    result.bestThroughput = worst;
    result.cappingStage = bottleneck;
    Stage &s = stages[bottleneck];
    const DeviceType &d = spec.deviceTypes[s.deviceType];
    if (used[s.deviceType] >= d.maxCount) {
      // With unlimited devices the stage tends to its serial time; if even
      // that misses the limit, more devices of this type would not help.
      StageTimes serial = stageTimes(layers, s, batch, 1);
      StageTimes parallel = stageTimes(layers, s, batch, 2);
      // Times are a + b/k: a = 2*T(2) - T(1).
      double ct = 2 * parallel.ct - serial.ct, dt = 2 * parallel.dt - serial.dt;
      double asymptote = throughputOf(StageTimes{ct, dt}, batch);
      std::ostringstream os;
      os << "its device type '" << d.name << "' has no devices left (max_count "
         << d.maxCount << ")";
      if (asymptote < throughputLimit)
        os << ", and its serial fraction (1 - alpha, 1 - beta) would cap it "
              "at "
           << asymptote << " samples/s however many devices it got";
      result.reason = os.str();
      break;
    }
    if (throughputAt(s, s.replicas + 1) <= worst) {
      result.reason = "more replicas no longer speed it up (its serial "
                      "fraction, 1 - alpha or 1 - beta, dominates)";
      break;
    }
    ++s.replicas;
    ++used[s.deviceType];
  }
  return result;
}
