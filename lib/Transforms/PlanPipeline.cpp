//===- PlanPipeline.cpp - the hps-plan pass pipeline
//-----------------------===//
//
// A model in, a plan out, in one option: costs, placement, stages and
// replicas, as heterps-opt --hps-plan='cluster=... strategy=...' and the
// Python package's heterps.plan() run them.
//
//===----------------------------------------------------------------------===//

#include "heterps/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::hps;

void mlir::hps::buildPlanPipeline(OpPassManager &pm,
                                  const PlanPipelineOptions &options) {
  pm.addPass(createAnnotateCosts({options.cluster, options.profile}));
  PlaceOptions place;
  place.strategy = options.strategy;
  place.placement = options.placement;
  place.throughputLimit = options.throughputLimit;
  place.seed = options.seed;
  place.timeBudget = options.timeBudget;
  place.certify = options.certify;
  pm.addPass(createPlace(place));
  pm.addPass(createFormStages());
  pm.addPass(createProvision({options.throughputLimit}));
}

void mlir::hps::registerPlanPipeline() {
  PassPipelineRegistration<PlanPipelineOptions>(
      "hps-plan",
      "Plan a model: hps-annotate-costs, hps-place, hps-form-stages and "
      "hps-provision with one set of options",
      buildPlanPipeline);
}
