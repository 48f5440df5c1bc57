//===- Shards.h - one shard of a dense or a sparse table --------*- C++ -*-===//
//
// Internal to the parameter server. Each table shard has its own lock, so
// pushes to different tables or shards never wait for each other; pulls
// share the lock.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_PS_SHARDS_H
#define HETERPS_LIB_RUNTIME_PS_SHARDS_H

#include "heterps/Runtime/PS/ParameterServer.h"

#include <condition_variable>
#include <unordered_map>

namespace heterps::runtime::ps {

/// The BSP bookkeeping of one table shard: its version (updates applied)
/// and which workers have pushed for the next one. Used under the shard's
/// lock.
class StepGate {
public:
  StepGate(std::string table, int workers)
      : table(std::move(table)), pushed(workers, false) {}

  int64_t version() const { return applied; }
  /// Records `worker`'s push computed from version `step`: an error for an
  /// unknown worker, a step other than the current version, or a second
  /// push; else how many workers have pushed for this version.
  llvm::Expected<int> arrive(int worker, int64_t step);
  /// The errors arrive would give, without recording anything (a piece of
  /// a push that is not the last).
  llvm::Error check(int worker, int64_t step) const;
  /// The update is applied: next version, pullers woken.
  void advance();
  /// Starts over at `version` with no pushes (a restored table); the
  /// pulls waiting for a version fail.
  void reset(int64_t version);
  /// Waits (releasing `lock`) until version >= `minVersion`; an error
  /// naming the missing workers after `timeout`, or when the table is
  /// restored meanwhile (the step it waited in was given up).
  template <typename Lock>
  llvm::Error waitFor(Lock &lock, int64_t minVersion,
                      std::chrono::milliseconds timeout) {
    int64_t resetsBefore = resets;
    if (changed.wait_for(lock, timeout, [&] {
          return applied >= minVersion || resets != resetsBefore;
        }))
      return applied >= minVersion ? llvm::Error::success()
                                   : restoredWhileWaiting(minVersion);
    return timedOut(minVersion, timeout);
  }

private:
  llvm::Error timedOut(int64_t minVersion,
                       std::chrono::milliseconds timeout) const;
  llvm::Error restoredWhileWaiting(int64_t minVersion) const;

  std::string table;
  int64_t applied = 0;
  std::vector<bool> pushed;
  int arrived = 0;
  int64_t resets = 0;
  std::condition_variable_any changed;
};

class DenseShard {
public:
  DenseShard(const TableInfo &info, Tensor values,
             const ServerOptions &options);
  llvm::Error pull(const PullRequest &request, PullResponse &response);
  llvm::Error push(const PushRequest &request, PushResponse &response);
  /// Copies the shard's range of the table's state into `state` (whose
  /// tensors have the whole table's length), starting at `offset`.
  void save(DenseTableState &state, int64_t offset);
  /// The inverse of save.
  void restore(const DenseTableState &state, int64_t offset);

private:
  const ServerOptions &options;
  std::string table;
  int workers;
  std::shared_mutex mutex;
  StepGate gate;
  Tensor values;
  /// BSP: the sum of this version's gradients; ASP: the pushed gradient.
  Tensor pending;
  /// BSP: values each worker has pushed for this version (its pieces), and
  /// whether any has: the first piece of a version starts the sum.
  std::vector<int64_t> received;
  bool started = false;
  train::Optimizer optimizer;
};

class SparseShard {
public:
  SparseShard(const TableInfo &info, int shard, float initScale, uint64_t seed,
              const ServerOptions &options);
  llvm::Error pull(const PullRequest &request, PullResponse &response);
  llvm::Error push(const PushRequest &request, PushResponse &response);
  int64_t storedRows();
  /// Appends the stored rows' ids, values and accumulators (Adagrad);
  /// returns the shard's version.
  int64_t save(std::vector<int64_t> &ids, std::vector<float> &rows,
               std::vector<float> &accumulators);
  /// Replaces the stored rows (this shard's ids only) and the version.
  void restore(llvm::ArrayRef<int64_t> ids, llvm::ArrayRef<const float *> rows,
               llvm::ArrayRef<const float *> accumulators, int64_t version);

private:
  llvm::Error checkId(int64_t id) const;
  /// The row's initial value (never stored until it is updated).
  void initialRow(int64_t id, float *row) const;
  /// Applies the optimizer to row `id` with gradient `grad`.
  void update(int64_t id, const float *grad, float lr);

  const ServerOptions &options;
  TableInfo info;
  int shard;
  float initScale;
  uint64_t seed;
  std::shared_mutex mutex;
  StepGate gate;
  /// Stored rows: id -> index into `values` / `accumulators` (dim each).
  std::unordered_map<int64_t, int64_t> slots;
  std::vector<float> values, accumulators;
  /// BSP: this version's summed gradients by id.
  std::unordered_map<int64_t, int64_t> pendingSlots;
  std::vector<float> pending;
};

} // namespace heterps::runtime::ps

#endif // HETERPS_LIB_RUNTIME_PS_SHARDS_H
