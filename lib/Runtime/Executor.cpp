//===- Executor.cpp - sequential execution of a plan ----------------------===//

#include "heterps/Runtime/Executor.h"

#include "Fusion.h"
#include "heterps/Runtime/MemoryLimit.h"
#include "heterps/Runtime/NonFinite.h"
#include "heterps/Runtime/Plan.h"

#include "llvm/ADT/STLExtras.h"

#include <chrono>

using namespace heterps::runtime;

static llvm::Error runError(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

static std::string valueType(const plan::Value &v) {
  return std::string(v.dtype() == plan::INT64 ? "i64" : "f32") +
         shapeToString(llvm::ArrayRef<int64_t>(v.dims().data(), v.dims_size()));
}

/// Whether `t` has `v`'s type; -1 dimensions match any size.
static bool matches(const Tensor &t, const plan::Value &v) {
  DType dtype = v.dtype() == plan::INT64 ? DType::I64 : DType::F32;
  if (t.dtype() != dtype || t.rank() != v.dims_size())
    return false;
  for (int i = 0; i < v.dims_size(); ++i)
    if (v.dims(i) >= 0 && v.dims(i) != t.dim(i))
      return false;
  return true;
}

Executor::Executor(plan::Plan plan, WeightMap weights, ExecutorOptions options,
                   bool passNaN)
    : program(std::move(plan)), options(options),
      cpu(CPUBackendOptions{options.numThreads, options.autotune, passNaN}) {
  if (options.propagateNaN) {
    source = program;
    sourceWeights = weights; // shares the buffers: fusion copies, never edits
    nonFiniteWeights = llvm::any_of(
        weights, [](const auto &entry) { return hasNonFinite(entry.second); });
  }
  foldBatchNorms(program, weights);
  if (options.fuse) {
    fusePads(program, weights);
    fuseResidualAdds(program);
    fuseActivations(program);
    fuseDepthwiseConvs(program, weights);
  }
  constants.resize(program.values_size());
  for (auto &[index, tensor] : weights)
    constants[index] = std::move(tensor);
}

Executor::~Executor() = default;

llvm::Expected<std::unique_ptr<Executor>>
Executor::create(const plan::Plan &plan, ExecutorOptions options) {
  llvm::Expected<WeightMap> weights = loadWeights(plan);
  if (!weights)
    return weights.takeError();
  auto executor = create(plan, std::move(*weights), std::move(options));
  // Read again if ever needed, rather than kept beside the folded ones.
  if (executor)
    (*executor)->sourceWeights.reset();
  return executor;
}

llvm::Expected<std::unique_ptr<Executor>>
Executor::create(const plan::Plan &plan, WeightMap weights,
                 ExecutorOptions options) {
  if (llvm::Error e = verifyPlan(plan, "plan"))
    return e;
  for (const plan::Weight &w : plan.weights())
    if (!weights.count(w.value()))
      return runError("plan: no tensor was supplied for weight value " +
                      llvm::Twine(w.value()) + " ('" +
                      plan.values(w.value()).name() + "')");
  std::unique_ptr<Executor> executor(
      new Executor(plan, std::move(weights), std::move(options)));
  if (llvm::Error e = executor->prepare())
    return e;
  return executor;
}

llvm::Error Executor::prepare() {
  auto missing = devicesToEmulate(program, options.cpuDeviceTypes,
                                  options.emulateMissingDevices);
  if (!missing)
    return missing.takeError();
  emulated = std::move(*missing);
  std::vector<int> lastUse(program.values_size(), -1);
  for (int i = 0; i < program.ops_size(); ++i) {
    const plan::Op &op = program.ops(i);
    std::string where = describeOp(program, i);
    // An output that cannot fit (a Pad to a crafted size) is an
    // error now, not a failed allocation in the middle of a run.
    for (int32_t v : op.outputs()) {
      const plan::Value &value = program.values(v);
      llvm::ArrayRef<int64_t> dims(value.dims().data(), value.dims_size());
      if (llvm::any_of(dims, [](int64_t d) { return d < 0; }))
        continue;
      DType type = value.dtype() == plan::INT64 ? DType::I64 : DType::F32;
      llvm::Expected<uint64_t> bytes = checkedByteSize(dims, dtypeSize(type));
      if (!bytes)
        return runError(where +
                        ": its output: " + llvm::toString(bytes.takeError()));
      if (llvm::Error e =
              checkFitsInMemory(*bytes, "its output " + valueType(value)))
        return runError(where + ": " + llvm::toString(std::move(e)));
    }
    std::vector<const Tensor *> opConstants;
    for (int32_t v : op.inputs()) {
      opConstants.push_back(v >= 0 && !constants[v].isNull() ? &constants[v]
                                                             : nullptr);
      if (v >= 0)
        lastUse[v] = i;
    }
    llvm::Expected<std::unique_ptr<Kernel>> kernel =
        cpu.createKernel(OpInfo(op, std::move(opConstants)));
    if (!kernel)
      return runError(where + ": " + llvm::toString(kernel.takeError()));
    kernels.push_back(std::move(*kernel));
  }
  std::vector<bool> keep(program.values_size(), false);
  for (const plan::Binding &b : program.outputs())
    keep[b.value()] = true;
  releaseAfter.resize(program.ops_size());
  for (int v = 0; v < program.values_size(); ++v)
    if (lastUse[v] >= 0 && !keep[v] && constants[v].isNull())
      releaseAfter[lastUse[v]].push_back(v);
  planInPlaceJoins();
  return llvm::Error::success();
}

// A Concat copies its inputs into its output. Where the producer of an input
// can write into a part of that output instead (a Conv or pool into whole
// channel blocks of a batch-1 Concat), the copy goes: GoogLeNet's nine
// Concats took 3% of its time at batch 1. A value joins one Concat at most,
// and only once.
void Executor::planInPlaceJoins() {
  std::vector<int> producer(program.values_size(), -1);
  for (int i = 0; i < program.ops_size(); ++i)
    for (int32_t v : program.ops(i).outputs())
      producer[v] = i;
  std::vector<bool> claimed(program.values_size(), false);
  joinsBefore.assign(program.ops_size(), {});
  for (int c = 0; c < program.ops_size(); ++c) {
    const plan::Op &op = program.ops(c);
    if (!kernels[c]->joinsInputs() || op.outputs_size() != 1)
      continue;
    InPlaceJoin join{c, {}};
    int first = c;
    for (int k = 0; k < op.inputs_size(); ++k) {
      int32_t v = op.inputs(k);
      if (v < 0 || claimed[v] || producer[v] < 0 ||
          !kernels[producer[v]]->fillsOfferedOutputs() ||
          llvm::count(op.inputs(), v) != 1)
        continue;
      claimed[v] = true;
      join.inputs.push_back(k);
      first = std::min(first, producer[v]);
    }
    if (!join.inputs.empty())
      joinsBefore[first].push_back(std::move(join));
  }
}

llvm::Error Executor::checkInput(int index, const Tensor &t) const {
  const plan::Binding &b = program.inputs(index);
  const plan::Value &v = program.values(b.value());
  if (t.isNull())
    return runError("input '" + b.name() + "' is empty");
  if (!matches(t, v))
    return runError("input '" + b.name() + "': expected " + valueType(v) +
                    ", got " + t.typeString());
  return llvm::Error::success();
}

llvm::Error Executor::checkOutput(int op, const Tensor &t,
                                  int32_t value) const {
  const plan::Value &v = program.values(value);
  if (t.isNull())
    return runError(describeOp(program, op) + " produced no output value " +
                    llvm::Twine(value));
  if (!matches(t, v))
    return runError(describeOp(program, op) + " produced " + t.typeString() +
                    " for '" + v.name() + "', but the plan expects " +
                    valueType(v));
  return llvm::Error::success();
}

llvm::Expected<std::vector<Tensor>>
Executor::run(const std::map<std::string, Tensor> &inputs) {
  std::vector<Tensor> ordered;
  for (const plan::Binding &b : program.inputs()) {
    auto it = inputs.find(b.name());
    if (it == inputs.end())
      return runError("missing input '" + b.name() + "'");
    ordered.push_back(it->second);
  }
  for (const auto &[name, tensor] : inputs)
    if (llvm::none_of(program.inputs(),
                      [&, &name = name](const plan::Binding &b) {
                        return b.name() == name;
                      }))
      return runError("unknown input '" + name + "' (the plan's inputs are " +
                      describeInputs(program) + ")");
  return run(ordered);
}

llvm::Expected<std::vector<Tensor>>
Executor::run(llvm::ArrayRef<Tensor> inputs) {
  if (static_cast<int>(inputs.size()) != program.inputs_size())
    return runError("expected " + llvm::Twine(program.inputs_size()) +
                    " inputs, got " + llvm::Twine(inputs.size()));
  if (options.propagateNaN &&
      (nonFiniteWeights || llvm::any_of(inputs, hasNonFinite))) {
    // Unfused (no activation inside a Conv), with NaN-passing kernels.
    if (!nanPassing) {
      llvm::Expected<WeightMap> weights =
          sourceWeights ? *sourceWeights : loadWeights(source);
      if (!weights)
        return weights.takeError();
      ExecutorOptions unfused = options;
      unfused.fuse = false;
      unfused.propagateNaN = false;
      nanPassing.reset(new Executor(source, std::move(*weights), unfused,
                                    /*passNaN=*/true));
      if (llvm::Error e = nanPassing->prepare()) {
        nanPassing.reset();
        return e;
      }
    }
    return nanPassing->run(inputs);
  }
  cpu.enterThread();
  std::vector<Tensor> values(program.values_size());
  for (int i = 0; i < program.inputs_size(); ++i) {
    if (llvm::Error e = checkInput(i, inputs[i]))
      return e;
    values[program.inputs(i).value()] = inputs[i];
  }
  auto lookup = [&](int32_t v) -> const Tensor & {
    return constants[v].isNull() ? values[v] : constants[v];
  };

  std::vector<const Tensor *> args;
  std::vector<Tensor> plainArgs, lastReads, results;
  // Per value, the destination offered to the op computing it (see
  // planInPlaceJoins): a join's output, or the part of it a join input is.
  std::vector<Tensor> offered(program.values_size());
  for (int i = 0; i < program.ops_size(); ++i) {
    const plan::Op &op = program.ops(i);
    Kernel &kernel = *kernels[i];
    for (const InPlaceJoin &join : joinsBefore[i]) {
      std::optional<JoinDestinations> d = kernels[join.op]->joinDestinations();
      const plan::Op &joinOp = program.ops(join.op);
      if (!d || static_cast<int>(d->inputs.size()) != joinOp.inputs_size())
        continue;
      offered[joinOp.outputs(0)] = std::move(d->output);
      for (int k : join.inputs)
        offered[joinOp.inputs(k)] = std::move(d->inputs[k]);
    }
    args.clear();
    plainArgs.assign(op.inputs_size(), Tensor());
    // The values this op reads last move out of `values`: the kernel then
    // holds their only reference and may reuse their buffers (a summed Conv
    // accumulates into its addend).
    lastReads.clear();
    for (int32_t v : releaseAfter[i])
      lastReads.push_back(std::move(values[v]));
    for (int k = 0; k < op.inputs_size(); ++k) {
      int32_t v = op.inputs(k);
      const Tensor *t = nullptr;
      if (v >= 0) {
        auto dying = llvm::find(releaseAfter[i], v);
        t = dying == releaseAfter[i].end()
                ? &lookup(v)
                : &lastReads[dying - releaseAfter[i].begin()];
      }
      if (t && !t->isPlain() && !kernel.acceptsLayouts()) {
        llvm::Expected<Tensor> plain = t->toPlain();
        if (!plain)
          return runError(describeOp(program, i) + ": " +
                          llvm::toString(plain.takeError()));
        plainArgs[k] = std::move(*plain);
        t = &plainArgs[k];
      }
      args.push_back(t);
    }
    results.assign(op.outputs_size(), Tensor());
    if (kernel.fillsOfferedOutputs() || kernel.joinsInputs())
      for (int k = 0; k < op.outputs_size(); ++k)
        results[k] = std::move(offered[op.outputs(k)]);
    auto start = std::chrono::steady_clock::now();
    if (llvm::Error e =
            catchOutOfMemory([&] { return kernel.run(args, results); }))
      return runError(describeOp(program, i) + ": " +
                      llvm::toString(std::move(e)));
    if (options.timeOps) {
      opTimes.resize(program.ops_size());
      opTimes[i] += std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    }
    for (int k = 0; k < op.outputs_size(); ++k) {
      if (llvm::Error e = checkOutput(i, results[k], op.outputs(k)))
        return e;
      values[op.outputs(k)] = std::move(results[k]);
    }
  }

  std::vector<Tensor> outputs;
  for (const plan::Binding &b : program.outputs()) {
    llvm::Expected<Tensor> plain = lookup(b.value()).toPlain();
    if (!plain)
      return runError("output '" + b.name() +
                      "': " + llvm::toString(plain.takeError()));
    outputs.push_back(std::move(*plain));
  }
  return outputs;
}
