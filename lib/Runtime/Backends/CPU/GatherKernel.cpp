//===- GatherKernel.cpp - ONNX Gather -------------------------------------===//
//
// Gather copies slices of `data` chosen by i64 `indices` along `axis`: the
// output is data.shape[:axis] + indices.shape + data.shape[axis+1:]. Any
// element type: the slices are copied as bytes. Negative indices count from
// the end; one outside [-n, n) is an error naming it. Embedding lookups
// (axis 0 of a [rows, dim] table) are the main use. One index on the
// outermost axis (attention's q, k and v out of one qkv tensor, Swin's) is
// a contiguous part of the data: a view, not a copy.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"

#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

class GatherKernel : public Kernel {
public:
  explicit GatherKernel(int64_t axis) : axis(axis) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    const Tensor &data = *inputs[0], &indices = *inputs[1];
    if (indices.dtype() != DType::I64)
      return kernelError("Gather indices must be i64, not " +
                         indices.typeString());
    llvm::Expected<int64_t> a = normalizeAxis(axis, data.rank());
    if (!a)
      return a.takeError();
    Shape shape(data.shape().begin(), data.shape().begin() + *a);
    shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
    shape.insert(shape.end(), data.shape().begin() + *a + 1,
                 data.shape().end());
    int64_t outer = 1, n = data.dim(*a), inner = dtypeSize(data.dtype());
    for (int64_t i = 0; i < *a; ++i)
      outer *= data.dim(i);
    for (int64_t i = *a + 1; i < data.rank(); ++i)
      inner *= data.dim(i);
    const int64_t *ids = indices.data<int64_t>();
    int64_t count = indices.numElements();
    for (int64_t k = 0; k < count; ++k)
      if (ids[k] < -n || ids[k] >= n)
        return kernelError("Gather index " + llvm::Twine(ids[k]) +
                           " is outside [-" + llvm::Twine(n) + ", " +
                           llvm::Twine(n) + ") of axis " + llvm::Twine(*a) +
                           " of " + data.typeString());
    if (outer == 1 && count == 1 && data.isPlain()) {
      int64_t id = ids[0] < 0 ? ids[0] + n : ids[0];
      outputs[0] = data.part(id * inner, shape, nullptr);
      return llvm::Error::success();
    }
    Tensor out(data.dtype(), shape);
    const auto *src = static_cast<const uint8_t *>(data.rawData());
    auto *dst = static_cast<uint8_t *>(out.rawData());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < count; ++k) {
        int64_t id = ids[k] < 0 ? ids[k] + n : ids[k];
        std::memcpy(dst + (o * count + k) * inner, src + (o * n + id) * inner,
                    inner);
      }
    outputs[0] = std::move(out);
    return llvm::Error::success();
  }

private:
  int64_t axis;
};

} // namespace

void cpu::registerGatherKernel(KernelRegistry &registry, CPUContextPtr) {
  registry.add(
      "Gather",
      [](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(2, 2))
          return std::move(e);
        auto axis = info.attrs.getInt("axis", 0);
        if (!axis)
          return axis.takeError();
        return std::make_unique<GatherKernel>(*axis);
      });
}
