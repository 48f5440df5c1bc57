//===- Checkpoint.cpp - saving and resuming a training run ----------------===//

#include "heterps/Runtime/Train/Checkpoint.h"

#include "heterps/Runtime/Train/Checkpoint.pb.h"

#include "heterps/Runtime/AtomicFile.h"
#include "heterps/Runtime/MemoryLimit.h"
#include "heterps/Support/PrintableLine.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::train;

/// Bumped when the message changes meaning.
static constexpr int kFormat = 1;

/// Messages quote names and settings from the file: one line whatever they
/// hold.
static llvm::Error checkpointError(const llvm::Twine &message) {
  return heterps::printableError(message);
}

std::string train::checkpointPath(llvm::StringRef dir) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "checkpoint.pb");
  return std::string(path);
}

static uint64_t hashOf(const std::string &bytes) {
  return llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
}

static void toMessage(const std::string &name, const Tensor &t,
                      CheckpointTensor &out) {
  out.set_name(name);
  out.set_dtype(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape())
    out.add_dims(d);
  out.set_data(t.rawData(), t.bytes());
}

static llvm::Expected<Tensor> fromMessage(const CheckpointTensor &m) {
  auto dtype = static_cast<DType>(m.dtype());
  if (dtype != DType::F32 && dtype != DType::I64)
    return checkpointError("tensor '" + m.name() + "' has an unknown type");
  Shape shape(m.dims().begin(), m.dims().end());
  // The data's size is checked before the tensor is allocated.
  llvm::Expected<uint64_t> bytes = checkedByteSize(shape, dtypeSize(dtype));
  if (!bytes || *bytes != m.data().size())
    return checkpointError(
        "tensor '" + m.name() + "' has " + llvm::Twine(m.data().size()) +
        " bytes for " + dtypeName(dtype) + shapeToString(shape) +
        (bytes ? "" : " (" + llvm::toString(bytes.takeError()) + ")"));
  Tensor t(dtype, std::move(shape));
  std::memcpy(t.rawData(), m.data().data(), t.bytes());
  return t;
}

llvm::Error train::saveCheckpoint(llvm::StringRef dir, const plan::Plan &plan,
                                  const Trainer::State &state,
                                  const CheckpointKey &key,
                                  const TrainingProgress &progress) {
  Checkpoint c;
  c.set_optimizer(key.optimizer);
  c.set_loss(key.loss);
  c.set_batch(key.batch);
  c.set_seed(key.seed);
  c.set_samples(key.samples);
  c.set_epoch(progress.epoch);
  c.set_next_batch(progress.nextBatch);
  c.set_global_step(progress.globalStep);
  c.set_loss_sum(progress.lossSum);
  c.set_seconds(progress.seconds);
  c.set_steps(progress.steps);
  c.set_epoch_samples(progress.samples);
  c.set_correct(progress.correct);
  c.set_judged(progress.judged);
  c.set_finished_epochs(progress.finishedEpochs);

  for (const auto &[v, t] : state.weights)
    toMessage(plan.values(v).name(), t, *c.add_weights());
  for (const auto &[v, slot] : state.optimizer) {
    OptimizerSlot *out = c.add_optimizer_slots();
    out->set_name(plan.values(v).name());
    out->set_steps(slot.steps);
    if (!slot.first.isNull())
      toMessage("first", slot.first, *out->mutable_first());
    if (!slot.second.isNull())
      toMessage("second", slot.second, *out->mutable_second());
  }
  for (uint64_t draws : state.randomDraws)
    c.add_random_draws(draws);
  c.set_parts_step(state.partsStep);
  for (const Trainer::Part &part : state.parts) {
    CheckpointPart *out = c.add_parts();
    out->set_name(part.name);
    out->set_bytes(part.bytes);
    out->set_xxh3(part.xxh3);
  }
  for (const auto &[v, rows] : state.sparse) {
    SparseTable *out = c.add_sparse_tables();
    out->set_name(plan.values(v).name());
    out->mutable_ids()->Add(rows.ids.begin(), rows.ids.end());
    toMessage("values", rows.values, *out->mutable_values());
    if (!rows.accumulators.isNull())
      toMessage("accumulators", rows.accumulators,
                *out->mutable_accumulators());
    out->set_version(rows.version);
  }

  CheckpointFile file;
  file.set_format(kFormat);
  if (!c.SerializeToString(file.mutable_checkpoint()))
    return checkpointError("cannot serialise the checkpoint");
  file.set_xxh3(hashOf(file.checkpoint()));
  std::string bytes;
  if (!file.SerializeToString(&bytes))
    return checkpointError("cannot serialise the checkpoint");

  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return checkpointError(dir + ": " + ec.message());
  // A temporary file renamed over the last checkpoint: a crash while
  // writing leaves the last one whole.
  if (llvm::Error e = writeFileAtomically(
          checkpointPath(dir), [&](llvm::raw_ostream &os) -> llvm::Error {
            os << bytes;
            return llvm::Error::success();
          }))
    return e;
  // The parts of earlier steps are no longer named by the checkpoint.
  std::string keep = partsDirName(state.parts.empty() ? -1 : state.partsStep);
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (name.starts_with("step-") && name != keep)
      llvm::sys::fs::remove_directories(it->path());
  }
  return llvm::Error::success();
}

