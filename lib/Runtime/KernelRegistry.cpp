//===- KernelRegistry.cpp - kernels and the kernel registry ---------------===//

#include "heterps/Runtime/Kernel.h"

#include "llvm/ADT/STLExtras.h"

using namespace heterps::runtime;

Kernel::~Kernel() = default;

llvm::Error OpInfo::checkArity(int minIn, int maxIn, int outputs) const {
  auto fail = [](const llvm::Twine &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
  };
  int n = numInputs();
  if (n < minIn || n > maxIn) {
    std::string expected =
        minIn == maxIn ? std::to_string(minIn)
                       : std::to_string(minIn) + " to " + std::to_string(maxIn);
    return fail("expected " + expected + " inputs, got " + llvm::Twine(n));
  }
  for (int i = 0; i < minIn; ++i)
    if (op.inputs(i) < 0)
      return fail("input " + llvm::Twine(i) + " is required");
  if (numOutputs() != outputs)
    return fail("expected " + llvm::Twine(outputs) + " outputs, got " +
                llvm::Twine(numOutputs()));
  return llvm::Error::success();
}

void KernelRegistry::add(llvm::StringRef opType, KernelFactory factory) {
  factories[opType] = std::move(factory);
}

const KernelFactory *KernelRegistry::lookup(llvm::StringRef opType) const {
  auto it = factories.find(opType);
  return it == factories.end() ? nullptr : &it->second;
}

std::vector<std::string> KernelRegistry::opTypes() const {
  std::vector<std::string> types;
  for (const auto &entry : factories)
    types.push_back(entry.getKey().str());
  llvm::sort(types);
  return types;
}
