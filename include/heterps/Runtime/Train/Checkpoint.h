//===- Checkpoint.h - saving and resuming a training run --------*- C++ -*-===//
//
// A checkpoint is DIR/checkpoint.pb: the trainer's state (weights, running
// statistics, optimizer moments, random draws), where the run stands in the
// data (epoch and next batch; the loader's order is a function of the seed
// and the epoch) and that epoch's running figures. A run resumed from it
// takes the same steps on the same batches as the uninterrupted run, so its
// losses and weights are bit-identical (same thread count).
//
// A distributed job's processes write their own parts (a shard's tables,
// a worker's weights) into DIR/step-N, and DIR/checkpoint.pb, written
// last, names them with their sizes and hashes: it is the manifest that
// says which step is complete. Parts of other steps are removed once it is
// written.
//
// The file is written under a temporary name and renamed over the last
// one; it carries a hash of its contents. Reading refuses, with one line
// saying why, a missing, damaged or foreign checkpoint: another model,
// optimizer, loss, batch size, seed or data set size.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_TRAIN_CHECKPOINT_H
#define HETERPS_RUNTIME_TRAIN_CHECKPOINT_H

#include "heterps/Runtime/Train/Trainer.h"

namespace heterps::runtime::train {

/// What must be the same for a run to resume from a checkpoint.
struct CheckpointKey {
  std::string optimizer, loss;
  int64_t batch = 0;
  uint64_t seed = 0;
  /// Training samples.
  int64_t samples = 0;
};

/// Where a run stands, besides the trainer's state.
struct TrainingProgress {
  /// The epoch under way (from 0) and its next batch.
  int64_t epoch = 0, nextBatch = 0;
  int64_t globalStep = 0;
  /// The epoch's running figures.
  double lossSum = 0, seconds = 0;
  int64_t steps = 0, samples = 0, correct = 0, judged = 0;
  /// The finished epochs' report entries (a JSON array).
  std::string finishedEpochs = "[]";
};

/// The checkpoint file in `dir`.
std::string checkpointPath(llvm::StringRef dir);
/// Where a distributed job's processes write their parts of the
/// checkpoint of step `step`, under their checkpoint directory.
std::string partsDirName(int64_t step);

/// Writes `state`, a trainer's state on `plan`, as DIR/checkpoint.pb
/// (creating DIR), replacing the last one atomically.
llvm::Error saveCheckpoint(llvm::StringRef dir, const plan::Plan &plan,
                           const Trainer::State &state,
                           const CheckpointKey &key,
                           const TrainingProgress &progress);

/// A trainer's state and where its run stood.
struct LoadedCheckpoint {
  Trainer::State state;
  TrainingProgress progress;
};
/// Reads DIR/checkpoint.pb; its weights must match `weights` (a trainer's
/// current ones on `plan`) in names, types and shapes.
llvm::Expected<LoadedCheckpoint> loadCheckpoint(llvm::StringRef dir,
                                                const plan::Plan &plan,
                                                const WeightMap &weights,
                                                const CheckpointKey &key);
/// The same from the file's bytes; `path` names it in messages. Sizes are
/// checked before tensors are allocated.
llvm::Expected<LoadedCheckpoint> parseCheckpoint(llvm::StringRef bytes,
                                                 llvm::StringRef path,
                                                 const plan::Plan &plan,
                                                 const WeightMap &weights,
                                                 const CheckpointKey &key);

/// The same for a single-stage trainer: saves its state; restores it and
/// returns where the run stood.
llvm::Error saveCheckpoint(llvm::StringRef dir, const Trainer &trainer,
                           const CheckpointKey &key,
                           const TrainingProgress &progress);
llvm::Expected<TrainingProgress>
loadCheckpoint(llvm::StringRef dir, Trainer &trainer, const CheckpointKey &key);

} // namespace heterps::runtime::train

#endif // HETERPS_RUNTIME_TRAIN_CHECKPOINT_H