std::string train::partsDirName(int64_t step) {
  return "step-" + std::to_string(step);
}

/// The first setting of `key` that differs from the checkpoint's, as an
/// error naming both.
static llvm::Error checkKey(const Checkpoint &c, const CheckpointKey &key) {
  auto differs = [](const llvm::Twine &what, const llvm::Twine &there,
                    const llvm::Twine &here) {
    return checkpointError("it was written with " + what + " " + there +
                           ", this run has " + here);
  };
  if (c.optimizer() != key.optimizer)
    return differs("--optimizer", c.optimizer(), key.optimizer);
  if (c.loss() != key.loss)
    return differs("--loss", c.loss(), key.loss);
  if (c.batch() != key.batch)
    return differs("--batch", llvm::Twine(c.batch()), llvm::Twine(key.batch));
  if (c.seed() != key.seed)
    return differs("--seed", llvm::Twine(c.seed()), llvm::Twine(key.seed));
  if (c.samples() != key.samples)
    return differs("a training set of", llvm::Twine(c.samples()) + " samples",
                   llvm::Twine(key.samples));
  return llvm::Error::success();
}

static llvm::Expected<Trainer::State>
stateOf(const Checkpoint &c, const plan::Plan &plan, const WeightMap &current) {
  std::map<std::string, int32_t> valueOf;
  for (int v = 0; v < plan.values_size(); ++v)
    valueOf[plan.values(v).name()] = v;
  auto lookup = [&](const std::string &name) -> llvm::Expected<int32_t> {
    auto it = valueOf.find(name);
    if (it == valueOf.end())
      return checkpointError("it holds '" + name +
                             "', which this model does not have");
    return it->second;
  };

  // Checked against the trainer's weights; the state is built anew.
  Trainer::State state;
  int ops = plan.ops_size();
  if (c.random_draws_size() != ops)
    return checkpointError("it is for a model of " +
                           llvm::Twine(c.random_draws_size()) +
                           " ops, this one has " + llvm::Twine(ops));
  state.randomDraws.assign(c.random_draws().begin(), c.random_draws().end());
  if (c.parts_size() > 0) {
    // The processes that wrote them check their parts' contents.
    if (c.weights_size() || c.optimizer_slots_size() || c.sparse_tables_size())
      return checkpointError("it holds both weights and parts");
    if (c.parts_step() < 0)
      return checkpointError("its parts are of step " +
                             llvm::Twine(c.parts_step()));
    state.partsStep = c.parts_step();
    for (const CheckpointPart &m : c.parts()) {
      if (m.name().empty() || m.name().find('/') != std::string::npos ||
          m.name() == "." || m.name() == ".." || m.bytes() < 0)
        return checkpointError("it names a part '" + m.name() +
                               "' that is not a file name");
      state.parts.push_back({m.name(), m.bytes(), m.xxh3()});
    }
    return state;
  }
  if (c.weights_size() != static_cast<int>(current.size()))
    return checkpointError("it holds " + llvm::Twine(c.weights_size()) +
                           " weights, this model has " +
                           llvm::Twine(current.size()));
  for (const CheckpointTensor &m : c.weights()) {
    llvm::Expected<int32_t> v = lookup(m.name());
    if (!v)
      return v.takeError();
    llvm::Expected<Tensor> t = fromMessage(m);
    if (!t)
      return t.takeError();
    auto it = current.find(*v);
    if (it == current.end() || it->second.shape() != t->shape() ||
        it->second.dtype() != t->dtype())
      return checkpointError("weight '" + m.name() + "' is " + t->typeString() +
                             " there, " +
                             (it == current.end() ? std::string("not a weight")
                                                  : it->second.typeString()) +
                             " in this model");
    state.weights.emplace(*v, std::move(*t));
  }
  for (const OptimizerSlot &m : c.optimizer_slots()) {
    llvm::Expected<int32_t> v = lookup(m.name());
    if (!v)
      return v.takeError();
    // The optimizer updates its slots in step with the weight: they must
    // have its shape.
    auto weight = state.weights.find(*v);
    if (weight == state.weights.end())
      return checkpointError("it holds optimizer state for '" + m.name() +
                             "', which is not a weight");
    Optimizer::State &slot = state.optimizer[*v];
    slot.steps = m.steps();
    for (auto [has, message, tensor] :
         {std::tuple(m.has_first(), &m.first(), &slot.first),
          std::tuple(m.has_second(), &m.second(), &slot.second)}) {
      if (!has)
        continue;
      llvm::Expected<Tensor> t = fromMessage(*message);
      if (!t)
        return t.takeError();
      if (t->shape() != weight->second.shape() ||
          t->dtype() != weight->second.dtype())
        return checkpointError("the optimizer state of '" + m.name() + "' is " +
                               t->typeString() + ", the weight " +
                               weight->second.typeString());
      *tensor = std::move(*t);
    }
  }
  for (const SparseTable &m : c.sparse_tables()) {
    llvm::Expected<int32_t> v = lookup(m.name());
    if (!v)
      return v.takeError();
    SparseRows &rows = state.sparse[*v];
    rows.ids.assign(m.ids().begin(), m.ids().end());
    rows.version = m.version();
    llvm::Expected<Tensor> values = fromMessage(m.values());
    if (!values)
      return values.takeError();
    // Rows of the table's width, one per id, each id a row of the table.
    const plan::Value &table = plan.values(*v);
    int64_t numRows = table.dims_size() == 2 ? table.dims(0) : -1;
    Shape expected = {static_cast<int64_t>(rows.ids.size()),
                      table.dims_size() == 2 ? table.dims(1) : -1};
    if (values->dtype() != DType::F32 || values->shape() != expected)
      return checkpointError("sparse table '" + m.name() + "' holds " +
                             values->typeString() + " for " +
                             llvm::Twine(rows.ids.size()) + " rows of " +
                             shapeToString(llvm::ArrayRef<int64_t>(
                                 table.dims().data(), table.dims_size())));
    for (int64_t id : rows.ids)
      if (id < 0 || id >= numRows)
        return checkpointError("sparse table '" + m.name() + "' holds row " +
                               llvm::Twine(id) + " of " + llvm::Twine(numRows));
    rows.values = std::move(*values);
    if (m.has_accumulators()) {
      llvm::Expected<Tensor> accs = fromMessage(m.accumulators());
      if (!accs)
        return accs.takeError();
      if (accs->shape() != rows.values.shape() || accs->dtype() != DType::F32)
        return checkpointError("sparse table '" + m.name() +
                               "' has accumulators " + accs->typeString() +
                               " for values " + rows.values.typeString());
      rows.accumulators = std::move(*accs);
    }
  }
  return state;
}

