//===- ConstantOps.cpp - ops of weights alone, computed once -------------===//

#include "ConstantOps.h"

#include "heterps/Runtime/Plan.h"

#include "llvm/ADT/STLExtras.h"

using namespace heterps::runtime;

/// The outputs of `op` run once on `host` over `weights`, if every one is
/// a plain tensor of its plan value's type and at most `maxBytes`; else
/// nothing (the op then runs with the others).
static std::optional<std::vector<Tensor>>
runOnce(const plan::Plan &plan, const plan::Op &op, const WeightMap &weights,
        Backend &host, uint64_t maxBytes) {
  std::vector<const Tensor *> args;
  for (int32_t v : op.inputs())
    args.push_back(v >= 0 ? &weights.at(v) : nullptr);
  llvm::Expected<std::unique_ptr<Kernel>> kernel =
      host.createKernel(OpInfo(op, args));
  if (!kernel) {
    llvm::consumeError(kernel.takeError());
    return std::nullopt;
  }
  std::vector<Tensor> results(op.outputs_size());
  if (llvm::Error e = (*kernel)->run(args, results)) {
    llvm::consumeError(std::move(e));
    return std::nullopt;
  }
  for (auto [t, v] : llvm::zip(results, op.outputs())) {
    if (t.isNull() || !hasValueType(t, plan.values(v)))
      return std::nullopt;
    llvm::Expected<Tensor> plain = t.toPlain();
    if (!plain) {
      llvm::consumeError(plain.takeError());
      return std::nullopt;
    }
    t = std::move(*plain);
    if (t.numElements() * dtypeSize(t.dtype()) > maxBytes)
      return std::nullopt;
  }
  return results;
}

int heterps::runtime::foldConstantOps(plan::Plan &plan, WeightMap &weights,
                                      Backend &host, uint64_t maxBytes) {
  std::vector<bool> isOutput(plan.values_size(), false);
  for (const plan::Binding &b : plan.outputs())
    isOutput[b.value()] = true;
  std::vector<bool> dead(plan.ops_size(), false);
  std::vector<int32_t> readByFolded;
  int folded = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    const plan::Op &op = plan.ops(i);
    bool constantInputs =
        op.inputs_size() > 0 && llvm::all_of(op.inputs(), [&](int32_t v) {
          return v < 0 || weights.count(v);
        });
    if (!constantInputs ||
        llvm::any_of(op.outputs(), [&](int32_t v) { return isOutput[v]; }))
      continue;
    std::optional<std::vector<Tensor>> results =
        runOnce(plan, op, weights, host, maxBytes);
    if (!results)
      continue;
    for (auto [t, v] : llvm::zip(*results, op.outputs()))
      weights[v] = std::move(t);
    llvm::append_range(readByFolded, op.inputs());
    dead[i] = true;
    ++folded;
  }
  if (!folded)
    return 0;
  eraseOps(plan, dead);
  // Weights that only folded ops read are no longer needed.
  std::vector<bool> read(plan.values_size(), false);
  for (const plan::Op &op : plan.ops())
    for (int32_t v : op.inputs())
      if (v >= 0)
        read[v] = true;
  for (int32_t v : readByFolded)
    if (v >= 0 && !read[v] && !isOutput[v])
      weights.erase(v);
  return folded;
}
