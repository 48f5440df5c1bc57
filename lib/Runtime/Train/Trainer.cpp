//===- Trainer.cpp - training a plan on the CPU ---------------------------===//

#include "heterps/Runtime/Train/Trainer.h"

#include "heterps/Runtime/Executor.h"
#include "heterps/Runtime/Plan.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"

#include <cstring>

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
      backend(TrainBackendOptions{options.numThreads, options.seed}),
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
  if (program.inputs_size() != 1 || program.outputs_size() != 1)
    return trainError(llvm::Twine("training needs a model with one input and "
                                  "one output; this one has ") +
                      llvm::Twine(program.inputs_size()) + " and " +
                      llvm::Twine(program.outputs_size()));
  backend.enterThread();
  // Tensor copies share buffers: own the weights, which training updates in
  // place, so the caller's map stays as it was.
  for (auto &entry : weightMap)
    entry.second = entry.second.clone();
  std::map<int32_t, std::string> initializerOf;
  for (const plan::Weight &w : program.weights())
    if (w.source_case() == plan::Weight::kInitializer)
      initializerOf[w.value()] = w.initializer();
  llvm::StringSet<> frozen;
  for (const std::string &name : options.frozen) {
    bool known = llvm::any_of(initializerOf,
                              [&](const auto &e) { return e.second == name; });
    if (!known)
      return trainError("--freeze " + name +
                        ": the model has no initializer of that name");
    frozen.insert(name);
  }

  // Kernels, and which values the loss depends on through differentiable
  // inputs.
  requiresGrad.assign(program.values_size(), false);
  std::set<int32_t> trainable;
  for (int i = 0; i < program.ops_size(); ++i) {
    const plan::Op &op = program.ops(i);
    std::vector<const Tensor *> constants;
    for (int32_t in : op.inputs()) {
      auto it = weightMap.find(in);
      constants.push_back(in >= 0 && it != weightMap.end() ? &it->second
                                                           : nullptr);
    }
    OpInfo info(op, constants);
    auto kernel = backend.createKernel(info, i);
    if (!kernel)
      return trainError(describeOp(program, i) + ": " +
                        llvm::toString(kernel.takeError()));
    bool anyGrad = false;
    for (auto [j, in] : llvm::enumerate(op.inputs())) {
      if (in < 0)
        continue;
      if ((*kernel)->updatesInput(j) && !weightMap.count(in))
        return trainError(describeOp(program, i) + ": input " + llvm::Twine(j) +
                          " (running statistics) must be a weight");
      if (!(*kernel)->differentiable(j))
        continue;
      auto name = initializerOf.find(in);
      if (name != initializerOf.end() &&
          program.values(in).dtype() == plan::FLOAT &&
          !frozen.count(name->second)) {
        trainable.insert(in);
        requiresGrad[in] = true;
      }
      anyGrad |= requiresGrad[in];
    }
    requiresGrad[op.outputs(0)] = anyGrad;
    kernels.push_back(std::move(*kernel));
  }
  for (int32_t v : trainable) {
    paramValues.push_back(v);
    params.push_back({initializerOf[v], weightMap[v].numElements()});
  }
  if (paramValues.empty())
    return trainError("the model has no trainable parameters");
  return llvm::Error::success();
}

llvm::Error Trainer::checkData(const data::Dataset &data) const {
  const plan::Value &in = program.values(program.inputs(0).value());
  Shape expected = valueShape(in);
  const Shape &got = data.inputs.shape();
  bool fits = in.dtype() == plan::FLOAT && data.inputs.dtype() == DType::F32 &&
              got.size() == expected.size();
  for (size_t i = 1; fits && i < got.size(); ++i)
    fits = expected[i] == -1 || expected[i] == got[i];
  if (!fits)
    return trainError(llvm::Twine("data '") + data.name + "' has samples " +
                      dtypeName(data.inputs.dtype()) +
                      shapeToString(Shape(got.begin() + 1, got.end())) +
                      ", but the model input '" + program.inputs(0).name() +
                      "' is f32" + shapeToString(expected) +
                      " (first dimension the batch)");
  const Shape &t = data.targets.shape();
  Shape outShape = valueShape(program.values(program.outputs(0).value()));
  if (llvm::Error e =
          checkLossFits(options.loss, outShape, data.targets.dtype(),
                        Shape(t.begin() + 1, t.end())))
    return trainError(llvm::Twine("data '") + data.name +
                      "': " + llvm::toString(std::move(e)));
  // Labels are checked up front too, not at the step that meets them.
  int64_t classes = outShape.back();
  if (options.loss == LossKind::SoftmaxCrossEntropy && classes > 0)
    for (int64_t i = 0; i < data.size(); ++i) {
      int64_t label = data.targets.data<int64_t>()[i];
      if (label < 0 || label >= classes)
        return trainError(llvm::Twine("data '") + data.name + "': label " +
                          llvm::Twine(label) + " of sample " + llvm::Twine(i) +
                          " is outside the model's " + llvm::Twine(classes) +
                          " classes");
    }
  return llvm::Error::success();
}