llvm::Expected<LoadedCheckpoint>
train::loadCheckpoint(llvm::StringRef dir, const plan::Plan &plan,
                      const WeightMap &weights, const CheckpointKey &key) {
  std::string path = checkpointPath(dir);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return checkpointError(path + ": " + buffer.getError().message() +
                           "; not resuming");
  return parseCheckpoint((*buffer)->getBuffer(), path, plan, weights, key);
}

llvm::Expected<LoadedCheckpoint>
train::parseCheckpoint(llvm::StringRef bytes, llvm::StringRef path,
                       const plan::Plan &plan, const WeightMap &weights,
                       const CheckpointKey &key) {
  auto fail = [&](const llvm::Twine &why) {
    return checkpointError(path + ": " + why + "; not resuming");
  };
  CheckpointFile file;
  Checkpoint c;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !file.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) ||
      hashOf(file.checkpoint()) != file.xxh3() ||
      !c.ParseFromString(file.checkpoint()))
    return fail("damaged (its contents do not match their hash)");
  if (file.format() != kFormat)
    return fail("format " + llvm::Twine(file.format()) +
                ", this build reads format " + llvm::Twine(kFormat));
  if (llvm::Error e = checkKey(c, key))
    return fail(llvm::toString(std::move(e)));
  llvm::Expected<Trainer::State> state = stateOf(c, plan, weights);
  if (!state)
    return fail(llvm::toString(state.takeError()));

  // Counters only a damaged or hand-made file has negative.
  if (c.epoch() < 0 || c.next_batch() < 0 || c.global_step() < 0 ||
      c.steps() < 0 || c.epoch_samples() < 0 || c.correct() < 0 ||
      c.judged() < c.correct())
    return fail("its progress counters are out of range (epoch " +
                llvm::Twine(c.epoch()) + ", batch " +
                llvm::Twine(c.next_batch()) + ", step " +
                llvm::Twine(c.global_step()) + ")");
  LoadedCheckpoint loaded{std::move(*state), {}};
  TrainingProgress &progress = loaded.progress;
  progress.epoch = c.epoch();
  progress.nextBatch = c.next_batch();
  progress.globalStep = c.global_step();
  progress.lossSum = c.loss_sum();
  progress.seconds = c.seconds();
  progress.steps = c.steps();
  progress.samples = c.epoch_samples();
  progress.correct = c.correct();
  progress.judged = c.judged();
  progress.finishedEpochs = c.finished_epochs();
  return loaded;
}

llvm::Error train::saveCheckpoint(llvm::StringRef dir, const Trainer &trainer,
                                  const CheckpointKey &key,
                                  const TrainingProgress &progress) {
  llvm::Expected<Trainer::State> state = trainer.state();
  if (!state)
    return state.takeError();
  return saveCheckpoint(dir, trainer.plan(), *state, key, progress);
}

llvm::Expected<TrainingProgress>
train::loadCheckpoint(llvm::StringRef dir, Trainer &trainer,
                      const CheckpointKey &key) {
  llvm::Expected<WeightMap> weights = trainer.weights();
  if (!weights)
    return weights.takeError();
  auto loaded = loadCheckpoint(dir, trainer.plan(), *weights, key);
  if (!loaded)
    return loaded.takeError();
  if (llvm::Error e = trainer.restore(std::move(loaded->state)))
    return checkpointError(checkpointPath(dir) + ": " +
                           llvm::toString(std::move(e)) + "; not resuming");
  return loaded->progress;
}
