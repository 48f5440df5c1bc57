//===- Backprop.cpp - forward and backward over a range of plan ops -------===//

#include "heterps/Runtime/Train/Backprop.h"

#include "heterps/Runtime/Plan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"

#include <set>

using namespace heterps::runtime;
using namespace heterps::runtime::train;

static llvm::Error trainError(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

llvm::Expected<OpSequence> OpSequence::create(const plan::Plan &plan,
                                              const WeightMap &weights,
                                              int begin, int end,
                                              const TrainBackend &backend,
                                              KernelOverride custom) {
  OpSequence seq(plan, backend, begin);
  for (int i = begin; i < end; ++i) {
    if (std::unique_ptr<TrainKernel> own = custom ? custom(i) : nullptr) {
      seq.kernels.push_back(std::move(own));
      continue;
    }
    const plan::Op &op = plan.ops(i);
    std::vector<const Tensor *> constants;
    for (int32_t in : op.inputs()) {
      auto it = weights.find(in);
      constants.push_back(in >= 0 && it != weights.end() ? &it->second
                                                         : nullptr);
    }
    auto kernel = backend.createKernel(OpInfo(op, constants), i);
    if (!kernel)
      return trainError(describeOp(plan, i) + ": " +
                        llvm::toString(kernel.takeError()));
    seq.kernels.push_back(std::move(*kernel));
  }
  return std::move(seq);
}

llvm::Error OpSequence::forward(std::vector<Tensor> &values) const {
  std::vector<const Tensor *> args;
  for (int i = begin(); i < end(); ++i) {
    const plan::Op &op = program->ops(i);
    args.clear();
    for (int32_t in : op.inputs())
      args.push_back(in >= 0 ? &values[in] : nullptr);
    if (llvm::Error e = kernel(i).forward(args, values[op.outputs(0)]))
      return trainError(describeOp(*program, i) + ": " +
                        llvm::toString(std::move(e)));
  }
  return llvm::Error::success();
}

llvm::Error OpSequence::backward(std::vector<Tensor> &values,
                                 std::vector<Tensor> &grads,
                                 const std::vector<bool> &requiresGrad) const {
  for (int i = end() - 1; i >= begin(); --i) {
    const plan::Op &op = program->ops(i);
    Tensor dy = std::move(grads[op.outputs(0)]);
    TrainKernel &k = kernel(i);
    std::vector<const Tensor *> args;
    llvm::SmallVector<bool, 8> need;
    for (auto [j, in] : llvm::enumerate(op.inputs())) {
      args.push_back(in >= 0 ? &values[in] : nullptr);
      need.push_back(!dy.isNull() && in >= 0 && requiresGrad[in] &&
                     k.differentiable(j));
    }
    if (llvm::any_of(need, [](bool n) { return n; })) {
      std::vector<Tensor> dInputs(op.inputs_size());
      if (llvm::Error e =
              k.backward(args, values[op.outputs(0)], dy, need, dInputs))
        return trainError(describeOp(*program, i) +
                          " (backward): " + llvm::toString(std::move(e)));
      for (auto [j, in] : llvm::enumerate(op.inputs())) {
        if (!need[j] || dInputs[j].isNull())
          continue;
        if (grads[in].isNull())
          grads[in] = std::move(dInputs[j]);
        else if (llvm::Error e = backend->accumulate(grads[in], dInputs[j]))
          return trainError(describeOp(*program, i) + ": " +
                            llvm::toString(std::move(e)));
      }
    }
    // Activations are dead once their op's backward has run.
    values[op.outputs(0)] = Tensor();
  }
  return llvm::Error::success();
}

llvm::Expected<GradientPaths> heterps::runtime::train::findGradientPaths(
    const plan::Plan &plan, const WeightMap &weights,
    llvm::function_ref<const TrainKernel &(int)> kernelOf,
    llvm::ArrayRef<std::string> frozen) {
  std::map<int32_t, std::string> initializerOf;
  for (const plan::Weight &w : plan.weights())
    if (w.source_case() == plan::Weight::kInitializer)
      initializerOf[w.value()] = w.initializer();
  llvm::StringSet<> frozenNames;
  for (const std::string &name : frozen) {
    bool known = llvm::any_of(initializerOf,
                              [&](const auto &e) { return e.second == name; });
    if (!known)
      return trainError("--freeze " + name +
                        ": the model has no initializer of that name");
    frozenNames.insert(name);
  }

  GradientPaths paths;
  paths.requiresGrad.assign(plan.values_size(), false);
  std::set<int32_t> trainable;
  for (int i = 0; i < plan.ops_size(); ++i) {
    const plan::Op &op = plan.ops(i);
    const TrainKernel &kernel = kernelOf(i);
    bool anyGrad = false;
    for (auto [j, in] : llvm::enumerate(op.inputs())) {
      if (in < 0)
        continue;
      if (kernel.updatesInput(j) && !weights.count(in))
        return trainError(describeOp(plan, i) + ": input " + llvm::Twine(j) +
                          " (running statistics) must be a weight");
      if (!kernel.differentiable(j))
        continue;
      auto name = initializerOf.find(in);
      if (name != initializerOf.end() &&
          plan.values(in).dtype() == plan::FLOAT &&
          !frozenNames.count(name->second)) {
        trainable.insert(in);
        paths.requiresGrad[in] = true;
      }
      anyGrad |= paths.requiresGrad[in];
    }
    paths.requiresGrad[op.outputs(0)] = anyGrad;
  }
  for (int32_t v : trainable) {
    paths.paramValues.push_back(v);
    const auto &dims = plan.values(v).dims();
    paths.params.push_back(
        {initializerOf[v], numElements(Shape(dims.begin(), dims.end()))});
  }
  if (paths.paramValues.empty())
    return trainError("the model has no trainable parameters");
  return paths;
}
