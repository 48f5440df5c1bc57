//===- CostModel.h - the HeterPS cost model ---------------------*- C++ -*-===//
//
// Plain C++ over a list of layers; see docs/cost-model.md for the formulas
// and their interpretation. Times are seconds, throughputs samples/second,
// money dollars.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLANNER_COSTMODEL_H
#define HETERPS_PLANNER_COSTMODEL_H

#include "heterps/Planner/ClusterSpec.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace heterps::planner {

/// Costs of one layer on one device type, measured (or computed) for a batch
/// of `b0` samples on a single device.
struct LayerCost {
  double oct = 0;   // OCT: compute time
  double odt = 0;   // ODT: data/communication time
  double alpha = 0; // parallelisable fraction of OCT
  double beta = 0;  // parallelisable fraction of ODT
  double b0 = 1;    // base batch of oct/odt
};

/// What the cost model knows of a layer.
struct Layer {
  std::string name;
  std::string kind;
  int64_t flops = 0;            // per sample
  int64_t paramBytes = 0;       // per step (pulled and pushed once)
  int64_t activationBytes = 0;  // per sample
  std::vector<LayerCost> costs; // one per device type of the spec
};

/// Analytic costs of one `step` of a layer on `device` for a batch of
/// `batch` samples. `flops` and `activationBytes` are the forward's.
///   training:  OCT = m * flops * batch / (gflops * 1e9), m = 3 for a layer
///              with parameters (forward, backward-data, backward-weights),
///              else 2 (forward, backward-data);
///              ODT = 3 * activationBytes * batch / memory bandwidth
///              (written forward, read back and its gradient written
///              backward) + 2 * paramBytes / network bandwidth (pull, push)
///   inference: OCT = flops * batch / (gflops * 1e9);
///              ODT = activationBytes * batch / memory bandwidth (the
///              parameters stay on the device)
///   (for an embedding, a sparse table, only the touched rows move:
///   min(paramBytes, activationBytes * batch) instead of paramBytes)
///   alpha = device.alpha; beta = activation share of ODT (the parameter
///   traffic of each replica does not shrink with more replicas).
LayerCost analyticCost(const Layer &layer, const DeviceType &device,
                       int64_t batch, Step step);

/// A layer's times for a batch of B samples on k devices of one type:
///   CT = OCT * (B/B0) * (1 - alpha + alpha/k), DT likewise with ODT, beta.
struct StageTimes {
  double ct = 0, dt = 0;
  double et() const { return ct > dt ? ct : dt; }
};
StageTimes layerTimes(const LayerCost &cost, int64_t batch, int64_t k);

/// The times of a layer, or of a run of layers summed, on one device type
/// as the parts k replicas do not divide and those they do:
///   CT(k) = ctSerial + ctParallel / k, DT(k) = dtSerial + dtParallel / k.
struct SplitTimes {
  double ctSerial = 0, ctParallel = 0, dtSerial = 0, dtParallel = 0;

  /// Adds a layer's parts at batch `batch` (layerTimes' terms).
  void add(const LayerCost &cost, double batch);
  // Inline: the exact search calls these for every run it reads.
  SplitTimes &operator+=(const SplitTimes &other) {
    ctSerial += other.ctSerial;
    ctParallel += other.ctParallel;
    dtSerial += other.dtSerial;
    dtParallel += other.dtParallel;
    return *this;
  }
  /// ET = max(CT, DT) on k devices (k may be fractional).
  double et(double k) const {
    return std::max(ctSerial + ctParallel / k, dtSerial + dtParallel / k);
  }
};

/// A stage: consecutive layers on one device type.
struct Stage {
  size_t deviceType = 0;      // index into ClusterSpec::deviceTypes
  std::vector<size_t> layers; // indices into the layer list
  int64_t replicas = 1;       // k
};

/// Stage times sum the times of its layers: CT = sum CT_i, DT = sum DT_i,
/// ET = max(CT, DT).
StageTimes stageTimes(const std::vector<Layer> &layers, const Stage &stage,
                      int64_t batch, int64_t k);

/// Figures of a whole plan.
struct PlanFigures {
  std::vector<StageTimes> stages;
  std::vector<double> stageThroughput;    // B / ET per stage
  double throughput = 0;                  // min over stages
  double totalTime = 0;                   // L * M / throughput
  double cost = 0;                        // totalTime * sum_t p_t * k_t
  std::map<std::string, int64_t> devices; // device type -> sum of k
};
PlanFigures evaluatePlan(const ClusterSpec &spec,
                         const std::vector<Layer> &layers,
                         const std::vector<Stage> &stages);

/// Maximal runs of consecutive layers with the same device type.
std::vector<Stage> formStages(const std::vector<size_t> &deviceOfLayer);

/// Result of provisioning.
struct Provisioning {
  bool feasible = false;
  /// When infeasible: the best throughput the N_t limits allow, the stage
  /// that caps it and why.
  double bestThroughput = 0;
  size_t cappingStage = 0;
  std::string reason;
};

/// Gives the stages the replica counts of the cheapest plan that meets
/// `throughputLimit` within the N_t limits: starting from the smallest k per
/// stage meeting the limit, the slowest stages get more replicas while that
/// lowers the job cost (faster stages are paid while they wait for the
/// slowest). When infeasible, `stages` get the replica counts that maximise
/// the pipeline throughput within the limits.
Provisioning provision(const ClusterSpec &spec,
                       const std::vector<Layer> &layers,
                       std::vector<Stage> &stages, double throughputLimit);

} // namespace heterps::planner

#endif // HETERPS_PLANNER_COSTMODEL_H
