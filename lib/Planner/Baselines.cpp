//===- Baselines.cpp - greedy, random and genetic placement ---------------===//
//
// See Baselines.h for what each strategy does.
//
//===----------------------------------------------------------------------===//

#include "heterps/Planner/Baselines.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <utility>

using namespace heterps::planner;

namespace {

//===----------------------------------------------------------------------===//
// Shared pieces
//===----------------------------------------------------------------------===//

/// SplitMix64 with unbiased bounded draws: the same stream for a seed on
/// every platform, unlike the std distributions.
class Rng {
public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  /// Uniform in [0, n); n must be positive.
  size_t below(size_t n) {
    uint64_t bound = static_cast<uint64_t>(n);
    // Reject the lowest 2^64 mod n values so that every residue is equally
    // likely.
    uint64_t threshold = (0 - bound) % bound;
    uint64_t r = next();
    while (r < threshold)
      r = next();
    return static_cast<size_t>(r % bound);
  }

  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
  uint64_t state_;
};

/// Each layer an independent uniform type.
Placement uniformPlacement(size_t layers, size_t types, Rng &rng) {
  Placement p(layers);
  for (size_t &type : p)
    type = rng.below(types);
  return p;
}

/// Runs of one type: s uniform in 1..min(n, 8) runs, s - 1 distinct cut
/// points among the n - 1 layer boundaries, a uniform type per run.
Placement randomRuns(size_t layers, size_t types, Rng &rng) {
  if (layers == 0)
    return {};
  size_t runs = 1 + rng.below(std::min<size_t>(layers, 8));
  // Partial Fisher-Yates: the first runs - 1 boundaries end up a uniform
  // sample without replacement.
  std::vector<size_t> boundaries(layers - 1);
  std::iota(boundaries.begin(), boundaries.end(), 1);
  for (size_t j = 0; j + 1 < runs; ++j)
    std::swap(boundaries[j], boundaries[j + rng.below(boundaries.size() - j)]);
  std::vector<size_t> ends(boundaries.begin(), boundaries.begin() + runs - 1);
  std::sort(ends.begin(), ends.end());
  ends.push_back(layers);

  Placement p(layers);
  size_t begin = 0;
  for (size_t end : ends) {
    std::fill(p.begin() + begin, p.begin() + end, rng.below(types));
    begin = end;
  }
  return p;
}

//===----------------------------------------------------------------------===//
// Greedy
//===----------------------------------------------------------------------===//

/// A layer alone on one device type, as the greedy sees it.
struct LayerOption {
  bool meetsFloor = false;
  double pricePerSecond = 0; // p_t * k_t, when it meets the floor
  double throughput = 0;     // at k_t, or at max_count when it does not
};

LayerOption layerOption(const PlacementProblem &problem, const Layer &layer,
                        size_t type) {
  const DeviceType &device = problem.spec().deviceTypes[type];
  int64_t batch = problem.spec().job.batchSize;
  int64_t cap = std::max<int64_t>(1, device.maxCount);
  LayerOption option;
  for (int64_t k = 1; k <= cap; ++k) {
    double et = layerTimes(layer.costs[type], batch, k).et();
    option.throughput = et > 0 ? static_cast<double>(batch) / et
                               : std::numeric_limits<double>::infinity();
    if (option.throughput >= problem.limit()) {
      option.meetsFloor = true;
      option.pricePerSecond = device.pricePerSecond() * static_cast<double>(k);
      break;
    }
  }
  return option;
}

/// The cheapest type meeting the floor on its own; failing that, the type
/// with the highest throughput. Ties go to the lower index.
size_t greedyType(const PlacementProblem &problem, const Layer &layer) {
  std::optional<size_t> cheapest;
  double cheapestPrice = 0;
  size_t fastest = 0;
  double fastestThroughput = -1;
  for (size_t t = 0; t < problem.numTypes(); ++t) {
    LayerOption option = layerOption(problem, layer, t);
    if (option.meetsFloor &&
        (!cheapest || option.pricePerSecond < cheapestPrice)) {
      cheapest = t;
      cheapestPrice = option.pricePerSecond;
    }
    if (option.throughput > fastestThroughput) {
      fastest = t;
      fastestThroughput = option.throughput;
    }
  }
  return cheapest ? *cheapest : fastest;
}

//===----------------------------------------------------------------------===//
// Genetic
//===----------------------------------------------------------------------===//

/// Probability that a child also gets a segment mutation.
constexpr double kSegmentMutationProbability = 0.25;

struct Individual {
  Placement genes;
  PlacementEval eval;
};

class GeneticSearch {
public:
  GeneticSearch(const PlacementProblem &problem, const GeneticOptions &options)
      : problem_(problem), options_(options), best_(problem),
        rng_(options.seed), layers_(problem.numLayers()),
        types_(problem.numTypes()), populationSize_(static_cast<size_t>(
                                        std::max(2, options.populationSize))) {}

