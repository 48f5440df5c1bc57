//===- Training.h - heterps-run --train -------------------------*- C++ -*-===//

#ifndef HETERPS_TOOLS_HETERPS_RUN_TRAINING_H
#define HETERPS_TOOLS_HETERPS_RUN_TRAINING_H

#include "heterps/Runtime/PipelineTrain/PipelineTrainer.h"
#include "heterps/Runtime/Plan.pb.h"

#include "llvm/Support/CommandLine.h"

#include <set>

namespace heterps::tools {

/// The category of the training options (shown by --help).
llvm::cl::OptionCategory &trainingCategory();
/// The category of the pipelined-training options.
llvm::cl::OptionCategory &pipelineCategory();
/// Whether --train was given.
bool trainingRequested();

struct TrainingRun {
  std::string modelPath;
  /// Threads per kernel (0: all cores).
  int threads = 0;
  /// --batch, or 0 when not given.
  int64_t batch = 0;
  std::string reportPath;
  /// --emulate-missing-devices: ops placed on device kinds this runtime
  /// has no backend for train on the emulated device (else an error).
  bool emulateMissingDevices = false;
  /// With --cluster: the plan's report (hps-report format=json), which the
  /// run's --report includes as "plan".
  std::string planReport;
};

/// Notes on stderr that ops placed on `deviceType` `verb` ("run",
/// "train") on the emulated device.
void noteEmulatedDevice(const runtime::plan::Plan &plan,
                        llvm::StringRef deviceType, llvm::StringRef verb);

/// What --strategy tapp times each candidate plan with: the first --batch
/// samples of --data, the pipelined trainer's options as the training flags
/// give them, and the tables served sparsely.
struct MeasurementSetup {
  runtime::Tensor inputs, targets;
  runtime::pipeline::PipelineTrainerOptions trainer;
  float learningRate = 0.01f;
  std::set<int32_t> sparseTables;
};
llvm::Expected<MeasurementSetup>
measurementSetup(const runtime::plan::Plan &plan, const TrainingRun &run);

/// Trains `plan` as the training options say; prints progress and the
/// per-epoch table, writes the report and the trained model. Returns the
/// exit code (errors are one line on stderr).
int runTraining(const runtime::plan::Plan &plan, const TrainingRun &run);

} // namespace heterps::tools

#endif // HETERPS_TOOLS_HETERPS_RUN_TRAINING_H
