//===- MeasuredPlacement.cpp - heterps-run --strategy tapp ----------------===//

#include "MeasuredPlacement.h"

#include "Distributed.h"

#include "heterps/Measure/CommandStepOracle.h"
#include "heterps/Measure/MeasuredStepOracle.h"
#include "heterps/Planner/Placement.h"
#include "heterps/Runtime/Distributed/Launch.h"
#include "heterps/Transforms/LowerToRuntime.h"

using namespace heterps;
using namespace heterps::tools;

/// Each candidate trained as a job of local processes: this run's command
/// line for a few steps, placed by the candidate, without what would write
/// files or search again.
static llvm::Expected<std::unique_ptr<planner::StepOracle>>
localJobOracle(const planner::PlacementProblem &problem) {
  auto self = runtime::distributed::selfExecutable();
  if (!self)
    return self.takeError();
  auto args = ownArgumentsWithout(
      {"strategy", "tapp-plans", "search-seconds", "placement", "report",
       "trace", "checkpoint", "checkpoint-every", "epochs", "eval-data",
       "max-steps", "save-model", "stop-after-steps", "output-dir",
       "profile-out"},
      {"resume", "op-times"});
  if (!args)
    return args.takeError();
  std::vector<std::string> command = {*self};
  command.insert(command.end(), args->begin(), args->end());
  // The report's step is the mean of the steps after the first, as the
  // in-process oracle's 1 warm-up and 3 timed steps: four epochs of one
  // step, which any --data of a batch or more has.
  command.insert(command.end(), {"--epochs=4", "--max-steps=1"});
  auto oracle = measure::CommandStepOracle::create(
      std::move(command), problem.layers(), problem.spec(),
      "measured as local processes");
  if (!oracle)
    return oracle.takeError();
  return std::unique_ptr<planner::StepOracle>(std::move(*oracle));
}

mlir::hps::StepOracleFactory tools::measuredStepOracles(mlir::ModuleOp module,
                                                        TrainingRun run) {
  if (launchesLocalJob())
    return localJobOracle;
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
