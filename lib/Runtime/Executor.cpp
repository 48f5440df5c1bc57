//===- Executor.cpp - sequential execution of a plan ----------------------===//

#include "heterps/Runtime/Executor.h"

#include "ConstantOps.h"

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
  return std::string(dtypeName(dtypeOf(v))) +
         shapeToString(llvm::ArrayRef<int64_t>(v.dims().data(), v.dims_size()));
}

Executor::Executor(plan::Plan plan, WeightMap weights, ExecutorOptions options,
                   std::unique_ptr<Devices> devices)
    : program(std::move(plan)), options(options), devices(std::move(devices)) {
  if (options.propagateNaN) {
    source = program;
    sourceWeights = weights; // shares the buffers: rewrites copy, never edit
  }
  if (options.foldConstants)
    foldConstantOps(program, weights, this->devices->host());
  if (options.propagateNaN) {
    // A fill value that only Where selects (the -inf of an attention mask)
    // is copied, never computed with: it cannot become a NaN a fused
    // kernel would lose. Checked after folding: a mask computed from
    // constants is then a weight the scores are added to.
    std::vector<bool> computedWith(program.values_size(), false);
    for (const plan::Op &op : program.ops())
      for (auto [k, v] : llvm::enumerate(op.inputs()))
        if (v >= 0 && !(op.type() == "Where" && k > 0))
          computedWith[v] = true;
    nonFiniteWeights = llvm::any_of(weights, [&](const auto &entry) {
      return computedWith[entry.first] && hasNonFinite(entry.second);
    });
  }
  this->devices->rewriteForInference(program, weights);
  // The rewrites' own ops of weights alone (a Conv's weights split by
  // input channels) are computed once too.
  if (options.foldConstants)
    foldConstantOps(program, weights, this->devices->host());
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
  return make(plan, std::move(weights), std::move(options), /*passNaN=*/false);
}

llvm::Expected<std::unique_ptr<Executor>>
Executor::make(const plan::Plan &plan, WeightMap weights,
               ExecutorOptions options, bool passNaN) {
  DeviceOptions deviceOptions;
  deviceOptions.backend =
      BackendOptions{options.numThreads, options.autotune, passNaN,
                     options.fuse && !passNaN, options.timeOps};
  deviceOptions.cpuDeviceTypes = options.cpuDeviceTypes;
  deviceOptions.emulateMissingDevices = options.emulateMissingDevices;
  auto devices = Devices::create(plan, deviceOptions);
  if (!devices)
    return devices.takeError();
  std::unique_ptr<Executor> executor(new Executor(
      plan, std::move(weights), std::move(options), std::move(*devices)));
  if (llvm::Error e = executor->prepare())
    return std::move(e);
  return executor;
}

llvm::Error Executor::prepare() {
  for (int i = 0; i < program.ops_size(); ++i) {
    const plan::Op &op = program.ops(i);
    // An output that cannot fit (a Pad to a crafted size) is an
    // error now, not a failed allocation in the middle of a run.
    for (int32_t v : op.outputs()) {
      const plan::Value &value = program.values(v);
      llvm::ArrayRef<int64_t> dims(value.dims().data(), value.dims_size());
      if (llvm::any_of(dims, [](int64_t d) { return d < 0; }))
        continue;
      DType type = dtypeOf(value);
      llvm::Expected<uint64_t> bytes = checkedByteSize(dims, dtypeSize(type));
      if (!bytes)
        return runError(describeOp(program, i) +
                        ": its output: " + llvm::toString(bytes.takeError()));
      if (llvm::Error e =
              checkFitsInMemory(*bytes, "its output " + valueType(value)))
        return runError(describeOp(program, i) + ": " +
                        llvm::toString(std::move(e)));
    }
  }
  if (llvm::Error e = placeValues())
    return e;
  int numSlots = static_cast<int>(constants.size());
  std::vector<int> lastUse(numSlots, -1);
  for (int i = 0; i < program.ops_size(); ++i) {
    const plan::Op &op = program.ops(i);
    std::vector<const Tensor *> opConstants;
    for (int32_t v : args[i]) {
      opConstants.push_back(v >= 0 && !constants[v].isNull() ? &constants[v]
                                                             : nullptr);
      if (v >= 0)
        lastUse[v] = i;
    }
    for (const Copy &copy : copiesBefore[i])
      lastUse[copy.from] = std::max(lastUse[copy.from], i);
    llvm::Expected<std::unique_ptr<Kernel>> kernel =
        devices->of(op).createKernel(OpInfo(op, std::move(opConstants)));
    if (!kernel)
      return runError(describeOp(program, i) + ": " +
                      llvm::toString(kernel.takeError()));
    kernels.push_back(std::move(*kernel));
  }
  std::vector<bool> keep(numSlots, false);
  for (const plan::Binding &b : program.outputs())
    keep[b.value()] = true;
  releaseAfter.assign(program.ops_size(), {});
  for (int v = 0; v < numSlots; ++v)
    if (lastUse[v] >= 0 && !keep[v] && constants[v].isNull())
      releaseAfter[lastUse[v]].push_back(v);
  planInPlaceJoins();
  return llvm::Error::success();
}

