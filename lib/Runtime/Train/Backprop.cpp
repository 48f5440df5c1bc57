//===- Backprop.cpp - forward and backward over a range of plan ops -------===//

#include "heterps/Runtime/Train/Backprop.h"

#include "heterps/Runtime/MemoryLimit.h"
#include "heterps/Runtime/NonFinite.h"
#include "heterps/Runtime/Plan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"

#include <cstring>
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

llvm::Expected<OpSequence>
OpSequence::create(const plan::Plan &plan, const WeightMap &weights, int begin,
                   int end, const Devices &devices, KernelOverride custom) {
  OpSequence seq(plan, devices, begin, end);
  MemorySpace &host = MemorySpace::host();
  // Values handed out of the range: graph outputs and what later or
  // earlier ops read.
  std::set<int32_t> handedOut;
  for (const plan::Binding &b : plan.outputs())
    handedOut.insert(b.value());
  for (int i = 0; i < plan.ops_size(); ++i)
    if (i < begin || i >= end)
      for (int32_t v : plan.ops(i).inputs())
        handedOut.insert(v);
  // Per value: the slot holding it in its producer's memory, and per slot
  // that memory (host for values from outside the range).
  std::vector<int32_t> where(plan.values_size());
  for (int v = 0; v < plan.values_size(); ++v)
    where[v] = v;
  std::vector<MemorySpace *> home(plan.values_size(), &host);
  std::vector<bool> producedHere(plan.values_size(), false);
  std::map<std::pair<int32_t, MemorySpace *>, int32_t> copySlot;
  auto newSlot = [&](MemorySpace *space) {
    home.push_back(space);
    return seq.numSlots++;
  };

  auto add = [&](const plan::Op &op, int i, int output,
                 std::unique_ptr<TrainKernel> own) -> llvm::Error {
    Step step{i, output, std::move(own)};
    step.space = step.kernel ? &host : &devices.of(op).memory();
    if (!step.kernel) {
      std::vector<const Tensor *> constants;
      for (int32_t in : op.inputs()) {
        auto it = weights.find(in);
        constants.push_back(in >= 0 && it != weights.end() ? &it->second
                                                           : nullptr);
      }
      // Kernels read only the weights' shapes when made (the values come
      // with each run), but take them in their own memory: uninitialised
      // stand-ins of the same shape serve.
      std::vector<Tensor> placed;
      placed.reserve(constants.size());
      for (const Tensor *&c : constants)
        if (c && &c->space() != step.space)
          c = &placed.emplace_back(Tensor(c->dtype(), c->shape(), *step.space));
      auto kernel = devices.trainer(op).createKernel(OpInfo(op, constants), i);
      if (!kernel)
        return trainError(describeOp(plan, i) + ": " +
                          llvm::toString(kernel.takeError()));
      step.kernel = std::move(*kernel);
    }
    for (int32_t in : op.inputs()) {
      if (in < 0) {
        step.args.push_back(-1);
        continue;
      }
      int32_t src = where[in];
      // A value handed out is in host memory too.
      if (step.space == &host && src != in)
        src = in;
      if (home[src] == step.space) {
        step.args.push_back(src);
        continue;
      }
      auto [it, added] = copySlot.try_emplace({src, step.space}, 0);
      if (added) {
        it->second = newSlot(step.space);
        step.copiesBefore.push_back({src, it->second});
        seq.copiesOf[src].push_back(it->second);
        if (src < plan.values_size() && !producedHere[src] &&
            !llvm::is_contained(seq.importedCopied, src))
          seq.importedCopied.push_back(src);
      }
      step.args.push_back(it->second);
    }
    // A Split piece's output is output `output` of the Split.
    int32_t out = plan.ops(i).outputs(output);
    producedHere[out] = true;
    home[out] = step.space;
    step.out = out;
    if (step.space != &host && handedOut.count(out)) {
      step.out = newSlot(step.space);
      where[out] = step.out;
      home[out] = &host;
    }
    seq.steps.push_back(std::move(step));
    return llvm::Error::success();
  };
  for (int i = begin; i < end; ++i) {
    seq.firstStep.push_back(seq.steps.size());
    if (std::unique_ptr<TrainKernel> own = custom ? custom(i) : nullptr) {
      if (llvm::Error e = add(plan.ops(i), i, 0, std::move(own)))
        return std::move(e);
      continue;
    }
    const plan::Op &op = plan.ops(i);
    if (op.type() != "Split") {
      if (llvm::Error e = add(op, i, 0, nullptr))
        return std::move(e);
      continue;
    }
    auto pieces = splitAsSlices(plan, op);
    if (!pieces)
      return trainError(describeOp(plan, i) + ": " +
                        llvm::toString(pieces.takeError()));
    for (auto [j, piece] : llvm::enumerate(*pieces)) {
      if (llvm::Error e = add(*piece, i, static_cast<int>(j), nullptr))
        return std::move(e);
      seq.splitPieces.push_back(std::move(piece));
    }
  }
  return std::move(seq);
}

