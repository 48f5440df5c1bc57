//===- Schedule.h - forwards and backwards per stage ------------*- C++ -*-===//
//
// A training step cuts its batch into `m` micro-batches that flow through
// `p` stages. A schedule fixes the order in which each stage runs its
// forward (F) and backward (B) tasks:
//   * GPipe: all m forwards, then all m backwards; a stage holds the
//     activations of all m micro-batches at once.
//   * 1F1B: stage s (of p, from 0) runs min(p - s - 1, m) forwards to fill
//     the pipeline, then alternates one forward and one backward, then
//     drains the backwards; it holds at most p - s micro-batches.
// Both have the bubble fraction (p - 1) / (m + p - 1) when the stages are
// balanced; 1F1B needs less memory.
//
// A stage with k replicas gives micro-batch j to replica j % k; each
// replica runs its micro-batches' tasks in the single-replica order. That
// order has a timeline in which every task starts after the tasks it waits
// for (the schedules' diagrams), so the earliest unfinished task of that
// timeline can always run: replicas never wait on each other in a cycle.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_PIPELINETRAIN_SCHEDULE_H
#define HETERPS_RUNTIME_PIPELINETRAIN_SCHEDULE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace heterps::runtime::pipeline {

enum class ScheduleKind { GPipe, OneFOneB };

/// "gpipe" or "1f1b"; an error names both.
llvm::Expected<ScheduleKind> parseSchedule(llvm::StringRef name);
const char *scheduleName(ScheduleKind kind);

struct Task {
  enum Kind { Forward, Backward } kind;
  int microBatch;
  bool operator==(const Task &other) const {
    return kind == other.kind && microBatch == other.microBatch;
  }
};

/// The order of stage `stage`'s tasks when each stage has one replica.
std::vector<Task> stageOrder(ScheduleKind kind, int stage, int stages,
                             int microBatches);

/// Tasks per stage and replica: result[s][r] is what replica r of stage s
/// runs, in order, when stage s has replicas[s] replicas.
std::vector<std::vector<std::vector<Task>>>
replicaOrders(ScheduleKind kind, int microBatches,
              llvm::ArrayRef<int> replicas);

/// The most micro-batches whose forward has run and backward has not, at
/// any point of `order`: the activations a replica stashes at once.
int peakStash(llvm::ArrayRef<Task> order);

/// How long a step's tasks take when every forward of stage s takes
/// forward[s] and every backward backward[s] (any unit): each replica runs
/// its order, a task starting once its replica is free and its input is
/// there. Returns the makespan.
double simulateSchedule(ScheduleKind kind, int microBatches,
                        llvm::ArrayRef<int> replicas,
                        llvm::ArrayRef<double> forward,
                        llvm::ArrayRef<double> backward);

/// The schedule's idle fraction of p stages over m micro-batches of equal
/// cost: (p - 1) / (m + p - 1).
double idealBubbleFraction(int stages, int microBatches);

} // namespace heterps::runtime::pipeline

#endif // HETERPS_RUNTIME_PIPELINETRAIN_SCHEDULE_H