llvm::Expected<LossResult> Trainer::step(const Tensor &inputs,
                                         const Tensor &targets, float lr) {
  backend.enterThread();
  std::vector<Tensor> values(program.values_size());
  for (const auto &[v, t] : weightMap)
    values[v] = t;
  values[program.inputs(0).value()] = inputs;

  for (int i = 0; i < program.ops_size(); ++i) {
    const plan::Op &op = program.ops(i);
    std::vector<const Tensor *> args;
    for (int32_t in : op.inputs())
      args.push_back(in >= 0 ? &values[in] : nullptr);
    if (llvm::Error e = kernels[i]->forward(args, values[op.outputs(0)]))
      return trainError(describeOp(program, i) + ": " +
                        llvm::toString(std::move(e)));
  }
  int32_t outValue = program.outputs(0).value();
  llvm::Expected<Tensor> output = values[outValue].toPlain();
  if (!output)
    return output.takeError();
  llvm::Expected<LossResult> loss = computeLoss(options.loss, *output, targets);
  if (!loss)
    return loss.takeError();

  std::vector<Tensor> grads(program.values_size());
  grads[outValue] = loss->grad;
  for (int i = program.ops_size() - 1; i >= 0; --i) {
    const plan::Op &op = program.ops(i);
    Tensor dy = std::move(grads[op.outputs(0)]);
    if (dy.isNull())
      continue;
    std::vector<const Tensor *> args;
    llvm::SmallVector<bool, 8> need;
    for (auto [j, in] : llvm::enumerate(op.inputs())) {
      args.push_back(in >= 0 ? &values[in] : nullptr);
      need.push_back(in >= 0 && requiresGrad[in] &&
                     kernels[i]->differentiable(j));
    }
    if (llvm::none_of(need, [](bool n) { return n; }))
      continue;
    std::vector<Tensor> dInputs(op.inputs_size());
    if (llvm::Error e = kernels[i]->backward(args, values[op.outputs(0)], dy,
                                             need, dInputs))
      return trainError(describeOp(program, i) +
                        " (backward): " + llvm::toString(std::move(e)));
    for (auto [j, in] : llvm::enumerate(op.inputs())) {
      if (!need[j] || dInputs[j].isNull())
        continue;
      if (grads[in].isNull())
        grads[in] = std::move(dInputs[j]);
      else if (llvm::Error e = backend.accumulate(grads[in], dInputs[j]))
        return trainError(describeOp(program, i) + ": " +
                          llvm::toString(std::move(e)));
    }
    // Activations are dead once their op's backward has run.
    values[op.outputs(0)] = Tensor();
  }

  for (int32_t v : paramValues) {
    if (grads[v].isNull())
      continue;
    llvm::Expected<Tensor> g = grads[v].toPlain();
    if (!g)
      return g.takeError();
    optimizer.update(v, weightMap[v], *g, lr);
  }
  return loss;
}

llvm::Expected<EvalResult> Trainer::evaluate(const data::Dataset &data,
                                             int64_t batchSize) const {
  // The inference executor folds batch norms into the convolutions'
  // weights: give it copies.
  WeightMap copies;
  for (const auto &[v, t] : weightMap)
    copies.emplace(v, t.clone());
  ExecutorOptions exec;
  exec.numThreads = options.numThreads;
  exec.autotune = false;
  auto executor = Executor::create(program, std::move(copies), exec);
  if (!executor)
    return executor.takeError();
  EvalResult result;
  double lossSum = 0;
  int64_t n = data.size();
  for (int64_t begin = 0; begin < n; begin += batchSize) {
    int64_t count = std::min(batchSize, n - begin);
    auto slice = [&](const Tensor &all) {
      Shape shape = all.shape();
      shape[0] = count;
      Tensor part(all.dtype(), shape);
      size_t rowBytes = all.bytes() / all.dim(0);
      std::memcpy(part.rawData(),
                  static_cast<const uint8_t *>(all.rawData()) +
                      begin * rowBytes,
                  count * rowBytes);
      return part;
    };
    auto outputs = (*executor)->run({slice(data.inputs)});
    if (!outputs)
      return outputs.takeError();
    auto loss = computeLoss(options.loss, (*outputs)[0], slice(data.targets));
    if (!loss)
      return loss.takeError();
    lossSum += loss->loss * count;
    result.correct += loss->correct;
    result.judged += loss->judged;
  }
  result.loss = n ? lossSum / n : 0;
  return result;
}

Trainer::State Trainer::state() const {
  State s;
  for (const auto &[v, t] : weightMap)
    s.weights.emplace(v, t.clone());
  for (const auto &[slot, st] : optimizer.slots())
    s.optimizer[slot] = {st.first.isNull() ? Tensor() : st.first.clone(),
                         st.second.isNull() ? Tensor() : st.second.clone(),
                         st.steps};
  for (const auto &kernel : kernels)
    s.randomDraws.push_back(kernel->randomDraws());
  return s;
}

llvm::Error Trainer::restore(State s) {
  if (s.randomDraws.size() != kernels.size())
    return trainError("the state has " + llvm::Twine(s.randomDraws.size()) +
                      " ops, the plan " + llvm::Twine(kernels.size()));
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
  for (size_t i = 0; i < kernels.size(); ++i)
    kernels[i]->setRandomDraws(s.randomDraws[i]);
  return llvm::Error::success();
}
