//===- BatchLoader.h - shuffled mini-batches, prefetched --------*- C++ -*-===//
//
// Cuts a Dataset into mini-batches for one epoch at a time. The sample order
// of epoch e is a Fisher-Yates permutation driven by a generator seeded from
// (seed, e) alone, so it is reproducible, the same whatever happened in other
// epochs, and a resumed run can start mid-training at any epoch and batch.
// Batches are gathered on a background thread into a bounded queue
// (`prefetch` batches ahead) while the trainer works on the current one;
// prefetching never changes what the batches hold.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_DATA_BATCHLOADER_H
#define HETERPS_RUNTIME_DATA_BATCHLOADER_H

#include "heterps/Runtime/Data/Dataset.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace heterps::runtime::data {

struct Batch {
  Tensor inputs, targets;
  int64_t index = 0; // within the epoch
};

struct BatchLoaderOptions {
  int64_t batchSize = 32;
  bool shuffle = true;
  /// Leave out the last batch of an epoch when it is smaller.
  bool dropLast = false;
  uint64_t seed = 1;
  /// Batches gathered ahead on the background thread; 0 gathers each batch
  /// in next() itself.
  int prefetch = 2;
};

class BatchLoader {
public:
  /// `data` must outlive the loader.
  BatchLoader(const Dataset &data, BatchLoaderOptions options);
  ~BatchLoader();
  BatchLoader(const BatchLoader &) = delete;
  BatchLoader &operator=(const BatchLoader &) = delete;

  /// Batches per epoch.
  int64_t numBatches() const;
  /// Starts epoch `epoch` at batch `firstBatch` (abandoning the current one).
  void startEpoch(int64_t epoch, int64_t firstBatch = 0);
  /// The next batch of the epoch, or nothing at its end.
  std::optional<Batch> next();
  /// The sample order of `epoch`.
  std::vector<int64_t> order(int64_t epoch) const;

private:
  Batch gather(int64_t index) const;
  void stopWorker();
  void work();

  const Dataset &data_;
  BatchLoaderOptions options_;
  std::vector<int64_t> order_;
  int64_t nextBatch_ = 0, end_ = 0;

  // The prefetching worker and its queue.
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Batch> ready_;
  int64_t gathered_ = 0; // next batch index the worker gathers
  bool stop_ = false;
};

} // namespace heterps::runtime::data

#endif // HETERPS_RUNTIME_DATA_BATCHLOADER_H
