//===- ReduceGrad.cpp - ReduceMean, ReduceSum, ReduceMax, ReduceMin backward
//==//
//
// The inference kernel is the forward. The output gradient goes back to
// every input element of its reduction group: as is for ReduceSum, divided
// by the group's size for ReduceMean, and for ReduceMax/ReduceMin to the
// elements equal to the result (split evenly among ties, as PyTorch's amax
// and amin do).
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

#include "../Broadcast.h"
#include "../CPUKernels.h"

#include <set>

using namespace heterps::runtime;
using namespace heterps::runtime::train;

namespace {

class ReduceGradKernel : public InferenceForward {
public:
  ReduceGradKernel(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx,
                   std::string type, std::vector<int64_t> axes)
      : InferenceForward(std::move(kernel), std::move(ctx)),
        type(std::move(type)), axes(std::move(axes)) {}

  static llvm::Expected<std::unique_ptr<TrainKernel>>
  create(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx,
         const OpInfo &info) {
    auto params = cpu::readReduceParams(info.attrs);
    if (!params)
      return params.takeError();
    return std::make_unique<ReduceGradKernel>(std::move(kernel), std::move(ctx),
                                              info.op.type(),
                                              std::move(params->axes));
  }

  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs,
                       const Tensor &output, const Tensor &dOutput,
                       llvm::ArrayRef<bool>,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    return cpu::guardDnnl([&]() -> llvm::Error {
      Tensor x = cpu::plainOf(*inputs[0], ctx);
      Tensor y = cpu::plainOf(output, ctx), g = cpu::plainOf(dOutput, ctx);
      int64_t rank = x.rank();
      std::set<int64_t> reduced;
      for (int64_t axis : axes)
        reduced.insert(axis < 0 ? axis + rank : axis);
      if (axes.empty())
        for (int64_t a = 0; a < rank; ++a)
          reduced.insert(a);
      // Strides into the result (reduced axes kept as 1, so stride 0).
      std::vector<int64_t> stride(rank, 0);
      int64_t groupSize = 1;
      for (int64_t a = rank - 1, s = 1; a >= 0; --a) {
        if (reduced.count(a)) {
          groupSize *= x.dim(a);
          continue;
        }
        stride[a] = s;
        s *= x.dim(a);
      }
      const float *xv = x.data<float>(), *yv = y.data<float>(),
                  *gv = g.data<float>();
      Tensor dx(DType::F32, x.shape());
      float *out = dx.data<float>();
      int64_t total = x.numElements();
      if (type == "ReduceMean" || type == "ReduceSum") {
        // dy broadcast back over the reduced axes, in parallel rows.
        Shape kept = x.shape();
        for (int64_t a : reduced)
          kept[a] = 1;
        float scale = type == "ReduceMean" ? 1.f / float(groupSize) : 1.f;
        cpu::forEachMergedRow<1>(
            x.shape(), {kept},
            [&](int64_t o, const std::array<int64_t, 1> &offsets, int64_t n,
                const std::array<int64_t, 1> &steps) {
              const float *from = gv + offsets[0];
              for (int64_t c = 0; c < n; ++c)
                out[o + c] = from[c * steps[0]] * scale;
            });
        dInputs[0] = std::move(dx);
        return llvm::Error::success();
      }
      // The result element of every input element.
      std::vector<int64_t> groupOf(total), index(rank, 0);
      for (int64_t i = 0, r = 0; i < total; ++i) {
        groupOf[i] = r;
        for (int64_t a = rank - 1; a >= 0; --a) {
          r += stride[a];
          if (++index[a] < x.dim(a))
            break;
          r -= stride[a] * x.dim(a);
          index[a] = 0;
        }
      }
      // ReduceMax, ReduceMin: to the elements equal to the result.
      std::vector<int64_t> ties(y.numElements(), 0);
      for (int64_t i = 0; i < total; ++i)
        ties[groupOf[i]] += xv[i] == yv[groupOf[i]];
      for (int64_t i = 0; i < total; ++i) {
        int64_t r = groupOf[i];
        out[i] = xv[i] == yv[r] ? gv[r] / float(ties[r]) : 0.f;
      }
      dInputs[0] = std::move(dx);
      return llvm::Error::success();
    });
  }

private:
  std::string type;
  std::vector<int64_t> axes;
};

} // namespace

void train::registerReduceGrad(TrainRegistry &registry) {
  for (const char *type : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"})
    registry[type] = inferenceForward<ReduceGradKernel>();
}
