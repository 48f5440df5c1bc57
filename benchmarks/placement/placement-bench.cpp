//===- placement-bench.cpp - placement strategies against the optimum -----===//
//
// Every strategy searches the same space; the table shows each one's cost
// relative to the exact optimum (placeExact), whether it met the floor and
// the limits, and its search time. Cases:
//
// * synthetic chains (seeded random costs with per-type speed factors) of
//   10, 50, 200 and 1000 layers on clusters of 2, 3 and 4 device types;
// * real models, from `hps-report format=json` files (their layers, per-type
//   costs, device types and job), given with --report;
//
// each under three constraints: a loose floor (0.2 x the best one-type
// throughput), a tight one (0.6 x), and a tight one with every max_count
// cut to a quarter ("limits"); with four device types or more also a high
// floor (0.9 x, "high"), where the cheap types alone no longer suffice.
//
// Usage: heterps-placement-bench [--quick] [--rl-seconds S] [--rl-polish N]
//                                [--rl-no-rebalance] [--rl-no-cap-refinement]
//                                [--only NAME]...
//                                [--min-layers N] [--max-layers N] [--plans]
//                                [--report NAME=FILE.json]...
//        --quick: chains of 10 and 50 layers only;
//        --rl-polish: RLOptions::polishEvaluations (0: the policy alone);
//        --rl-no-rebalance: RLOptions::rebalance off (Rebalance.h);
//        --rl-no-cap-refinement: RLOptions::capRefinement off (RLPlacer.h);
//        --only: run only the cases of that name ("chain", "resnet50", ...);
//        --min-layers, --max-layers: skip cases with fewer or more layers;
//        --plans: after each row, the stages of the exact and rl plans.
//
//===----------------------------------------------------------------------===//

#include "heterps/Planner/Baselines.h"
#include "heterps/Planner/Exact.h"
#include "heterps/Planner/Placement.h"
#include "heterps/Planner/RLPlacer.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace heterps::planner;

namespace {

struct Case {
  std::string name;
  ClusterSpec spec;
  std::vector<Layer> layers;
};

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
      l.costs.push_back(analyticCost(l, d, spec.job.batchSize, spec.job.step));
    layers.push_back(std::move(l));
  }
  return layers;
}

/// A case from an `hps-report format=json` file.
bool readReport(const std::string &name, const std::string &path, Case &out) {
  auto fail = [&](const std::string &what) {
    std::fprintf(stderr, "heterps-placement-bench: error: %s: %s\n",
                 path.c_str(), what.c_str());
    return false;
  };
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return fail(buffer.getError().message());
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    return fail(llvm::toString(json.takeError()));
  llvm::json::Path::Root root;
  const llvm::json::Object *report = json->getAsObject();
  const llvm::json::Object *job = report ? report->getObject("job") : nullptr;
  const llvm::json::Array *types =
      report ? report->getArray("device_types") : nullptr;
  const llvm::json::Array *layers =
      report ? report->getArray("layers") : nullptr;
  if (!job || !types || !layers)
    return fail("not an hps-report JSON document");
  out.name = name;
  out.spec.job.batchSize = job->getInteger("batch_size").value_or(0);
  out.spec.job.samplesPerEpoch =
      job->getInteger("samples_per_epoch").value_or(0);
  out.spec.job.epochs = job->getInteger("epochs").value_or(0);
  for (const llvm::json::Value &t : *types) {
    const llvm::json::Object *o = t.getAsObject();
    DeviceType d;
    d.name = o->getString("name").value_or("").str();
    d.kind = o->getString("kind").value_or("").str();
    d.pricePerHour = o->getNumber("price_per_hour").value_or(0);
    d.maxCount = o->getInteger("max_count").value_or(0);
    out.spec.deviceTypes.push_back(d);
  }
  for (const llvm::json::Value &v : *layers) {
    const llvm::json::Object *o = v.getAsObject();
    Layer l;
    l.name = o->getString("name").value_or("").str();
    l.kind = o->getString("kind").value_or("").str();
    const llvm::json::Object *costs = o->getObject("costs");
    for (const DeviceType &d : out.spec.deviceTypes) {
      const llvm::json::Object *c = costs ? costs->getObject(d.name) : nullptr;
      if (!c)
        return fail("layer '" + l.name + "' has no costs for '" + d.name + "'");
      l.costs.push_back(
          {c->getNumber("oct_s").value_or(0), c->getNumber("odt_s").value_or(0),
           c->getNumber("alpha").value_or(0), c->getNumber("beta").value_or(0),
           c->getNumber("b0").value_or(1)});
    }
    out.layers.push_back(std::move(l));
  }
  return true;
}