  SearchResult run() {
    std::vector<Individual> population = initialPopulation();
    while (budgetLeft()) {
      rank(population);
      population = nextGeneration(population);
    }
    return best_.finish();
  }

private:
  bool budgetLeft() const { return best_.spent() < options_.budget; }

  /// Evaluates `genes` and appends them to `population`.
  void add(std::vector<Individual> &population, Placement genes) {
    PlacementEval eval = best_.evaluate(genes);
    population.push_back({std::move(genes), std::move(eval)});
  }

  /// All-one-type plans, the greedy plan, then random runs.
  std::vector<Individual> initialPopulation() {
    std::vector<Placement> seeds;
    for (size_t t = 0; t < types_; ++t)
      seeds.push_back(Placement(layers_, t));
    seeds.push_back(greedyPlacement(problem_));
    while (seeds.size() < populationSize_)
      seeds.push_back(randomRuns(layers_, types_, rng_));
    seeds.resize(populationSize_);

    std::vector<Individual> population;
    for (Placement &genes : seeds) {
      if (!budgetLeft())
        break;
      add(population, std::move(genes));
    }
    return population;
  }

  /// Best first; equally good individuals keep their order.
  static void rank(std::vector<Individual> &population) {
    std::stable_sort(population.begin(), population.end(),
                     [](const Individual &a, const Individual &b) {
                       return a.eval.betterThan(b.eval);
                     });
  }

  /// `ranked` is best first.
  std::vector<Individual>
  nextGeneration(const std::vector<Individual> &ranked) {
    size_t elite = std::min<size_t>(std::max(0, options_.elite), ranked.size());
    std::vector<Individual> next(ranked.begin(), ranked.begin() + elite);
    while (next.size() < populationSize_ && budgetLeft()) {
      const Placement &first = select(ranked).genes;
      const Placement &second = select(ranked).genes;
      Placement child = crossover(first, second);
      mutate(child);
      if (child == first || child == second)
        pointMutation(child);
      add(next, std::move(child));
    }
    return next;
  }

  /// Tournament selection: the best of `tournament` uniform draws.
  const Individual &select(const std::vector<Individual> &population) {
    const Individual *winner = &population[rng_.below(population.size())];
    for (int i = 1; i < options_.tournament; ++i) {
      const Individual &other = population[rng_.below(population.size())];
      if (other.eval.betterThan(winner->eval))
        winner = &other;
    }
    return *winner;
  }

  /// Two-point crossover: `first` with a uniform range taken from `second`.
  Placement crossover(const Placement &first, const Placement &second) {
    size_t a = rng_.below(layers_ + 1), b = rng_.below(layers_ + 1);
    if (a > b)
      std::swap(a, b);
    Placement child = first;
    std::copy(second.begin() + a, second.begin() + b, child.begin() + a);
    return child;
  }

  /// Per-gene mutation, then perhaps a segment mutation.
  void mutate(Placement &genes) {
    if (types_ > 1)
      for (size_t &type : genes)
        if (rng_.uniform() < options_.mutationRate)
          type = otherType(type);
    if (layers_ > 0 && rng_.uniform() < kSegmentMutationProbability) {
      size_t begin = rng_.below(layers_);
      size_t end = begin + 1 + rng_.below(layers_ - begin);
      std::fill(genes.begin() + begin, genes.begin() + end, rng_.below(types_));
    }
  }

  /// Moves one uniform layer to another type.
  void pointMutation(Placement &genes) {
    if (layers_ == 0 || types_ < 2)
      return;
    size_t &type = genes[rng_.below(layers_)];
    type = otherType(type);
  }

  /// A uniform type other than `type`; needs two types or more.
  size_t otherType(size_t type) {
    return (type + 1 + rng_.below(types_ - 1)) % types_;
  }

  const PlacementProblem &problem_;
  const GeneticOptions &options_;
  SearchTracker best_;
  Rng rng_;
  size_t layers_, types_, populationSize_;
};

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

Placement heterps::planner::greedyPlacement(const PlacementProblem &problem) {
  Placement p;
  for (const Layer &layer : problem.layers())
    p.push_back(greedyType(problem, layer));
  return p;
}

SearchResult heterps::planner::placeGreedy(const PlacementProblem &problem) {
  SearchTracker best(problem);
  if (problem.numTypes() > 0)
    best.evaluate(greedyPlacement(problem));
  return best.finish();
}

SearchResult heterps::planner::placeRandom(const PlacementProblem &problem,
                                           int64_t budget, uint64_t seed) {
  SearchTracker best(problem);
  if (problem.numTypes() == 0)
    return best.finish();
  Rng rng(seed);
  size_t layers = problem.numLayers(), types = problem.numTypes();
  for (int64_t i = 0; i < budget; ++i)
    best.evaluate(i % 2 == 0 ? uniformPlacement(layers, types, rng)
                             : randomRuns(layers, types, rng));
  return best.finish();
}

SearchResult heterps::planner::placeGenetic(const PlacementProblem &problem,
                                            const GeneticOptions &options) {
  if (problem.numTypes() == 0)
    return SearchTracker(problem).finish();
  return GeneticSearch(problem, options).run();
}
