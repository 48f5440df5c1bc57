//===- Place.cpp - choose a device type per layer -------------------------===//

#include "PlanIR.h"
#include "heterps/Planner/Baselines.h"
#include "heterps/Planner/Exact.h"
#include "heterps/Planner/Placement.h"
#include "heterps/Planner/PlacementFile.h"
#include "heterps/Planner/RLPlacer.h"
#include "heterps/Planner/Tapp.h"
#include "heterps/Runtime/AtomicFile.h"
#include "heterps/Support/PrintableLine.h"
#include "heterps/Transforms/Passes.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace mlir::hps {
#define GEN_PASS_DEF_PLACE
#include "heterps/Transforms/Passes.h.inc"
} // namespace mlir::hps

using namespace mlir;
using namespace mlir::hps;
namespace planner = heterps::planner;

namespace {

struct PlacePass : public mlir::hps::impl::PlaceBase<PlacePass> {
  using PlaceBase::PlaceBase;

  /// strategy=tapp's oracle maker; empty: the cost model's oracle.
  StepOracleFactory makeOracle_;

  /// What goes into hps.search, gathered over the run.
  SmallVector<NamedAttribute> search_;
  /// The throughput floor of this run (throughputFloor).
  double floor_ = 0;

  /// The placement problem of `layers` under the pass's throughput floor.
  FailureOr<std::unique_ptr<planner::PlacementProblem>>
  makeProblem(ArrayRef<LayerOpInterface> layers,
              const planner::ClusterSpec &spec) {
    FailureOr<std::vector<planner::Layer>> costed =
        plannerLayers(layers, spec, "hps-place");
    if (failed(costed))
      return failure();
    return std::make_unique<planner::PlacementProblem>(spec, std::move(*costed),
                                                       floor_);
  }

  /// Runs a searching strategy; returns the device type name of each layer
  /// and records the search on the module as `hps.search`.
  FailureOr<std::vector<std::string>> search(ModuleOp module,
                                             ArrayRef<LayerOpInterface> layers,
                                             const planner::ClusterSpec &spec) {
    FailureOr<std::unique_ptr<planner::PlacementProblem>> made =
        makeProblem(layers, spec);
    if (failed(made))
      return failure();
    planner::PlacementProblem &problem = **made;
    int64_t evaluations = budget > 0 ? budget : 20000;

    planner::SearchResult result;
    if (strategy == "rl") {
      planner::RLOptions options;
      options.episodes = episodes;
      options.pretrainEpisodes = pretrainEpisodes;
      options.hiddenSize = hiddenSize;
      options.learningRate = learningRate;
      options.polishEvaluations = polish;
      options.rebalance = rebalance;
      options.capRefinement = capRefinement;
      options.seed = seed;
      options.timeBudgetSeconds = timeBudget;
      result = planner::placeRL(problem, options);
    } else if (strategy == "greedy") {
      result = planner::placeGreedy(problem);
    } else if (strategy == "random") {
      result = planner::placeRandom(problem, evaluations, seed);
    } else if (strategy == "genetic") {
      planner::GeneticOptions options;
      options.budget = evaluations;
      options.seed = seed;
      result = planner::placeGenetic(problem, options);
    } else if (strategy == "exact") {
      result = planner::placeExact(problem);
    } else if (strategy == "tapp") {
      FailureOr<planner::SearchResult> found = searchTapp(module, problem);
      if (failed(found))
        return failure();
      result = std::move(*found);
    } else {
      result = planner::placeBruteForce(problem);
      if (result.placement.empty())
        return emitError(module.getLoc())
               << "hps-place: strategy=exhaustive would try "
               << spec.deviceTypes.size() << "^" << layers.size()
               << " placements; use it on small models only";
    }

    Builder b(module.getContext());
    search_.insert(
        search_.begin(),
        {b.getNamedAttr("search_time_s", b.getF64FloatAttr(result.seconds)),
         b.getNamedAttr("evaluations",
                        b.getI64IntegerAttr(result.evaluations))});
    std::vector<std::string> names;
    for (size_t type : result.placement)
      names.push_back(spec.deviceTypes[type].name);
    return names;
  }

