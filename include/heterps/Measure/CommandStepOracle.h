//===- CommandStepOracle.h - step times from a training command -*- C++ -*-===//
//
// TAPP's reward measured the way the job will train when that is not this
// process: each candidate is handed to a command (heterps-run training as a
// job of local processes, say) as a placement file, and the command's
// report gives the measured step. The command places the model by that
// file itself (stages and replicas as hps-form-stages and hps-provision
// make them), so the oracle checks that it ran the candidate's stages.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_MEASURE_COMMANDSTEPORACLE_H
#define HETERPS_MEASURE_COMMANDSTEPORACLE_H

#include "heterps/Planner/Tapp.h"

#include <memory>
#include <string>
#include <vector>

namespace heterps::measure {

class CommandStepOracle : public planner::StepOracle {
public:
  /// `command` (a program's path, then its arguments) gets
  /// "--placement=FILE --report=FILE" added: FILE a JSON object of a device
  /// type per layer (hps-place save= format), the report a JSON object
  /// whose "pipeline" has "step_s" and whose "plan" has the "stages" run.
  /// `layers` and `spec` name the layers and device types of the stages
  /// asked about. `name` says how the command measures ("measured as
  /// local processes"). A run longer than `timeoutSeconds` fails.
  static llvm::Expected<std::unique_ptr<CommandStepOracle>>
  create(std::vector<std::string> command,
         const std::vector<planner::Layer> &layers,
         const planner::ClusterSpec &spec, std::string name,
         int timeoutSeconds = 600);
  ~CommandStepOracle() override;

  llvm::Expected<double>
  stepSeconds(const std::vector<planner::Stage> &stages) override;
  std::string name() const override { return name_; }

private:
  CommandStepOracle() = default;

  std::vector<std::string> command_;
  std::vector<std::string> layerNames_, typeNames_;
  std::string name_;
  int timeoutSeconds_ = 600;
  /// Where the placement, report and output of each run go.
  std::string workDir_;
};

} // namespace heterps::measure

#endif // HETERPS_MEASURE_COMMANDSTEPORACLE_H