// Values live where they are made: graph inputs and weights in host memory,
// an op's outputs in its backend's. An op on another device reads a copy,
// made once per value and memory space: weights now, activations on every
// run just before their first reader there.
llvm::Error Executor::placeValues() {
  MemorySpace &host = MemorySpace::host();
  std::vector<MemorySpace *> home(program.values_size(), &host);
  std::map<std::pair<int32_t, MemorySpace *>, int32_t> copySlot;
  args.assign(program.ops_size(), {});
  copiesBefore.assign(program.ops_size(), {});
  // Weights some op reads where they are (or the graph outputs).
  std::vector<bool> readAtHome(program.values_size(), false);
  for (const plan::Binding &b : program.outputs())
    readAtHome[b.value()] = true;
  for (int i = 0; i < program.ops_size(); ++i) {
    const plan::Op &op = program.ops(i);
    MemorySpace *space = &devices->of(op).memory();
    for (int32_t v : op.inputs()) {
      if (v < 0 || home[v] == space) {
        args[i].push_back(v);
        if (v >= 0)
          readAtHome[v] = true;
        continue;
      }
      auto [it, added] = copySlot.try_emplace({v, space}, constants.size());
      args[i].push_back(it->second);
      if (!added)
        continue;
      constants.emplace_back();
      if (constants[v].isNull()) {
        copiesBefore[i].push_back({v, it->second, space});
        continue;
      }
      llvm::Expected<Tensor> moved = devices->moveTo(constants[v], *space);
      if (!moved)
        return runError(describeOp(program, i) + ": moving weight '" +
                        program.values(v).name() + "' to " + space->name() +
                        ": " + llvm::toString(moved.takeError()));
      constants.back() = std::move(*moved);
    }
    for (int32_t v : op.outputs())
      home[v] = space;
  }
  // A weight only devices read lives only in their memory.
  for (const auto &[key, slot] : copySlot)
    if (!readAtHome[key.first] && !constants[slot].isNull())
      constants[key.first] = Tensor();
  outputsOnDevice = 0;
  for (const plan::Binding &b : program.outputs())
    outputsOnDevice += home[b.value()] != &host;
  return llvm::Error::success();
}

int64_t Executor::counter(llvm::StringRef name) const {
  std::map<std::string, int64_t> all = devices->counters();
  auto it = all.find(name.str());
  return it == all.end() ? 0 : it->second;
}

