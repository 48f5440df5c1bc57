//===- RollKernel.cpp - a cyclic shift along axes (fuseRolls' op) ---------===//
//
// Roll(x) with `offsets`, one per axis: element j of axis a of the output
// is element (j + offsets[a]) mod d of x, torch.roll by -offsets. PyTorch
// exports each rolled axis as two Slices and a Concat, two copies of every
// element; fuseRolls makes one op of them. The axes after the last rolled
// one are taken whole, so each row along that axis is two runs of
// consecutive elements, copied with the rows split across threads.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"

#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

class RollKernel : public Kernel {
public:
  explicit RollKernel(std::vector<int64_t> offsets)
      : offsets(std::move(offsets)) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor &x = *inputs[0];
    int64_t rank = x.rank();
    if (rank != static_cast<int64_t>(offsets.size()))
      return kernelError("Roll of " + x.typeString() + " has offsets " +
                         shapeToString(offsets) + " for another rank");
    Tensor y(DType::F32, x.shape());
    outputs[0] = y;
    if (y.numElements() == 0)
      return llvm::Error::success();
    // Each offset in [0, d); the last axis rolled; strides of x.
    std::vector<int64_t> shift(rank), stride(rank, 1);
    int64_t last = -1;
    for (int64_t a = rank - 1; a >= 0; --a) {
      int64_t d = x.dim(a);
      shift[a] = (offsets[a] % d + d) % d;
      if (shift[a] && last < 0)
        last = a;
      if (a + 1 < rank)
        stride[a] = stride[a + 1] * x.dim(a + 1);
    }
    const float *from = x.data<float>();
    float *to = outputs[0].data<float>();
    if (last < 0) {
      std::memcpy(to, from, x.numElements() * sizeof(float));
      return llvm::Error::success();
    }
    int64_t d = x.dim(last), inner = stride[last];
    int64_t rows = x.numElements() / (d * inner);
    int64_t head = (d - shift[last]) * inner, tail = shift[last] * inner;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      // Where row r of the output starts in x: each axis before `last`
      // shifted.
      int64_t at = 0;
      for (int64_t a = last - 1, rest = r; a >= 0; --a) {
        int64_t i = rest % x.dim(a);
        rest /= x.dim(a);
        at += (i + shift[a]) % x.dim(a) * stride[a];
      }
      float *row = to + r * d * inner;
      std::memcpy(row, from + at + tail, head * sizeof(float));
      std::memcpy(row + head, from + at, tail * sizeof(float));
    }
    return llvm::Error::success();
  }

private:
  std::vector<int64_t> offsets;
};

} // namespace

void cpu::registerRollKernel(KernelRegistry &registry, CPUContextPtr) {
  registry.add(
      "Roll",
      [](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(1, 1))
          return e;
        auto offsets = info.attrs.getInts("offsets");
        if (!offsets)
          return offsets.takeError();
        return std::make_unique<RollKernel>(*offsets);
      });
}