  /// The TAPP search with the oracle of makeOracle_ (else the cost model);
  /// records the oracle and every plan it timed in search_.
  FailureOr<planner::SearchResult>
  searchTapp(ModuleOp module, const planner::PlacementProblem &problem) {
    planner::TappOptions options;
    options.groups = tappGroups;
    options.maxMeasuredPlans = tappPlans;
    options.timeBudgetSeconds = timeBudget;
    options.seed = seed;
    std::unique_ptr<planner::StepOracle> oracle;
    if (makeOracle_) {
      llvm::Expected<std::unique_ptr<planner::StepOracle>> made =
          makeOracle_(problem);
      if (!made)
        return emitError(module.getLoc())
               << "hps-place: strategy=tapp: "
               << heterps::printableLine(llvm::toString(made.takeError()));
      oracle = std::move(*made);
    } else {
      oracle = std::make_unique<planner::CostModelOracle>(problem);
    }
    llvm::Expected<planner::TappResult> found =
        planner::placeTapp(problem, *oracle, options);
    if (!found)
      return emitError(module.getLoc())
             << "hps-place: strategy=tapp: "
             << heterps::printableLine(llvm::toString(found.takeError()));
    Builder b(module.getContext());
    const planner::ClusterSpec &spec = problem.spec();
    // "cpu x2 [0, 12), v100 x1 [12, 30)": the stages as timed.
    auto describe = [&](ArrayRef<planner::Stage> stages) {
      std::string text;
      for (const planner::Stage &stage : stages)
        text += llvm::formatv(
                    "{0}{1} x{2} [{3}, {4})", text.empty() ? "" : ", ",
                    spec.deviceTypes[stage.deviceType].name, stage.replicas,
                    stage.layers.front(), stage.layers.back() + 1)
                    .str();
      return b.getStringAttr(text);
    };
    SmallVector<Attribute> plans;
    for (const planner::FailedPlan &f : found->failed) {
      emitWarning(module.getLoc())
          << "hps-place: strategy=tapp: skipped a plan: "
          << heterps::printableLine(f.message);
      plans.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("stages", describe(f.stages)),
           b.getNamedAttr(
               "error", b.getStringAttr(heterps::printableLine(f.message)))}));
    }
    for (const planner::MeasuredPlan &m : found->measured) {
      SmallVector<NamedAttribute> entry = {
          b.getNamedAttr("stages", describe(m.stages)),
          b.getNamedAttr("predicted_step_s",
                         b.getF64FloatAttr(m.predictedStep)),
          b.getNamedAttr("measured_step_s", b.getF64FloatAttr(m.measuredStep)),
          b.getNamedAttr("feasible", b.getBoolAttr(m.eval.feasible))};
      if (m.eval.feasible)
        entry.push_back(b.getNamedAttr("cost", b.getF64FloatAttr(m.eval.cost)));
      plans.push_back(b.getDictionaryAttr(entry));
    }
    search_.push_back(
        b.getNamedAttr("oracle", b.getStringAttr(oracle->name())));
    search_.push_back(b.getNamedAttr("timed_plans", b.getArrayAttr(plans)));
    return std::move(found->best);
  }

  /// Runs the exact search beside the chosen placement and adds its figures
  /// to the search record: optimal_cost and gap when some plan is feasible
  /// (gap only when the chosen one is), else optimal_throughput, the best
  /// any plan reaches.
  LogicalResult certifyPlacement(ArrayRef<LayerOpInterface> layers,
                                 ArrayRef<std::string> devices,
                                 const planner::ClusterSpec &spec) {
    FailureOr<std::unique_ptr<planner::PlacementProblem>> made =
        makeProblem(layers, spec);
    if (failed(made))
      return failure();
    planner::PlacementProblem &problem = **made;
    planner::Placement chosen;
    for (const std::string &device : devices)
      chosen.push_back(*spec.find(device));
    planner::PlacementEval eval = problem.evaluate(chosen);
    planner::SearchResult optimum = planner::placeExact(problem);

    Builder b(&getContext());
    search_.push_back(
        b.getNamedAttr("certify_time_s", b.getF64FloatAttr(optimum.seconds)));
    if (!optimum.eval.feasible) {
      search_.push_back(b.getNamedAttr(
          "optimal_throughput", b.getF64FloatAttr(optimum.eval.throughput)));
      return success();
    }
    search_.push_back(
        b.getNamedAttr("optimal_cost", b.getF64FloatAttr(optimum.eval.cost)));
    if (eval.feasible)
      search_.push_back(b.getNamedAttr(
          "gap", b.getF64FloatAttr(optimum.eval.cost > 0
                                       ? (eval.cost - optimum.eval.cost) /
                                             optimum.eval.cost
                                       : 0.0)));
    return success();
  }

  /// Out-of-range numeric options: one error naming the option.
  LogicalResult checkSearchOptions(ModuleOp module) {
    auto bad = [&](const char *option, const char *expected) {
      return emitError(module.getLoc())
             << "hps-place: " << option << " must be " << expected;
    };
    if (hiddenSize < 1)
      return bad("hidden-size", "at least 1");
    if (!(learningRate > 0))
      return bad("learning-rate", "positive");
    if (!(timeBudget > 0))
      return bad("time-budget", "positive (seconds)");
    if (tappPlans < 1 || tappGroups < 1)
      return bad("tapp-plans and tapp-groups", "at least 1");
    if (episodes < 0 || pretrainEpisodes < 0 || polish < 0 || budget < 0)
      return bad("episodes, pretrain-episodes, polish and budget",
                 "non-negative");
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    search_.clear();
    FailureOr<planner::ClusterSpec> spec =
        loadRecordedSpec(module, "hps-place");
    FailureOr<func::FuncOp> func = getModelFunction(module, "hps-place");
    if (failed(spec) || failed(func))
      return signalPassFailure();
    FailureOr<double> floor =
        throughputFloor(module, "hps-place", throughputLimit, *spec);
    if (failed(floor))
      return signalPassFailure();
    floor_ = *floor;
    SmallVector<LayerOpInterface> layers = collectLayers(*func);

    // The device type name of each layer, by strategy.
    std::vector<std::string> devices;
    StringRef s = strategy;
    if (s.consume_front("all-")) {
      devices.assign(layers.size(), s.str());
    } else if (s == "manual") {
      if (placement.empty()) {
        emitError(module.getLoc(),
                  "hps-place: strategy=manual needs the 'placement' "
                  "option (a JSON file)");
        return signalPassFailure();
      }
      llvm::Expected<planner::PlacementFile> byNode =
          planner::loadPlacement(placement);
      if (!byNode) {
        emitError(module.getLoc())
            << "hps-place: "
            << heterps::printableLine(llvm::toString(byNode.takeError()));
        return signalPassFailure();
      }
      if (const std::string *node = firstUnknownLayer(layers, *byNode)) {
        emitError(module.getLoc())
            << "hps-place: " << placement << ": layer '"
            << heterps::printableLine(*node, 200) << "' is not in the model ("
            << byNode->size() << " entries, the model has " << layers.size()
            << " layers)";
        return signalPassFailure();
      }
      for (LayerOpInterface op : layers) {
        auto it = byNode->find(layerName(op));
        if (it == byNode->end()) {
          emitError(modelLoc(op)) << "hps-place: layer '" << layerName(op)
                                  << "' is not in " << placement;
          return signalPassFailure();
        }
        devices.push_back(it->second);
      }
    } else if (s == "rl" || s == "tapp" || s == "greedy" || s == "random" ||
               s == "genetic" || s == "exact" || s == "exhaustive") {
      if (failed(checkSearchOptions(module)))
        return signalPassFailure();
      FailureOr<std::vector<std::string>> searched =
          search(module, layers, *spec);
      if (failed(searched))
        return signalPassFailure();
      devices = std::move(*searched);
    } else {
      emitError(module.getLoc())
          << "hps-place: unknown strategy '" << strategy
          << "' (expected manual, all-<device type>, rl, tapp, greedy, "
             "random, genetic, exact or exhaustive)";
      return signalPassFailure();
    }

    Builder b(module.getContext());
    llvm::json::Object saved;
    for (auto [op, device] : llvm::zip(layers, devices)) {
      if (!spec->find(device)) {
        auto diag = emitError(module.getLoc())
                    << "hps-place: device type '"
                    << heterps::printableLine(device, 200) << "' (layer '"
                    << layerName(op)
                    << "') is not in the cluster spec, which has";
        // A few names say enough; a spec of thousands of types would make
        // the message megabytes long.
        constexpr size_t kShown = 8;
        for (const planner::DeviceType &d :
             llvm::ArrayRef(spec->deviceTypes).take_front(kShown))
          diag << " '" << heterps::printableLine(d.name, 80) << "'";
        if (spec->deviceTypes.size() > kShown)
          diag << " and " << spec->deviceTypes.size() - kShown << " more";
        return signalPassFailure();
      }
      op->setAttr(HPSDialect::kDeviceAttrName,
                  DeviceAttr::get(b.getContext(), device));
      saved[layerName(op)] = device;
      // A new placement invalidates earlier stages and provisioning.
      op->removeAttr(HPSDialect::kStageAttrName);
    }
    module->removeAttr(HPSDialect::kReplicasAttrName);
    module->removeAttr(HPSDialect::kThroughputLimitAttrName);
    if (certify) {
      // manual and all-<type> searched nothing: no time, no evaluations.
      if (search_.empty())
        search_ = {b.getNamedAttr("search_time_s", b.getF64FloatAttr(0)),
                   b.getNamedAttr("evaluations", b.getI64IntegerAttr(0))};
      if (failed(certifyPlacement(layers, devices, *spec)))
        return signalPassFailure();
    }
    if (search_.empty()) {
      module->removeAttr(HPSDialect::kSearchAttrName);
    } else {
      search_.push_back(b.getNamedAttr("strategy", b.getStringAttr(strategy)));
      module->setAttr(HPSDialect::kSearchAttrName,
                      b.getDictionaryAttr(search_));
    }
    if (!save.empty()) {
      if (llvm::Error err = heterps::runtime::writeJsonFileAtomically(
              save, llvm::json::Value(std::move(saved)))) {
        emitError(module.getLoc())
            << "hps-place: " << llvm::toString(std::move(err));
        return signalPassFailure();
      }
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::hps::createPlace(PlaceOptions options,
                                             StepOracleFactory makeOracle) {
  auto pass = std::make_unique<PlacePass>(std::move(options));
  pass->makeOracle_ = std::move(makeOracle);
  return pass;
}
