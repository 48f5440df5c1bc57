//===- PadKernel.cpp - ONNX Pad (constant, reflect, edge) -----------------===//
//
// oneDNN has no padding primitive, so this is a loop of our own over the
// output's rows (all axes but the last): each row is either entirely padding
// or a source row with its last axis padded. Pads come from the second input
// (opset 11 on) or the `pads` attribute (before), may be negative (cropping),
// and with an `axes` input (opset 18) apply to those axes only.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"

#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

enum class PadMode { Constant, Reflect, Edge };

class PadKernel : public Kernel {
public:
  PadKernel(PadMode mode, std::vector<int64_t> padsAttr, float valueAttr)
      : mode(mode), padsAttr(std::move(padsAttr)), valueAttr(valueAttr) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    const Tensor &x = *inputs[0];
    if (x.dtype() != DType::F32)
      return kernelError("input is " + x.typeString() + "; Pad supports f32");
    int64_t rank = x.rank();
    llvm::Expected<std::vector<int64_t>> pads = padsFor(inputs, rank);
    if (!pads)
      return pads.takeError();
    float value = valueAttr;
    if (inputs.size() > 2 && inputs[2]) {
      if (inputs[2]->dtype() != DType::F32 || inputs[2]->numElements() != 1)
        return kernelError("constant_value is " + inputs[2]->typeString() +
                           ", expected one f32");
      value = inputs[2]->data<float>()[0];
    }
    Shape out(rank);
    for (int64_t d = 0; d < rank; ++d) {
      out[d] = x.dim(d) + (*pads)[d] + (*pads)[rank + d];
      if (out[d] < 0)
        return kernelError("pads " + shapeToString(*pads) + " crop more than " +
                           x.typeString() + " holds");
      bool needsSource = mode != PadMode::Constant && out[d] > 0;
      if (needsSource && x.dim(d) == 0)
        return kernelError("cannot pad an empty axis in reflect or edge mode");
      if (mode == PadMode::Reflect &&
          std::max((*pads)[d], (*pads)[rank + d]) >= x.dim(d))
        return kernelError("reflect pads " + shapeToString(*pads) +
                           " must be smaller than the axes of " +
                           x.typeString());
    }
    Tensor y(DType::F32, out);
    outputs[0] = y;
    if (y.numElements() == 0)
      return llvm::Error::success();
    if (rank == 0) {
      y.data<float>()[0] = x.data<float>()[0];
      return llvm::Error::success();
    }
    fill(x, y, *pads, value);
    return llvm::Error::success();
  }

private:
  /// The begin pads of every axis, then the end pads.
  llvm::Expected<std::vector<int64_t>>
  padsFor(llvm::ArrayRef<const Tensor *> inputs, int64_t rank) const {
    std::vector<int64_t> given = padsAttr;
    if (inputs.size() > 1 && inputs[1]) {
      if (inputs[1]->dtype() != DType::I64 || inputs[1]->rank() != 1)
        return kernelError("pads is " + inputs[1]->typeString() +
                           ", expected a 1-D i64 tensor");
      const int64_t *p = inputs[1]->data<int64_t>();
      given.assign(p, p + inputs[1]->numElements());
    }
    std::vector<int64_t> axes;
    if (inputs.size() > 3 && inputs[3]) {
      if (inputs[3]->dtype() != DType::I64 || inputs[3]->rank() != 1)
        return kernelError("axes is " + inputs[3]->typeString() +
                           ", expected a 1-D i64 tensor");
      for (int64_t i = 0; i < inputs[3]->numElements(); ++i) {
        auto axis = normalizeAxis(inputs[3]->data<int64_t>()[i], rank);
        if (!axis)
          return axis.takeError();
        axes.push_back(*axis);
      }
    } else {
      for (int64_t d = 0; d < rank; ++d)
        axes.push_back(d);
    }
    int64_t n = static_cast<int64_t>(axes.size());
    if (static_cast<int64_t>(given.size()) != 2 * n)
      return kernelError("pads has " + llvm::Twine(given.size()) +
                         " values, expected " + llvm::Twine(2 * n) +
                         " (begin and end of each padded axis)");
    std::vector<int64_t> pads(2 * rank, 0);
    for (int64_t k = 0; k < n; ++k) {
      pads[axes[k]] = given[k];
      pads[rank + axes[k]] = given[n + k];
    }
    return pads;
  }

  /// The source index for output index `i` of an axis of `size` with begin
  /// pad `begin`, or -1 for padding.
  int64_t source(int64_t i, int64_t begin, int64_t size) const {
    int64_t s = i - begin;
    if (s >= 0 && s < size)
      return s;
    switch (mode) {
    case PadMode::Constant:
      return -1;
    case PadMode::Edge:
      return s < 0 ? 0 : size - 1;
    case PadMode::Reflect:
      if (size == 1)
        return 0;
      return s < 0 ? -s : 2 * (size - 1) - s;
    }
    return -1;
  }

  void fill(const Tensor &x, Tensor &y, const std::vector<int64_t> &pads,
            float value) const {
    int64_t rank = x.rank(), last = rank - 1;
    int64_t rowIn = x.dim(last), rowOut = y.dim(last);
    int64_t rows = y.numElements() / rowOut;
    const float *src = x.data<float>();
    float *dst = y.data<float>();
    std::vector<int64_t> index(rank, 0); // of the current output row
    for (int64_t r = 0; r < rows; ++r, dst += rowOut) {
      // The source row, or none when some outer axis lands in padding.
      int64_t offset = 0;
      bool padding = false;
      for (int64_t d = 0; d < last && !padding; ++d) {
        int64_t s = source(index[d], pads[d], x.dim(d));
        padding = s < 0;
        offset = offset * x.dim(d) + s;
      }
      if (padding) {
        std::fill(dst, dst + rowOut, value);
      } else {
        const float *row = src + offset * rowIn;
        for (int64_t i = 0; i < rowOut; ++i) {
          int64_t s = source(i, pads[last], rowIn);
          dst[i] = s < 0 ? value : row[s];
        }
      }
      for (int64_t d = last - 1; d >= 0; --d) // next output row
        if (++index[d] < y.dim(d))
          break;
        else
          index[d] = 0;
    }
  }

  PadMode mode;
  std::vector<int64_t> padsAttr;
  float valueAttr;
};

} // namespace

void cpu::registerPadKernel(KernelRegistry &registry, CPUContextPtr) {
  registry.add(
      "Pad", [](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(1, 4))
          return e;
        auto mode = info.attrs.getString("mode", "constant");
        if (!mode)
          return mode.takeError();
        PadMode m;
        if (*mode == "constant")
          m = PadMode::Constant;
        else if (*mode == "reflect")
          m = PadMode::Reflect;
        else if (*mode == "edge")
          m = PadMode::Edge;
        else
          return kernelError("mode '" + *mode +
                             "' is not supported (constant, reflect, edge)");
        auto pads = info.attrs.getInts("pads", std::vector<int64_t>());
        if (!pads)
          return pads.takeError();
        if (!info.hasInput(1) && pads->empty())
          return kernelError("needs pads (an input, or the attribute before "
                             "opset 11)");
        auto value = info.attrs.getFloat("value", 0.f);
        if (!value)
          return value.takeError();
        return std::make_unique<PadKernel>(m, std::move(*pads), *value);
      });
}
