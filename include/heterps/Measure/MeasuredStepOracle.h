//===- MeasuredStepOracle.h - step times measured by the runtime -*- C++
//-*-===//
//
// TAPP's reward is the measured time of a training batch under a candidate
// plan. This oracle measures it on this machine: it gives the model's
// runtime plan the candidate's stages (each layer's op its stage and device
// type, each stage its replicas), trains it pipelined through the parameter
// server for a few warm-up and timed steps on one batch, and reports the
// mean of the timed steps. Stages on device kinds this machine has no
// backend for run on the emulated device when the trainer options say so.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_MEASURE_MEASUREDSTEPORACLE_H
#define HETERPS_MEASURE_MEASUREDSTEPORACLE_H

#include "heterps/Planner/Tapp.h"
#include "heterps/Runtime/PipelineTrain/PipelineTrainer.h"
#include "heterps/Runtime/Weights.h"

#include <memory>
#include <string>
#include <vector>

namespace heterps::measure {

struct MeasureOptions {
  /// Schedule, micro-batches, threads, loss, optimizer, emulation; the
  /// replicas come from each candidate.
  runtime::pipeline::PipelineTrainerOptions trainer;
  /// Steps run before the timed ones (the first sets up the kernels).
  int warmupSteps = 1;
  /// Steps timed; their mean is the answer.
  int timedSteps = 3;
  float learningRate = 0.01f;
};

class MeasuredStepOracle : public planner::StepOracle {
public:
  /// `plan`: the model lowered with the cluster's device types; `layers`:
  /// the planner's layers in order (their names are the ops' names);
  /// `weights`: the plan's weights (left out: sparse tables), copied for
  /// each measurement; `inputs` and `targets`: the batch every step trains
  /// on. Fails when a layer has no op or the options are invalid.
  static llvm::Expected<std::unique_ptr<MeasuredStepOracle>>
  create(runtime::plan::Plan plan, const std::vector<planner::Layer> &layers,
         const planner::ClusterSpec &spec, runtime::WeightMap weights,
         runtime::Tensor inputs, runtime::Tensor targets,
         MeasureOptions options);

  llvm::Expected<double>
  stepSeconds(const std::vector<planner::Stage> &stages) override;
  std::string name() const override { return "measured"; }

  /// The runtime plan with `stages`: each op in the stage of its layer (an
  /// op that is no layer joins the stage of the layer before it), on that
  /// stage's device type, and the stages' replicas.
  runtime::plan::Plan planFor(const std::vector<planner::Stage> &stages) const;

private:
  MeasuredStepOracle() = default;

  runtime::plan::Plan plan_;
  /// Per op of the plan, its layer's index, or -1 for an op that is none.
  std::vector<int> layerOfOp_;
  std::vector<std::string> typeNames_;
  runtime::WeightMap weights_;
  runtime::Tensor inputs_, targets_;
  MeasureOptions options_;
};

} // namespace heterps::measure

#endif // HETERPS_MEASURE_MEASUREDSTEPORACLE_H
