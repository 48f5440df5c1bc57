//===- checkpoint.cpp - fuzz target: the training checkpoint reader -------===//
//
// A checkpoint file is a CheckpointFile message whose `checkpoint` bytes are
// guarded by an xxh3 hash, so raw bytes would only ever reach the hash
// check. The input is taken as the inner Checkpoint message instead and
// wrapped here with a correct hash. It is read against a small fixed plan
// (a sparse table, a MatMul and two Adds) and its weights.
//
// With HETERPS_FUZZ_CHECKPOINT_SEED=FILE in the environment the target
// writes instead a valid inner message for that plan (saved by
// saveCheckpoint, then unwrapped) to FILE and exits: the seed corpus's
// checkpoint that gets past every check.
//
//===----------------------------------------------------------------------===//

#include "FuzzCommon.h"
#include "PlanBuilder.h"

#include "heterps/Runtime/Train/Checkpoint.h"
#include "heterps/Runtime/Train/Checkpoint.pb.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <google/protobuf/stubs/logging.h>

using namespace heterps::runtime;
using namespace heterps::runtime::testutil;

namespace {
/// The plan, its current weights and the key every input is read against.
struct Fixture {
  plan::Plan plan;
  WeightMap weights;
  train::CheckpointKey key{"adam", "softmax-cross-entropy", 2, 7, 10};
  int w = 0, b = 0, table = 0;
};
} // namespace

static Tensor filled(Shape shape, float first) {
  Tensor t(DType::F32, std::move(shape));
  float *p = t.data<float>();
  for (int64_t i = 0; i < t.numElements(); ++i)
    p[i] = first + 0.25f * static_cast<float>(i);
  return t;
}

static const Fixture &fixture() {
  static Fixture f = [] {
    Fixture f;
    PlanBuilder builder;
    int x = builder.input("x", {2, 4});
    int ids = builder.input("ids", {2}, DType::I64);
    f.table = builder.weight("table", filled({10, 4}, 0));
    f.w = builder.weight("w", filled({4, 3}, 1));
    f.b = builder.weight("b", filled({3}, 2));
    int rows = builder.op("Gather", {f.table, ids}, {2, 4});
    int sum = builder.op("Add", {x, rows}, {2, 4});
    int product = builder.op("MatMul", {sum, f.w}, {2, 3});
    builder.output("y", builder.op("Add", {product, f.b}, {2, 3}));
    f.plan = builder.build();
    // The table is served as sparse rows, not as a dense weight.
    f.weights.emplace(f.w, filled({4, 3}, 1));
    f.weights.emplace(f.b, filled({3}, 2));
    return f;
  }();
  return f;
}

/// Writes the seed described at the top of the file.
static int writeSeed(const char *out) {
  const Fixture &f = fixture();
  train::Trainer::State state;
  state.weights.emplace(f.w, filled({4, 3}, 3));
  state.weights.emplace(f.b, filled({3}, 4));
  state.optimizer[f.w] = {filled({4, 3}, 0.5), filled({4, 3}, 0.75), 3};
  state.optimizer[f.b].steps = 3;
  state.randomDraws.assign(f.plan.ops_size(), 5);
  train::SparseRows &rows = state.sparse[f.table];
  rows.ids = {1, 7};
  rows.values = filled({2, 4}, 6);
  rows.accumulators = filled({2, 4}, 0.125);
  rows.version = 3;
  train::TrainingProgress progress;
  progress.epoch = 1;
  progress.nextBatch = 2;
  progress.globalStep = 7;
  progress.steps = 2;
  progress.samples = 4;
  progress.correct = 1;
  progress.judged = 4;
  progress.finishedEpochs = R"([{"epoch":0,"loss":2.25}])";

  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("heterps-fuzz-seed", dir))
    return 1;
  llvm::Error error =
      train::saveCheckpoint(dir, f.plan, state, f.key, progress);
  if (error) {
    llvm::errs() << "checkpoint: " << llvm::toString(std::move(error)) << "\n";
    return 1;
  }
  auto buffer = llvm::MemoryBuffer::getFile(train::checkpointPath(dir));
  train::CheckpointFile file;
  if (!buffer || !file.ParseFromString((*buffer)->getBuffer().str()))
    return 1;
  std::error_code ec;
  llvm::raw_fd_ostream os(out, ec);
  if (ec)
    return 1;
  os << file.checkpoint();
  llvm::sys::fs::remove_directories(dir);
  return 0;
}

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // Protobuf logs every malformed string field to stderr.
  google::protobuf::SetLogHandler(nullptr);
  if (const char *out = std::getenv("HETERPS_FUZZ_CHECKPOINT_SEED"))
    std::exit(writeSeed(out));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const Fixture &f = fixture();
  train::CheckpointFile file;
  file.set_format(1);
  file.set_checkpoint(data, size);
  file.set_xxh3(llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(data, size)));
  std::string bytes;
  if (!file.SerializeToString(&bytes))
    return 0;
  auto loaded = train::parseCheckpoint(bytes, "fuzz/checkpoint.pb", f.plan,
                                       f.weights, f.key);
  heterps::fuzz::requireOneLine(loaded);
  return 0;
}
