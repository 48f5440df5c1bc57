//===- StageExchange.h - values between pipeline stages ---------*- C++ -*-===//
//
// In one step, forward, the activations live across a stage boundary go
// from the stage before it to the stage after it; backward, their
// gradients go back. Workers put and take them by (direction, boundary,
// micro-batch). The Mailbox hands them over inside a process; a network
// implementation (Distributed/StageLinks) sends those bound for a replica
// in another process and delivers what arrives into its own Mailbox.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_PIPELINETRAIN_STAGEEXCHANGE_H
#define HETERPS_RUNTIME_PIPELINETRAIN_STAGEEXCHANGE_H

#include "heterps/Runtime/Tensor.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

namespace heterps::runtime::pipeline {

class StageExchange {
public:
  enum Direction { Forward = 0, Backward = 1 };
  virtual ~StageExchange();

  /// Step `step` begins: values of earlier steps are dropped and an abort
  /// is forgotten.
  virtual void begin(int64_t step) = 0;
  /// Forward: boundary b's values, from stage b to stage b + 1; backward:
  /// their gradients, from stage b + 1 to stage b.
  virtual void put(Direction dir, int boundary, int microBatch,
                   std::vector<Tensor> values) = 0;
  /// Waits for the slot's values; nothing once the step is aborted.
  virtual std::optional<std::vector<Tensor>> take(Direction dir, int boundary,
                                                  int microBatch) = 0;
  /// Wakes every waiter: a worker failed.
  virtual void abort() = 0;
};

/// The exchange inside one process. Values may arrive for a later step
/// than the current one (a faster process is already there): they wait
/// under their step.
class Mailbox : public StageExchange {
public:
  void begin(int64_t step) override;
  void put(Direction dir, int boundary, int microBatch,
           std::vector<Tensor> values) override;
  std::optional<std::vector<Tensor>> take(Direction dir, int boundary,
                                          int microBatch) override;
  void abort() override;

  /// Drops every value held, whatever its step, and forgets an abort and
  /// the current step (a job restored to an earlier step after a failure):
  /// until the next begin(), values for any step are kept.
  void clear();
  /// Values for step `step` (this one or a later one).
  void deliver(int64_t step, Direction dir, int boundary, int microBatch,
               std::vector<Tensor> values);
  int64_t step() const;

private:
  using Key = std::tuple<int64_t, int, int, int>;
  mutable std::mutex mutex;
  std::condition_variable changed;
  std::map<Key, std::vector<Tensor>> slots;
  int64_t current = 0;
  bool aborted = false;
};

} // namespace heterps::runtime::pipeline

#endif // HETERPS_RUNTIME_PIPELINETRAIN_STAGEEXCHANGE_H