/// The best one-type throughput with every device of that type: the floors
/// are fractions of it.
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

/// "cpu x3 [0, 12) $0.0003/s, v100 x1 [12, 38) ...", with each stage's
/// batch time.
std::string describeStages(const ClusterSpec &spec,
                           const std::vector<Stage> &stages) {
  std::string text;
  for (const Stage &s : stages) {
    char part[160];
    std::snprintf(part, sizeof(part), "%s%s x%lld [%zu, %zu)",
                  text.empty() ? "" : ", ",
                  spec.deviceTypes[s.deviceType].name.c_str(),
                  static_cast<long long>(s.replicas), s.layers.front(),
                  s.layers.back() + 1);
    text += part;
  }
  return text;
}

std::string cell(const SearchResult &r, double optimal) {
  char text[64];
  if (!r.eval.feasible)
    std::snprintf(text, sizeof(text), "infeasible · %.2fs", r.seconds);
  else
    std::snprintf(text, sizeof(text), "%.4f · %.2fs", r.eval.cost / optimal,
                  r.seconds);
  return text;
}

struct BenchOptions {
  bool quick = false;
  double rlSeconds = 10;
  int64_t rlPolish = RLOptions().polishEvaluations;
  bool rlRebalance = RLOptions().rebalance;
  bool rlCapRefinement = RLOptions().capRefinement;
  size_t minLayers = 0, maxLayers = SIZE_MAX;
  bool plans = false;
  std::vector<std::string> only;
  bool selected(const Case &c) const {
    return c.layers.size() >= minLayers && c.layers.size() <= maxLayers &&
           (only.empty() ||
            std::find(only.begin(), only.end(), c.name) != only.end());
  }
};

void runCase(const Case &c, const BenchOptions &options) {
  if (!options.selected(c))
    return;
  double ref = referenceThroughput(c.spec, c.layers);
  std::vector<std::pair<const char *, double>> constraints = {
      {"loose", 0.2}, {"tight", 0.6}, {"limits", 0.6}};
  if (c.spec.deviceTypes.size() >= 4)
    constraints.push_back({"high", 0.9});
  for (auto [constraint, floorShare] : constraints) {
    ClusterSpec spec = c.spec;
    if (std::strcmp(constraint, "limits") == 0)
      for (DeviceType &d : spec.deviceTypes)
        d.maxCount = std::max<int64_t>(1, d.maxCount / 4);
    PlacementProblem problem(spec, c.layers, floorShare * ref);

    ExactStats stats;
    SearchResult exact = placeExact(problem, &stats);
    SearchResult bestOneType;
    for (size_t t = 0; t < spec.deviceTypes.size(); ++t) {
      SearchResult r = placeAllOnType(problem, t);
      if (t == 0 || r.eval.betterThan(bestOneType.eval))
        bestOneType = r;
    }
    RLOptions rl;
    rl.timeBudgetSeconds = options.rlSeconds;
    rl.polishEvaluations = options.rlPolish;
    rl.rebalance = options.rlRebalance;
    rl.capRefinement = options.rlCapRefinement;
    SearchResult rlResult = placeRL(problem, rl);
    GeneticOptions ga;
    ga.budget = rlResult.evaluations;
    SearchResult genetic = placeGenetic(problem, ga);
    SearchResult random = placeRandom(problem, rlResult.evaluations, 1);
    SearchResult greedy = placeGreedy(problem);

    char optimal[64];
    if (exact.eval.feasible)
      std::snprintf(optimal, sizeof(optimal), "%.4g", exact.eval.cost);
    else
      std::snprintf(optimal, sizeof(optimal), "none (best %.4g/s)",
                    exact.eval.throughput);
    double opt = exact.eval.cost;
    std::printf(
        "| %s | %zu | %zu | %s | %s | %.3f (%lld caps, %lld passes, "
        "%lld tracked) | %s | %s | %s | %s | %s | %lld |\n",
        c.name.c_str(), c.layers.size(), spec.deviceTypes.size(), constraint,
        optimal, exact.seconds, static_cast<long long>(stats.capSteps),
        static_cast<long long>(stats.dpPasses),
        static_cast<long long>(stats.tracked), cell(rlResult, opt).c_str(),
        cell(genetic, opt).c_str(), cell(random, opt).c_str(),
        cell(greedy, opt).c_str(), cell(bestOneType, opt).c_str(),
        static_cast<long long>(rlResult.evaluations));
    if (options.plans)
      for (auto [name, result] :
           {std::pair{"exact", &exact}, {"rl", &rlResult}})
        std::printf("    %s: %s\n", name,
                    describeStages(spec, result->eval.stages).c_str());
    std::fflush(stdout);
  }
}

} // namespace

