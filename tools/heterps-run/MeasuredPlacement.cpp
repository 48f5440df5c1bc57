//===- MeasuredPlacement.cpp - heterps-run --strategy tapp ----------------===//

#include "MeasuredPlacement.h"

#include "heterps/Measure/MeasuredStepOracle.h"
#include "heterps/Planner/Placement.h"
#include "heterps/Transforms/LowerToRuntime.h"

using namespace heterps;
using namespace heterps::tools;

mlir::hps::StepOracleFactory tools::measuredStepOracles(mlir::ModuleOp module,
                                                        TrainingRun run) {
  return [module, run](const planner::PlacementProblem &problem)
             -> llvm::Expected<std::unique_ptr<planner::StepOracle>> {
    // The model as placed so far: every op, the cluster's device types;
    // each measurement gives it a candidate's stages.
    mlir::FailureOr<runtime::plan::Plan> plan =
        mlir::hps::lowerToRuntimePlan(module);
    if (mlir::failed(plan))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "the model cannot be lowered to a "
                                     "runtime plan to measure");
    auto setup = measurementSetup(*plan, run);
    if (!setup)
      return setup.takeError();
    auto weights = runtime::loadWeights(
        *plan, [&](int32_t v) { return setup->sparseTables.count(v) > 0; });
    if (!weights)
      return weights.takeError();
    measure::MeasureOptions options;
    options.trainer = setup->trainer;
    options.learningRate = setup->learningRate;
    auto oracle = measure::MeasuredStepOracle::create(
        std::move(*plan), problem.layers(), problem.spec(), std::move(*weights),
        setup->inputs, setup->targets, options);
    if (!oracle)
      return oracle.takeError();
    return std::unique_ptr<planner::StepOracle>(std::move(*oracle));
  };
}
