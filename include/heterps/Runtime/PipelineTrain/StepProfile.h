//===- StepProfile.h - measured steps vs the cost model ---------*- C++ -*-===//
//
// Sums the per-replica figures of a run's steps and predicts the step time
// from them two ways:
//  * the HeterPS cost model (planner::evaluatePlan): each stage a "layer"
//    whose compute time is the measured work of one micro-batch stream
//    (split perfectly across replicas, alpha = 1) and whose communication
//    time is one replica's PS traffic (beta = 0); the pipeline's step is
//    B / throughput = max over stages of max(CT, DT): steady state,
//    communication overlapped, no fill or drain.
//  * the schedule: a step is a flush, so it pays the fill and drain and
//    does not overlap the PS calls: the slowest pull, then the schedule
//    simulated with each stage's measured forward and backward time per
//    micro-batch (simulateSchedule), then the slowest push.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_PIPELINETRAIN_STEPPROFILE_H
#define HETERPS_RUNTIME_PIPELINETRAIN_STEPPROFILE_H

#include "heterps/Runtime/PipelineTrain/PipelineTrainer.h"

namespace heterps::runtime::pipeline {

class StepProfile {
public:
  StepProfile(ScheduleKind schedule, int microBatches)
      : schedule(schedule), microBatches(microBatches) {}

  void add(const PipelineStepStats &step);
  int64_t steps() const { return count; }

  /// Mean seconds per step.
  struct Stage {
    int replicas = 0;
    /// Summed over the stage's replicas: what one device would do.
    double forward = 0, backward = 0;
    /// Per replica (their mean).
    double pull = 0, push = 0;
    int stashSlots = 0;
  };
  std::vector<Stage> stages() const;
  double stepSeconds() const { return count ? seconds / count : 0; }
  double bubbleFraction() const { return count ? bubbles / count : 0; }

  struct Prediction {
    double costModelSeconds = 0, scheduleSeconds = 0;
    /// The simulated schedule's idle share of its compute phase.
    double scheduleBubble = 0;
  };
  Prediction predict() const;

private:
  ScheduleKind schedule;
  int microBatches;
  int64_t count = 0;
  double seconds = 0, bubbles = 0;
  /// Per stage, sums over steps (forward and backward over replicas too).
  std::vector<Stage> sums;
};

} // namespace heterps::runtime::pipeline

#endif // HETERPS_RUNTIME_PIPELINETRAIN_STEPPROFILE_H