llvm::Error OpSequence::forward(std::vector<Tensor> &values) const {
  if (static_cast<int32_t>(values.size()) < numSlots)
    values.resize(numSlots);
  std::vector<const Tensor *> args;
  std::vector<Completion> copying;
  for (const Step &step : steps) {
    const plan::Op &op = program->ops(step.op);
    auto fail = [&](llvm::Error e) {
      return trainError(describeOp(*program, step.op) + ": " +
                        llvm::toString(std::move(e)));
    };
    copying.clear();
    for (const Copy &copy : step.copiesBefore) {
      llvm::Expected<Transfer> moving =
          devices->transfer(values[copy.from], *step.space);
      if (!moving)
        return fail(moving.takeError());
      values[copy.to] = std::move(moving->tensor);
      copying.push_back(std::move(moving->done));
    }
    for (const Completion &done : copying)
      if (llvm::Error e = done.wait())
        return fail(std::move(e));
    args.clear();
    for (int32_t slot : step.args)
      args.push_back(slot >= 0 ? &values[slot] : nullptr);
    if (llvm::Error e = catchOutOfMemory(
            [&] { return step.kernel->forward(args, values[step.out]); }))
      return fail(std::move(e));
    int32_t out = op.outputs(step.output);
    if (step.out != out) {
      llvm::Expected<Tensor> handed =
          devices->moveTo(values[step.out], MemorySpace::host());
      if (!handed)
        return fail(handed.takeError());
      values[out] = std::move(*handed);
    }
    // State the kernel updated on a device copy (running statistics) goes
    // back into the weight.
    for (auto [j, slot] : llvm::enumerate(step.args)) {
      int32_t in = op.inputs(j);
      if (slot < 0 || slot == in || !step.kernel->updatesInput(j))
        continue;
      llvm::Expected<Tensor> back =
          devices->moveTo(values[slot], values[in].space());
      if (!back)
        return fail(back.takeError());
      std::memcpy(values[in].rawData(), back->rawData(), back->bytes());
    }
  }
  return llvm::Error::success();
}

llvm::Error OpSequence::addGradient(std::vector<Tensor> &grads, int32_t slot,
                                    Tensor grad, MemorySpace &space) const {
  if (&grad.space() != &space) {
    llvm::Expected<Tensor> moved = devices->moveTo(grad, space);
    if (!moved)
      return moved.takeError();
    grad = std::move(*moved);
  }
  if (grads[slot].isNull()) {
    grads[slot] = std::move(grad);
    return llvm::Error::success();
  }
  return devices->trainer(space).accumulate(grads[slot], grad);
}

llvm::Error OpSequence::gatherCopyGradients(std::vector<Tensor> &grads,
                                            int32_t slot,
                                            MemorySpace &space) const {
  auto copies = copiesOf.find(slot);
  if (copies == copiesOf.end())
    return llvm::Error::success();
  for (int32_t copy : copies->second)
    if (!grads[copy].isNull())
      if (llvm::Error e =
              addGradient(grads, slot, std::move(grads[copy]), space))
        return e;
  return llvm::Error::success();
}

llvm::Error OpSequence::backward(std::vector<Tensor> &values,
                                 std::vector<Tensor> &grads,
                                 const std::vector<bool> &requiresGrad) const {
  if (static_cast<int32_t>(grads.size()) < numSlots)
    grads.resize(numSlots);
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    const Step &step = *it;
    int i = step.op;
    const plan::Op &op = program->ops(i);
    auto fail = [&](const char *what, llvm::Error e) {
      return trainError(describeOp(*program, i) + what +
                        llvm::toString(std::move(e)));
    };
    int32_t outValue = op.outputs(step.output);
    // The output's gradient: from outside (a value handed out), and from
    // the readers of its copies on other devices.
    if (step.out != outValue && !grads[outValue].isNull())
      if (llvm::Error e = addGradient(grads, step.out,
                                      std::move(grads[outValue]), *step.space))
        return fail(": ", std::move(e));
    if (llvm::Error e = gatherCopyGradients(grads, step.out, *step.space))
      return fail(": ", std::move(e));
    if (step.out != outValue)
      if (llvm::Error e = gatherCopyGradients(grads, outValue, *step.space))
        return fail(": ", std::move(e));
    Tensor dy = std::move(grads[step.out]);
    TrainKernel &k = *step.kernel;
    std::vector<const Tensor *> args;
    llvm::SmallVector<bool, 8> need;
    for (auto [j, in] : llvm::enumerate(op.inputs())) {
      int32_t slot = step.args[j];
      args.push_back(slot >= 0 ? &values[slot] : nullptr);
      need.push_back(!dy.isNull() && in >= 0 && requiresGrad[in] &&
                     k.differentiable(j));
    }
    if (llvm::any_of(need, [](bool n) { return n; })) {
      std::vector<Tensor> dInputs(op.inputs_size());
      if (llvm::Error e = catchOutOfMemory([&] {
            return k.backward(args, values[step.out], dy, need, dInputs);
          }))
        return fail(" (backward): ", std::move(e));
      for (auto [j, slot] : llvm::enumerate(step.args))
        if (need[j] && !dInputs[j].isNull())
          if (llvm::Error e =
                  addGradient(grads, slot, std::move(dInputs[j]), *step.space))
            return fail(": ", std::move(e));
    }
    // Activations are dead once their op's backward has run.
    values[step.out] = Tensor();
    values[outValue] = Tensor();
  }
  // Gradients of copies of values from outside go back to the host.
  for (int32_t v : importedCopied)
    if (llvm::Error e = gatherCopyGradients(grads, v, MemorySpace::host()))
      return e;
  for (int32_t slot = program->values_size(); slot < numSlots; ++slot) {
    values[slot] = Tensor();
    grads[slot] = Tensor();
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
      // A weight of infinities (an attention mask's fill value) is a
      // constant of the model, not a parameter.
      auto name = initializerOf.find(in);
      auto weight = weights.find(in);
      if (name != initializerOf.end() &&
          plan.values(in).dtype() == plan::FLOAT &&
          !frozenNames.count(name->second) &&
          !(weight != weights.end() && isInfiniteFill(weight->second))) {
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
