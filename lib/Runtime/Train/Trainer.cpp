//===- Trainer.cpp - single-process training of a plan --------------------===//

#include "heterps/Runtime/Train/Trainer.h"

#include "heterps/Runtime/Executor.h"
#include "heterps/Runtime/Plan.h"

#include <set>

using namespace heterps::runtime;
using namespace heterps::runtime::train;

static llvm::Error trainError(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

static Shape valueShape(const plan::Value &v) {
  return Shape(v.dims().begin(), v.dims().end());
}

Trainer::Trainer(plan::Plan plan, WeightMap weights, TrainerOptions options)
    : program(std::move(plan)), weightMap(std::move(weights)), options(options),
      optimizer(options.optimizer) {}

Trainer::~Trainer() = default;

llvm::Expected<std::unique_ptr<Trainer>>
Trainer::create(const plan::Plan &plan, WeightMap weights,
                TrainerOptions options) {
  std::unique_ptr<Trainer> trainer(
      new Trainer(plan, std::move(weights), std::move(options)));
  if (llvm::Error e = trainer->prepare())
    return std::move(e);
  return std::move(trainer);
}

llvm::Error Trainer::prepare() {
  if (llvm::Error e = checkTrainingPlan(program))
    return e;
  separateRunningStatistics(program, weightMap);
  auto made =
      Devices::create(program, trainingDevices(options.numThreads,
                                               options.emulateMissingDevices));
  if (!made)
    return made.takeError();
  devices = std::move(*made);
  devices->rewriteForTraining(program, weightMap);
  if (llvm::Error e = devices->prepareTraining(
          TrainBackendOptions{options.numThreads, options.seed}))
    return e;
  devices->enterThread();
  // Tensor copies share buffers: own the weights, which training updates in
  // place, so the caller's map stays as it was.
  for (auto &entry : weightMap)
    entry.second = entry.second.clone();
  auto seq =
      OpSequence::create(program, weightMap, 0, program.ops_size(), *devices);
  if (!seq)
    return seq.takeError();
  ops = std::make_unique<OpSequence>(std::move(*seq));
  auto found = findGradientPaths(
      program, weightMap,
      [&](int i) -> const TrainKernel & { return ops->kernel(i); },
      options.frozen);
  if (!found)
    return found.takeError();
  paths = std::move(*found);
  return llvm::Error::success();
}

DeviceOptions heterps::runtime::train::trainingDevices(int numThreads,
                                                       bool emulateMissing) {
  DeviceOptions options;
  // Training kernels choose their algorithms by fixed rules.
  options.backend = BackendOptions{numThreads, /*autotune=*/false};
  options.emulateMissingDevices = emulateMissing;
  return options;
}

llvm::Error heterps::runtime::train::checkTrainingPlan(const plan::Plan &plan) {
  if (plan.inputs_size() != 1 || plan.outputs_size() != 1)
    return trainError(llvm::Twine("training needs a model with one input and "
                                  "one output; this one has ") +
                      llvm::Twine(plan.inputs_size()) + " and " +
                      llvm::Twine(plan.outputs_size()));
  return llvm::Error::success();
}

llvm::Error Trainer::checkData(const data::Dataset &data) const {
  return checkTrainingData(program, options.loss, data);
}

llvm::Error heterps::runtime::train::checkTrainingData(
    const plan::Plan &program, LossKind loss, const data::Dataset &data) {
  const plan::Value &in = program.values(program.inputs(0).value());
  Shape expected = valueShape(in);
  const Shape &got = data.inputs.shape();
  DType inType = in.dtype() == plan::INT64 ? DType::I64 : DType::F32;
  bool fits = data.inputs.dtype() == inType && got.size() == expected.size();
  for (size_t i = 1; fits && i < got.size(); ++i)
    fits = expected[i] == -1 || expected[i] == got[i];
  if (!fits)
    return trainError(llvm::Twine("data '") + data.name + "' has samples " +
                      dtypeName(data.inputs.dtype()) +
                      shapeToString(Shape(got.begin() + 1, got.end())) +
                      ", but the model input '" + program.inputs(0).name() +
                      "' is " + dtypeName(inType) + shapeToString(expected) +
                      " (first dimension the batch)");
  const Shape &t = data.targets.shape();
  Shape outShape = valueShape(program.values(program.outputs(0).value()));
  if (llvm::Error e = checkLossFits(loss, outShape, data.targets.dtype(),
                                    Shape(t.begin() + 1, t.end())))
    return trainError(llvm::Twine("data '") + data.name +
                      "': " + llvm::toString(std::move(e)));
  // Labels are checked up front too, not at the step that meets them.
  int64_t classes = outShape.back();
  if (loss == LossKind::SoftmaxCrossEntropy && classes > 0) {
    int64_t labels = data.targets.numElements();
    int64_t perSample = data.size() ? labels / data.size() : 1;
    for (int64_t i = 0; i < labels; ++i) {
      int64_t label = data.targets.data<int64_t>()[i];
      if (label < 0 || label >= classes)
        return trainError(llvm::Twine("data '") + data.name + "': " +
                          outOfRangeLabel(label, i / perSample, classes));
    }
  }
  return llvm::Error::success();
}

llvm::Expected<LossResult> Trainer::step(const Tensor &inputs,
                                         const Tensor &targets, float lr) {
  devices->enterThread();
  std::vector<Tensor> values(program.values_size());
  for (const auto &[v, t] : weightMap)
    values[v] = t;
  values[program.inputs(0).value()] = inputs;

  if (llvm::Error e = ops->forward(values))
    return std::move(e);
  int32_t outValue = program.outputs(0).value();
  llvm::Expected<Tensor> output = values[outValue].toPlain();
  if (!output)
    return output.takeError();
  llvm::Expected<LossResult> loss = computeLoss(options.loss, *output, targets);
  if (!loss)
    return loss.takeError();

  std::vector<Tensor> grads(program.values_size());
  grads[outValue] = loss->grad;
  if (llvm::Error e = ops->backward(values, grads, paths.requiresGrad))
    return std::move(e);

  for (int32_t v : paths.paramValues)
    if (!grads[v].isNull())
      if (llvm::Error e = optimizer.update(v, weightMap[v], grads[v], lr))
        return std::move(e);
  return loss;
}

llvm::Expected<EvalResult> Trainer::evaluate(const data::Dataset &data,
                                             int64_t batchSize) const {
  llvm::Expected<WeightMap> plain = weights();
  if (!plain)
    return plain.takeError();
  return evaluateModel(program, *plain, options.loss, data, batchSize,
                       options.numThreads);
}

llvm::Expected<WeightMap> Trainer::weights() const {
  WeightMap plain;
  for (const auto &[v, t] : weightMap) {
    llvm::Expected<Tensor> p = t.toPlain(); // plain ones share their buffer
    if (!p)
      return p.takeError();
    plain.emplace(v, std::move(*p));
  }
  return plain;
}

llvm::Expected<EvalResult> heterps::runtime::train::evaluateModel(
    const plan::Plan &plan, const WeightMap &weights, LossKind lossKind,
    const data::Dataset &data, int64_t batchSize, int numThreads) {
  // The inference executor folds batch norms into the convolutions'
  // weights: give it copies.
  WeightMap copies;
  for (const auto &[v, t] : weights)
    copies.emplace(v, t.clone());
  // A trainer's own running statistics (separateRunningStatistics) are
  // values without a plan weight; declared here, the executor takes them
  // from `copies` like the rest. Without this, evaluating any model whose
  // exporter merged equal initializers (PyTorch's batch norms) failed.
  plan::Plan evaluated = plan;
  std::set<int32_t> declared;
  for (const plan::Weight &w : plan.weights())
    declared.insert(w.value());
  for (const auto &[v, t] : copies) {
    if (declared.count(v) || v >= plan.values_size())
      continue;
    llvm::Expected<Tensor> data = t.toPlain();
    if (!data)
      return data.takeError();
    plan::Weight *w = evaluated.add_weights();
    w->set_value(v);
    w->set_raw_data(data->rawData(), data->bytes());
  }
  ExecutorOptions exec;
  exec.numThreads = numThreads;
  exec.autotune = false;
  auto executor = Executor::create(evaluated, std::move(copies), exec);
  if (!executor)
    return executor.takeError();
  EvalResult result;
  std::vector<float> scores, labels;
  double lossSum = 0;
  int64_t n = data.size();
  for (int64_t begin = 0; begin < n; begin += batchSize) {
    int64_t count = std::min(batchSize, n - begin);
    auto outputs =
        (*executor)->run({data::sampleRows(data.inputs, begin, count)});
    if (!outputs)
      return outputs.takeError();
    auto loss = computeLoss(lossKind, (*outputs)[0],
                            data::sampleRows(data.targets, begin, count));
    if (!loss)
      return loss.takeError();
    lossSum += loss->loss * count;
    result.correct += loss->correct;
    result.judged += loss->judged;
    collectScores(lossKind, (*outputs)[0],
                  data::sampleRows(data.targets, begin, count), scores, labels);
  }
  result.loss = n ? lossSum / n : 0;
  result.auc = rocAuc(scores, labels);
  return result;
}

/// A plain copy of `t` with its own buffer (null stays null).
static llvm::Expected<Tensor> plainCopy(const Tensor &t) {
  if (t.isNull())
    return t;
  if (t.isPlain())
    return t.clone();
  return t.toPlain(); // a copy already
}

llvm::Expected<Trainer::State> Trainer::state() const {
  State s;
  for (const auto &[v, t] : weightMap) {
    llvm::Expected<Tensor> copy = plainCopy(t);
    if (!copy)
      return copy.takeError();
    s.weights.emplace(v, std::move(*copy));
  }
  for (const auto &[slot, st] : optimizer.slots()) {
    llvm::Expected<Tensor> first = plainCopy(st.first);
    if (!first)
      return first.takeError();
    llvm::Expected<Tensor> second = plainCopy(st.second);
    if (!second)
      return second.takeError();
    s.optimizer[slot] = {std::move(*first), std::move(*second), st.steps};
  }
  for (int i = ops->begin(); i < ops->end(); ++i)
    s.randomDraws.push_back(ops->kernel(i).randomDraws());
  return s;
}

llvm::Error Trainer::restore(State s) {
  if (s.randomDraws.size() != size_t(program.ops_size()))
    return trainError("the state has " + llvm::Twine(s.randomDraws.size()) +
                      " ops, the plan " + llvm::Twine(program.ops_size()));
  for (auto &[v, t] : s.weights) {
    auto it = weightMap.find(v);
    if (it == weightMap.end() || it->second.shape() != t.shape() ||
        it->second.dtype() != t.dtype())
      return trainError("value '" + program.values(v).name() +
                        "' does not fit the plan's weights");
  }
  for (auto &[v, t] : s.weights)
    weightMap[v] = std::move(t);
  optimizer.setSlots(std::move(s.optimizer));
  for (int i = 0; i < program.ops_size(); ++i)
    ops->kernel(i).setRandomDraws(s.randomDraws[i]);
  return llvm::Error::success();
}