int main(int argc, char **argv) {
  BenchOptions options;
  std::vector<Case> reports;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "--rl-seconds" && i + 1 < argc) {
      options.rlSeconds = std::atof(argv[++i]);
    } else if (arg == "--rl-polish" && i + 1 < argc) {
      options.rlPolish = std::atoll(argv[++i]);
    } else if (arg == "--rl-no-rebalance") {
      options.rlRebalance = false;
    } else if (arg == "--rl-no-cap-refinement") {
      options.rlCapRefinement = false;
    } else if (arg == "--max-layers" && i + 1 < argc) {
      options.maxLayers = static_cast<size_t>(std::atoll(argv[++i]));
    } else if (arg == "--plans") {
      options.plans = true;
    } else if (arg == "--min-layers" && i + 1 < argc) {
      options.minLayers = static_cast<size_t>(std::atoll(argv[++i]));
    } else if (arg == "--only" && i + 1 < argc) {
      options.only.push_back(argv[++i]);
    } else if (arg == "--report" && i + 1 < argc) {
      std::string value = argv[++i];
      size_t eq = value.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "heterps-placement-bench: error: --report takes "
                             "NAME=FILE.json\n");
        return 2;
      }
      Case c;
      if (!readReport(value.substr(0, eq), value.substr(eq + 1), c))
        return 1;
      reports.push_back(std::move(c));
    } else {
      std::fprintf(
          stderr,
          "usage: heterps-placement-bench [--quick] [--rl-seconds S] "
          "[--rl-polish N] [--rl-no-rebalance] [--rl-no-cap-refinement] "
          "[--only NAME]... "
          "[--min-layers N] [--max-layers N] [--plans] "
          "[--report NAME=FILE.json]...\n");
      return 2;
    }
  }
  std::printf("Cells: cost / optimal cost · search time (rl's time budget "
              "%.0f s, %lld polish evaluations per batch, rebalance %s, cap "
              "refinement %s; "
              "genetic and random at rl's evaluation budget).\n\n",
              options.rlSeconds, static_cast<long long>(options.rlPolish),
              options.rlRebalance ? "on" : "off",
              options.rlCapRefinement ? "on" : "off");
  std::printf("| case | layers | types | constraint | optimal $ | exact s | rl "
              "| genetic | random | greedy | best one-type | rl evaluations "
              "|\n");
  std::printf("|---|---:|---:|---|---:|---|---|---|---|---|---|---:|\n");
  for (const Case &c : reports)
    runCase(c, options);
  std::vector<int> sizes = options.quick ? std::vector<int>{10, 50}
                                         : std::vector<int>{10, 50, 200, 1000};
  for (int n : sizes)
    for (int types : {2, 3, 4}) {
      Case c{"chain", makeSpec(types), {}};
      c.layers = makeChain(n, c.spec, 42 + n + types);
      runCase(c, options);
    }
  return 0;
}
