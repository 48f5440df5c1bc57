//===- placement-bench.cpp - placement strategies side by side ------------===//
//
// Synthetic layer chains (seeded random costs with per-type speed factors)
// on clusters of 2, 3 and 4 device types, with a loose and a tight
// throughput floor. Every strategy searches the same space; the table shows
// each one's cost relative to the best plan any strategy found (and to the
// exhaustive optimum where the space is small enough to enumerate),
// feasibility and search time.
//
// Usage: heterps-placement-bench [--quick]
//
//===----------------------------------------------------------------------===//

#include "heterps/Planner/Baselines.h"
#include "heterps/Planner/Placement.h"
#include "heterps/Planner/RLPlacer.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace heterps::planner;

namespace {

/// Device types: a cheap slow CPU and 1-3 GPU generations, each faster and
/// dearer than the last (prices per hour in the HeterPS paper's range).
ClusterSpec makeSpec(int types) {
  ClusterSpec spec;
  struct Row {
    const char *name, *kind;
    double price, gflops, mem, net, alpha;
    int64_t max;
  } rows[] = {{"cpu", "cpu", 0.04, 1000, 100, 1.25, 0.9, 10},
              {"v100", "cuda", 2.42, 10000, 900, 3.125, 0.95, 32},
              {"t4", "cuda", 0.53, 4000, 300, 3.125, 0.95, 16},
              {"a100", "cuda", 3.67, 19000, 1500, 12.5, 0.95, 8}};
  for (int i = 0; i < types; ++i) {
    const Row &r = rows[i];
    spec.deviceTypes.push_back(
        {r.name, r.kind, r.price, r.max, r.gflops, r.mem, r.net, r.alpha});
  }
  spec.job = {256, 1000000, 1, 0};
  return spec;
}

/// A chain of `n` layers: convolution-like (compute-heavy, few parameters)
/// early, fully-connected-like (parameter-heavy) late, with seeded noise.
std::vector<Layer> makeChain(int n, const ClusterSpec &spec, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> noise(0.5, 1.5);
  std::vector<Layer> layers;
  for (int i = 0; i < n; ++i) {
    Layer l;
    l.name = "layer" + std::to_string(i);
    bool late = i >= n * 3 / 4;
    l.kind = late ? "fc" : "conv";
    l.flops = static_cast<int64_t>((late ? 2e6 : 2e8) * noise(rng));
    l.paramBytes = static_cast<int64_t>((late ? 4e7 : 4e5) * noise(rng));
    l.activationBytes = static_cast<int64_t>((late ? 1e4 : 1e6) * noise(rng));
    for (const DeviceType &d : spec.deviceTypes)
      l.costs.push_back(analyticCost(l, d, spec.job.batchSize));
    layers.push_back(std::move(l));
  }
  return layers;
}

/// The best all-one-type throughput with every device of that type: the
/// tight floor is a fraction of it, the loose floor a smaller one.
double referenceThroughput(const ClusterSpec &spec,
                           const std::vector<Layer> &layers) {
  double best = 0;
  for (size_t t = 0; t < spec.deviceTypes.size(); ++t) {
    Stage s{t, {}, spec.deviceTypes[t].maxCount};
    for (size_t i = 0; i < layers.size(); ++i)
      s.layers.push_back(i);
    StageTimes times = stageTimes(layers, s, spec.job.batchSize, s.replicas);
    best = std::max(best, spec.job.batchSize / times.et());
  }
  return best;
}

struct Row {
  std::string strategy;
  SearchResult result;
};

std::string ratio(const SearchResult &r, double best) {
  if (!r.eval.feasible)
    return "infeasible";
  char text[32];
  std::snprintf(text, sizeof(text), "%.4f", r.eval.cost / best);
  return text;
}

} // namespace

int main(int argc, char **argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::vector<int> sizes =
      quick ? std::vector<int>{10, 50} : std::vector<int>{10, 50, 200, 1000};
  std::printf("| layers | types | floor | strategy | cost / best | feasible "
              "| search s | evaluations |\n");
  std::printf("|---:|---:|---|---|---:|---|---:|---:|\n");
  for (int n : sizes)
    for (int types : {2, 3, 4})
      for (const char *floor : {"loose", "tight"}) {
        ClusterSpec spec = makeSpec(types);
        std::vector<Layer> layers = makeChain(n, spec, 42 + n + types);
        double ref = referenceThroughput(spec, layers);
        double limit = (std::strcmp(floor, "tight") == 0 ? 0.6 : 0.2) * ref;
        PlacementProblem problem(spec, layers, limit);

        RLOptions rl;
        rl.timeBudgetSeconds = quick ? 2 : 10;
        std::vector<Row> rows;
        for (size_t t = 0; t < spec.deviceTypes.size(); ++t)
          rows.push_back(
              {"all-" + spec.deviceTypes[t].name, placeAllOnType(problem, t)});
        rows.push_back({"greedy", placeGreedy(problem)});
        rows.push_back({"rl", placeRL(problem, rl)});
        int64_t budget = rows.back().result.evaluations;
        rows.push_back({"random", placeRandom(problem, budget, 1)});
        GeneticOptions ga;
        ga.budget = budget;
        rows.push_back({"genetic", placeGenetic(problem, ga)});
        SearchResult exhaustive = placeBruteForce(problem, 1 << 20);
        if (!exhaustive.placement.empty())
          rows.push_back({"exhaustive", exhaustive});

        double best = std::numeric_limits<double>::infinity();
        for (const Row &r : rows)
          if (r.result.eval.feasible)
            best = std::min(best, r.result.eval.cost);
        for (const Row &r : rows)
          std::printf("| %d | %d | %s | %s | %s | %s | %.3f | %lld |\n", n,
                      types, floor, r.strategy.c_str(),
                      ratio(r.result, best).c_str(),
                      r.result.eval.feasible ? "yes" : "no", r.result.seconds,
                      static_cast<long long>(r.result.evaluations));
        std::fflush(stdout);
      }
  return 0;
}
