//===- EightLayerProblem.h - a small placement problem with a known optimum
//===//
//
// 8 layers on three types ("gpu" $0.01/s at most 4, "mid" $0.004/s at most
// 4, "cpu" $0.001/s at most 8; partly serial layers, b0 = B = 10, no data
// time; one epoch of 1000 samples). At 60 samples/s the cheapest plan,
// {mid, mid, cpu, mid, gpu, gpu, gpu, gpu} at $0.26, is unique, has 4
// stages, and is neither the greedy plan nor a one-type plan
// (BaselinesTest's Genetic.FindsTheUniqueOptimum checks all of this).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_UNITTESTS_PLANNER_EIGHTLAYERPROBLEM_H
#define HETERPS_UNITTESTS_PLANNER_EIGHTLAYERPROBLEM_H

#include "heterps/Planner/Placement.h"

namespace heterps::planner::testutil {

inline ClusterSpec makeEightLayerSpec() {
  ClusterSpec spec;
  spec.deviceTypes = {DeviceType{"gpu", "cuda", 36, 4, 1, 1, 1, 1},
                      DeviceType{"mid", "cuda", 14.4, 4, 1, 1, 1, 1},
                      DeviceType{"cpu", "cpu", 3.6, 8, 1, 1, 1, 1}};
  spec.job = {10, 1000, 1, 0};
  return spec;
}

inline std::vector<Layer> makeEightLayers() {
  const double oct[3][8] = {{0.02, 0.05, 0.03, 0.08, 0.01, 0.06, 0.04, 0.02},
                            {0.05, 0.08, 0.1, 0.12, 0.03, 0.2, 0.06, 0.09},
                            {0.1, 0.6, 0.2, 0.9, 0.05, 0.8, 0.3, 0.4}};
  const double alpha[3] = {0.9, 0.8, 0.95};
  std::vector<Layer> layers;
  for (size_t i = 0; i < 8; ++i) {
    Layer l;
    l.name = "l" + std::to_string(i);
    l.kind = "Test";
    for (size_t t = 0; t < 3; ++t)
      l.costs.push_back({oct[t][i], 0, alpha[t], 1, 10});
    layers.push_back(std::move(l));
  }
  return layers;
}

constexpr double kEightLayerLimit = 60;
inline const Placement kEightLayerOptimum = {1, 1, 2, 1, 0, 0, 0, 0};

} // namespace heterps::planner::testutil

#endif // HETERPS_UNITTESTS_PLANNER_EIGHTLAYERPROBLEM_H
