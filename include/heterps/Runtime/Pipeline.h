//===- Pipeline.h - a plan's stages as a pipeline over batches --*- C++ -*-===//
//
// The ops of a plan carry a stage (hps.stage, consecutive ops share one).
// PipelineExecutor cuts the plan into one sub-plan per stage and runs each
// stage on its own worker threads, k per stage (the plan's replica count for
// the stage, or an override), each with its own sequential Executor. A
// stream of batches flows through bounded queues between the stages: while
// stage 2 works on batch i, stage 1 works on batch i + 1, so a multi-stage
// plan overlaps its stages. The replicas of a stage take batches from a
// shared queue; results come back in the order of the batches.
//
// What moves between stages is a batch's environment: the values computed
// so far that a later stage or a graph output still needs. Each replica
// loads its stage's weights itself (k copies), which keeps load-time fusion
// per executor. The first error of any worker stops the pipeline and is
// returned; no thread is left waiting.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_PIPELINE_H
#define HETERPS_RUNTIME_PIPELINE_H

#include "heterps/Runtime/Executor.h"

#include <memory>
#include <vector>

namespace heterps::runtime {

struct PipelineOptions {
  /// For every stage's executors (numThreads is per worker).
  ExecutorOptions executor;
  /// Batches a queue between two stages holds.
  int queueCapacity = 2;
  /// Replicas per stage; empty: the plan's (Stage::replicas, at least 1).
  std::vector<int> replicas;
};

struct StageStats {
  int firstOp = 0, numOps = 0;
  int replicas = 1;
  /// Seconds the stage's workers spent running batches, summed over them.
  double busySeconds = 0;
  int64_t batches = 0;
};

class PipelineExecutor {
public:
  static llvm::Expected<std::unique_ptr<PipelineExecutor>>
  create(const plan::Plan &plan, PipelineOptions options = {});
  ~PipelineExecutor();

  /// Runs every batch of `stream` (each the graph inputs, in graph-input
  /// order) through the stages; returns each batch's graph outputs, in
  /// stream order.
  llvm::Expected<std::vector<std::vector<Tensor>>>
  run(const std::vector<std::vector<Tensor>> &stream);

  int numStages() const { return static_cast<int>(stages.size()); }
  /// Figures of the last run().
  const std::vector<StageStats> &stats() const { return lastStats; }

private:
  struct Stage;
  PipelineExecutor() = default;

  plan::Plan program;
  std::vector<std::unique_ptr<Stage>> stages;
  std::vector<StageStats> lastStats;
  PipelineOptions options;
};

/// The plan's stages as [first op, end op) ranges of its op list: a new
/// stage wherever Op::stage changes.
std::vector<std::pair<int, int>> stageRanges(const plan::Plan &plan);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_PIPELINE_H
