//===- CheckpointTest.cpp - resuming is the same as never stopping --------===//

#include "TrainTestModels.h"

#include "heterps/Runtime/Train/Checkpoint.h"
#include "heterps/Runtime/Train/Checkpoint.pb.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/xxhash.h"

#include <fstream>

using namespace heterps::runtime;
using namespace heterps::runtime::testutil;
using namespace heterps::runtime::train;

namespace {

TrainerOptions adamWithDropout() {
  TrainerOptions options;
  options.seed = 9;
  options.optimizer.kind = OptimizerKind::Adam;
  return options;
}

std::vector<double> train(Trainer &trainer, const data::Dataset &data,
                          int steps) {
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i)
    losses.push_back(
        llvm::cantFail(trainer.step(data.inputs, data.targets, 0.01f)).loss);
  return losses;
}

const CheckpointKey kKey{"adam", "softmax-ce", 32, 9, 32};

// Adam's moments and step count and Dropout's draws all change the next
// steps: a resumed trainer must match the one that never stopped.
TEST(Checkpoint, ResumedTrainingIsBitIdentical) {
  TempDir dir;
  MLP mlp = makeMLP(dir.file("mlp.onnx"), /*dropout=*/true);
  data::Dataset data = makeData(32, 4);
  auto straight = makeTrainer(mlp, adamWithDropout());
  std::vector<double> expected = train(*straight, data, 12);

  auto first = makeTrainer(mlp, adamWithDropout());
  std::vector<double> losses = train(*first, data, 5);
  TrainingProgress progress;
  progress.epoch = 2;
  progress.nextBatch = 3;
  progress.lossSum = 1.5;
  ASSERT_FALSE(bool(saveCheckpoint(dir.file("ck"), *first, kKey, progress)));

  auto resumed = makeTrainer(mlp, adamWithDropout());
  auto loaded = loadCheckpoint(dir.file("ck"), *resumed, kKey);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  EXPECT_EQ(loaded->epoch, 2);
  EXPECT_EQ(loaded->nextBatch, 3);
  EXPECT_EQ(loaded->lossSum, 1.5);
  std::vector<double> rest = train(*resumed, data, 7);
  losses.insert(losses.end(), rest.begin(), rest.end());
  EXPECT_EQ(losses, expected);
  for (const auto &[v, t] : llvm::cantFail(straight->weights()))
    EXPECT_EQ(0, std::memcmp(t.rawData(),
                             llvm::cantFail(resumed->weights()).at(v).rawData(),
                             t.bytes()))
        << mlp.plan.values(v).name();
}

TEST(Checkpoint, RefusesMissingDamagedAndForeignCheckpoints) {
  TempDir dir;
  MLP mlp = makeMLP(dir.file("mlp.onnx"), /*dropout=*/false);
  auto trainer = makeTrainer(mlp, adamWithDropout());
  std::string path = checkpointPath(dir.file("ck"));
  auto refusal = [&](const CheckpointKey &key) {
    auto loaded = loadCheckpoint(dir.file("ck"), *trainer, key);
    return loaded ? std::string("loaded") : llvm::toString(loaded.takeError());
  };
  EXPECT_EQ(refusal(kKey), path + ": No such file or directory; not resuming");

  ASSERT_FALSE(bool(saveCheckpoint(dir.file("ck"), *trainer, kKey, {})));
  CheckpointKey other = kKey;
  other.batch = 16;
  EXPECT_EQ(refusal(other), path + ": it was written with --batch 32, this "
                                   "run has 16; not resuming");
  other = kKey;
  other.optimizer = "sgd";
  EXPECT_EQ(refusal(other), path + ": it was written with --optimizer adam, "
                                   "this run has sgd; not resuming");

  // Another model: the MLP with dropout has one op more.
  MLP bigger = makeMLP(dir.file("mlp2.onnx"), /*dropout=*/true);
  auto otherTrainer = makeTrainer(bigger, adamWithDropout());
  auto loaded = loadCheckpoint(dir.file("ck"), *otherTrainer, kKey);
  ASSERT_FALSE(bool(loaded));
  EXPECT_EQ(llvm::toString(loaded.takeError()),
            path + ": it is for a model of 3 ops, this one has 4; not "
                   "resuming");

  // One byte changed in the middle of the file.
  std::string bytes = std::string(
      llvm::cantFail(llvm::errorOrToExpected(llvm::MemoryBuffer::getFile(path)))
          ->getBuffer());
  bytes[bytes.size() / 2] ^= 0x10;
  std::ofstream(path, std::ios::binary) << bytes;
  EXPECT_EQ(refusal(kKey), path + ": damaged (its contents do not match "
                                  "their hash); not resuming");
  std::ofstream(path, std::ios::binary) << bytes.substr(0, 100);
  EXPECT_EQ(refusal(kKey), path + ": damaged (its contents do not match "
                                  "their hash); not resuming");
}

