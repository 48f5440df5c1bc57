//===- MeasuredPlacement.h - heterps-run --strategy tapp --------*- C++ -*-===//

#ifndef HETERPS_TOOLS_HETERPS_RUN_MEASUREDPLACEMENT_H
#define HETERPS_TOOLS_HETERPS_RUN_MEASUREDPLACEMENT_H

#include "Training.h"

#include "heterps/Transforms/Passes.h"

namespace heterps::tools {

/// The oracle maker of --strategy tapp: each candidate plan of `module`
/// (costed by hps-annotate-costs, being placed) is trained pipelined on
/// this machine, as the training flags say, on the first batch of --data,
/// and timed (measure::MeasuredStepOracle). With --distributed=local each
/// candidate is trained as a job of local processes instead, as the run
/// will train (measure::CommandStepOracle: this command line for four
/// steps, placed by the candidate).
mlir::hps::StepOracleFactory measuredStepOracles(mlir::ModuleOp module,
                                                 TrainingRun run);

} // namespace heterps::tools

#endif // HETERPS_TOOLS_HETERPS_RUN_MEASUREDPLACEMENT_H
