//===- ArgKernels.cpp - ArgMax and ArgMin ---------------------------------===//
//
// The index (i64) of the largest or smallest value along one axis of an
// f32 tensor: the first of equal ones, or the last with
// select_last_index. A NaN counts as the extreme (what ONNX Runtime and
// numpy's argmax return), so a NaN in the scores is not hidden by a
// finite index.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"
#include "ParallelSums.h"

#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

class ArgKernel : public Kernel {
public:
  ArgKernel(bool max, int64_t axis, bool keepdims, bool last)
      : max(max), axis(axis), keepdims(keepdims), last(last) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor &x = *inputs[0];
    auto a = normalizeAxis(axis, x.rank());
    if (!a)
      return a.takeError();
    int64_t n = x.dim(*a), outer = 1, inner = 1;
    for (int64_t d = 0; d < *a; ++d)
      outer *= x.dim(d);
    for (int64_t d = *a + 1; d < x.rank(); ++d)
      inner *= x.dim(d);
    if (n == 0 && outer * inner > 0)
      return kernelError(llvm::Twine(max ? "ArgMax" : "ArgMin") +
                         " over the empty axis " + llvm::Twine(*a) + " of " +
                         x.typeString());
    Shape shape = x.shape();
    if (keepdims)
      shape[*a] = 1;
    else
      shape.erase(shape.begin() + *a);
    Tensor y(DType::I64, shape);
    const float *px = x.data<float>();
    int64_t *py = y.data<int64_t>();
#pragma omp parallel for schedule(static)                                      \
    num_threads(threadsFor(x.numElements()))
    for (int64_t r = 0; r < outer * inner; ++r) {
      const float *row = px + (r / inner) * n * inner + r % inner;
      int64_t best = 0;
      float bestValue = row[0];
      for (int64_t k = 1; k < n; ++k) {
        float v = row[k * inner];
        if (std::isnan(bestValue) && !(last && std::isnan(v)))
          continue;
        bool better = std::isnan(v) || (max ? v > bestValue : v < bestValue) ||
                      (last && v == bestValue);
        if (better) {
          best = k;
          bestValue = v;
        }
      }
      py[r] = best;
    }
    outputs[0] = std::move(y);
    return llvm::Error::success();
  }

private:
  bool max;
  int64_t axis;
  bool keepdims, last;
};

} // namespace

void cpu::registerArgKernels(KernelRegistry &registry, CPUContextPtr) {
  for (bool max : {true, false})
    registry.add(
        max ? "ArgMax" : "ArgMin",
        [max](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
          if (llvm::Error e = info.checkArity(1, 1))
            return e;
          auto axis = info.attrs.getInt("axis", 0);
          auto keep = info.attrs.getInt("keepdims", 1);
          auto last = info.attrs.getInt("select_last_index", 0);
          if (!axis)
            return axis.takeError();
          if (!keep)
            return keep.takeError();
          if (!last)
            return last.takeError();
          return std::make_unique<ArgKernel>(max, *axis, *keep != 0,
                                             *last != 0);
        });
}