// A checkpoint whose hash is right but whose state does not fit the model
// (hand-made, or from the fuzzer): refused before anything is allocated or
// restored, with the reason.
TEST(Checkpoint, RefusesStateThatDoesNotFitTheModel) {
  TempDir dir;
  MLP mlp = makeMLP(dir.file("mlp.onnx"), /*dropout=*/false);
  auto trainer = makeTrainer(mlp, adamWithDropout());
  data::Dataset data = makeData(32, 4);
  train(*trainer, data, 2); // Adam's moments exist now
  ASSERT_FALSE(bool(saveCheckpoint(dir.file("ck"), *trainer, kKey, {})));
  std::string path = checkpointPath(dir.file("ck"));
  std::string saved = std::string(
      llvm::cantFail(llvm::errorOrToExpected(llvm::MemoryBuffer::getFile(path)))
          ->getBuffer());
  // Edits the inner message, rewrites the file with a matching hash and
  // returns the refusal.
  auto refusalAfter = [&](llvm::function_ref<void(Checkpoint &)> edit) {
    CheckpointFile file;
    Checkpoint c;
    EXPECT_TRUE(file.ParseFromString(saved) &&
                c.ParseFromString(file.checkpoint()));
    edit(c);
    file.set_checkpoint(c.SerializeAsString());
    file.set_xxh3(llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
        reinterpret_cast<const uint8_t *>(file.checkpoint().data()),
        file.checkpoint().size())));
    std::ofstream(path, std::ios::binary) << file.SerializeAsString();
    auto loaded = loadCheckpoint(dir.file("ck"), *trainer, kKey);
    return loaded ? std::string("loaded") : llvm::toString(loaded.takeError());
  };
  EXPECT_EQ(refusalAfter([](Checkpoint &) {}), "loaded");
  EXPECT_EQ(refusalAfter([](Checkpoint &c) {
              CheckpointTensor &m =
                  *c.mutable_optimizer_slots(0)->mutable_first();
              m.clear_dims();
              m.add_dims(1);
              m.set_data(std::string(4, '\0'));
            }),
            path + ": the optimizer state of 'w1' is f32[1], the weight f32[8, "
                   "4]; not resuming");
  EXPECT_EQ(refusalAfter([](Checkpoint &c) {
              CheckpointTensor &m = *c.mutable_weights(0);
              m.clear_dims();
              m.add_dims(int64_t(1) << 62);
              m.add_dims(8);
            }),
            path + ": tensor 'w1' has 128 bytes for f32[4611686018427387904, "
                   "8] (shape [4611686018427387904, 8] has more elements than "
                   "fit in 64 bits); not resuming");
  EXPECT_EQ(refusalAfter([](Checkpoint &c) { c.set_epoch(-1); }),
            path + ": its progress counters are out of range (epoch -1, batch "
                   "0, step 0); not resuming");
  // A distributed job's manifest names parts: file names only, and no
  // weights besides.
  auto parts = [](const std::string &name) {
    return [name](Checkpoint &c) {
      c.clear_weights();
      c.clear_optimizer_slots();
      c.set_parts_step(7);
      CheckpointPart *part = c.add_parts();
      part->set_name(name);
      part->set_bytes(10);
    };
  };
  EXPECT_EQ(refusalAfter(parts("../../etc/passwd")),
            path + ": it names a part '../../etc/passwd' that is not a file "
                   "name; not resuming");
  EXPECT_EQ(refusalAfter([&](Checkpoint &c) {
              parts("ps0.pb")(c);
              c.add_weights()->set_name("w1");
            }),
            path + ": it holds both weights and parts; not resuming");
  EXPECT_EQ(
      refusalAfter([](Checkpoint &c) { c.set_optimizer("adam\nline two"); }),
      path + ": it was written with --optimizer adam\\nline two, this "
             "run has adam; not resuming");
}

} // namespace
