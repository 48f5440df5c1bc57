//===- Backprop.cpp - forward and backward over a range of plan ops -------===//

#include "heterps/Runtime/Train/Backprop.h"

#include "heterps/Runtime/MemoryLimit.h"
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

/// The Slices that make output j of `split` (sizes from the outputs' plan
/// shapes, which must be static along the axis).
static llvm::Expected<std::vector<std::unique_ptr<plan::Op>>>
splitAsSlices(const plan::Plan &plan, const plan::Op &split) {
  int64_t axis = 0;
  for (const plan::Attribute &a : split.attributes())
    if (a.name() == "axis")
      axis = a.i();
  std::vector<std::unique_ptr<plan::Op>> pieces;
  int64_t offset = 0;
  for (int32_t out : split.outputs()) {
    const plan::Value &v = plan.values(out);
    int64_t a = axis < 0 ? axis + v.dims_size() : axis;
    if (a < 0 || a >= v.dims_size() || v.dims(a) < 0)
      return trainError("a Split whose piece sizes are not static cannot be "
                        "trained");
    auto piece = std::make_unique<plan::Op>();
    piece->set_name(split.name());
    piece->set_type("Slice");
    piece->add_inputs(split.inputs(0));
    piece->add_outputs(out);
    for (auto [name, value] :
         {std::pair("starts", offset), std::pair("ends", offset + v.dims(a)),
          std::pair("axes", a), std::pair("steps", 1L)}) {
      plan::Attribute *attr = piece->add_attributes();
      attr->set_name(name);
      attr->mutable_ints()->add_values(value);
    }
    offset += v.dims(a);
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

llvm::Expected<OpSequence> OpSequence::create(const plan::Plan &plan,
                                              const WeightMap &weights,
                                              int begin, int end,
                                              const TrainBackend &backend,
                                              KernelOverride custom) {
  OpSequence seq(plan, backend, begin, end);
  auto add = [&](const plan::Op &op, int i, int output) -> llvm::Error {
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
    seq.steps.push_back({i, output, std::move(*kernel)});
    return llvm::Error::success();
  };
  for (int i = begin; i < end; ++i) {
    seq.firstStep.push_back(seq.steps.size());
    if (std::unique_ptr<TrainKernel> own = custom ? custom(i) : nullptr) {
      seq.steps.push_back({i, 0, std::move(own)});
      continue;
    }
    const plan::Op &op = plan.ops(i);
    if (op.type() != "Split") {
      if (llvm::Error e = add(op, i, 0))
        return std::move(e);
      continue;
    }
    auto pieces = splitAsSlices(plan, op);
    if (!pieces)
      return trainError(describeOp(plan, i) + ": " +
                        llvm::toString(pieces.takeError()));
    for (auto [j, piece] : llvm::enumerate(*pieces)) {
      if (llvm::Error e = add(*piece, i, static_cast<int>(j)))
        return std::move(e);
      seq.splitPieces.push_back(std::move(piece));
    }
  }
  return std::move(seq);
}

llvm::Error OpSequence::forward(std::vector<Tensor> &values) const {
  std::vector<const Tensor *> args;
  for (const Step &step : steps) {
    const plan::Op &op = program->ops(step.op);
    args.clear();
    for (int32_t in : op.inputs())
      args.push_back(in >= 0 ? &values[in] : nullptr);
    if (llvm::Error e = catchOutOfMemory([&] {
          return step.kernel->forward(args, values[op.outputs(step.output)]);
        }))
      return trainError(describeOp(*program, step.op) + ": " +
                        llvm::toString(std::move(e)));
  }
  return llvm::Error::success();
}

llvm::Error OpSequence::backward(std::vector<Tensor> &values,
                                 std::vector<Tensor> &grads,
                                 const std::vector<bool> &requiresGrad) const {
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    const Step &step = *it;
    int i = step.op;
    const plan::Op &op = program->ops(i);
    int32_t outValue = op.outputs(step.output);
    Tensor dy = std::move(grads[outValue]);
    TrainKernel &k = *step.kernel;
    std::vector<const Tensor *> args;
    llvm::SmallVector<bool, 8> need;
    for (auto [j, in] : llvm::enumerate(op.inputs())) {
      args.push_back(in >= 0 ? &values[in] : nullptr);
      need.push_back(!dy.isNull() && in >= 0 && requiresGrad[in] &&
                     k.differentiable(j));
    }
    if (llvm::any_of(need, [](bool n) { return n; })) {
      std::vector<Tensor> dInputs(op.inputs_size());
      if (llvm::Error e = catchOutOfMemory([&] {
            return k.backward(args, values[outValue], dy, need, dInputs);
          }))
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
    values[outValue] = Tensor();
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
    for (int32_t out : op.outputs())
      paths.requiresGrad[out] = anyGrad;
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