int Executor::transfersPerRun() const {
  int n = outputsOnDevice;
  for (const auto &copies : copiesBefore)
    n += static_cast<int>(copies.size());
  return n;
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
      // A value copied from another device is no producer's output.
      if (v < 0 || args[c][k] != v || claimed[v] || producer[v] < 0 ||
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
  if (!hasValueType(t, v))
    return runError("input '" + b.name() + "': expected " + valueType(v) +
                    ", got " + t.typeString());
  return llvm::Error::success();
}

llvm::Error Executor::checkNamedDims(llvm::ArrayRef<Tensor> inputs) const {
  // Name -> (input, dimension) that gave it its size first.
  llvm::StringMap<std::pair<int, int>> first;
  for (int i = 0; i < program.inputs_size(); ++i) {
    const plan::Binding &b = program.inputs(i);
    for (int d = 0; d < b.dim_names_size() && d < inputs[i].rank(); ++d) {
      const std::string &name = b.dim_names(d);
      if (name.empty())
        continue;
      auto [it, added] = first.try_emplace(name, i, d);
      auto [j, e] = it->second;
      if (added || inputs[j].dim(e) == inputs[i].dim(d))
        continue;
      return runError("inputs '" + program.inputs(j).name() + "' " +
                      inputs[j].typeString() + " and '" + b.name() + "' " +
                      inputs[i].typeString() + " disagree on dimension '" +
                      name + "' (" + llvm::Twine(inputs[j].dim(e)) + " and " +
                      llvm::Twine(inputs[i].dim(d)) + ")");
    }
  }
  return llvm::Error::success();
}

llvm::Error Executor::checkOutput(int op, const Tensor &t,
                                  int32_t value) const {
  const plan::Value &v = program.values(value);
  if (t.isNull())
    return runError(describeOp(program, op) + " produced no output value " +
                    llvm::Twine(value));
  if (!hasValueType(t, v))
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
      auto made = make(source, std::move(*weights), unfused, /*passNaN=*/true);
      if (!made)
        return made.takeError();
      nanPassing = std::move(*made);
    }
    return nanPassing->run(inputs);
  }
  devices->enterThread();
  std::vector<Tensor> values(constants.size());
  for (int i = 0; i < program.inputs_size(); ++i) {
    if (llvm::Error e = checkInput(i, inputs[i]))
      return e;
    values[program.inputs(i).value()] = inputs[i];
  }
  if (llvm::Error e = checkNamedDims(inputs))
    return e;
  auto lookup = [&](int32_t v) -> const Tensor & {
    return constants[v].isNull() ? values[v] : constants[v];
  };

  std::vector<const Tensor *> opArgs;
  std::vector<Tensor> plainArgs, lastReads, results;
  std::vector<Completion> copying;
  // Per value, the destination offered to the op computing it (see
  // planInPlaceJoins): a join's output, or the part of it a join input is.
  std::vector<Tensor> offered(program.values_size());
  for (int i = 0; i < program.ops_size(); ++i) {
    const plan::Op &op = program.ops(i);
    Kernel &kernel = *kernels[i];
    copying.clear();
    for (const Copy &copy : copiesBefore[i]) {
      llvm::Expected<Transfer> moving =
          devices->transfer(values[copy.from], *copy.space);
      if (!moving)
        return runError(describeOp(program, i) + ": copying its input '" +
                        program.values(copy.from).name() + "' to " +
                        copy.space->name() + ": " +
                        llvm::toString(moving.takeError()));
      values[copy.to] = std::move(moving->tensor);
      copying.push_back(std::move(moving->done));
    }
    for (const Completion &done : copying)
      if (llvm::Error e = done.wait())
        return runError(describeOp(program, i) + ": " +
                        llvm::toString(std::move(e)));
    for (const InPlaceJoin &join : joinsBefore[i]) {
      std::optional<JoinDestinations> d = kernels[join.op]->joinDestinations();
      const plan::Op &joinOp = program.ops(join.op);
      if (!d || static_cast<int>(d->inputs.size()) != joinOp.inputs_size())
        continue;
      offered[joinOp.outputs(0)] = std::move(d->output);
      for (int k : join.inputs)
        offered[joinOp.inputs(k)] = std::move(d->inputs[k]);
    }
    opArgs.clear();
    plainArgs.assign(op.inputs_size(), Tensor());
    // The values this op reads last move out of `values`: the kernel then
    // holds their only reference and may reuse their buffers (a summed Conv
    // accumulates into its addend).
    lastReads.clear();
    for (int32_t v : releaseAfter[i])
      lastReads.push_back(std::move(values[v]));
    for (int k = 0; k < op.inputs_size(); ++k) {
      int32_t v = args[i][k];
      const Tensor *t = nullptr;
      if (v >= 0) {
        auto dying = llvm::find(releaseAfter[i], v);
        if (dying != releaseAfter[i].end()) {
          t = &lastReads[dying - releaseAfter[i].begin()];
        } else {
          // A second reference, so that the kernel does not take the
          // buffer as its alone (Tensor::ownsBufferAlone): others read it
          // later, or it is a weight.
          plainArgs[k] = lookup(v);
          t = &plainArgs[k];
        }
      }
      if (t && !t->isPlain() && !kernel.acceptsLayouts()) {
        llvm::Expected<Tensor> plain = t->toPlain();
        if (!plain)
          return runError(describeOp(program, i) + ": " +
                          llvm::toString(plain.takeError()));
        plainArgs[k] = std::move(*plain);
        t = &plainArgs[k];
      }
      opArgs.push_back(t);
    }
    results.assign(op.outputs_size(), Tensor());
    if (kernel.fillsOfferedOutputs() || kernel.joinsInputs())
      for (int k = 0; k < op.outputs_size(); ++k)
        results[k] = std::move(offered[op.outputs(k)]);
    auto start = std::chrono::steady_clock::now();
    if (llvm::Error e =
            catchOutOfMemory([&] { return kernel.run(opArgs, results); }))
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
    llvm::Expected<Tensor> plain =
        devices->moveTo(lookup(b.value()), MemorySpace::host());
    if (plain)
      plain = plain->toPlain();
    if (!plain)
      return runError("output '" + b.name() +
                      "': " + llvm::toString(plain.takeError()));
    outputs.push_back(std::move(*plain));
  }
  return outputs;
}
