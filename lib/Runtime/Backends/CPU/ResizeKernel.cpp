//===- ResizeKernel.cpp - ONNX Resize (nearest, linear, cubic) ------------===//
//
// A pass per resized dimension (ResizeGeometry.h): a segmentation head's
// [N, C, 28, 28] -> [N, C, 224, 224] is a pass over rows then one over
// columns. Outside the input, tf_crop_and_resize gives the extrapolation
// value; the later passes' weights sum to 1 and keep it.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"
#include "ResizeGeometry.h"

#include "heterps/Runtime/MemoryLimit.h"

#include <cmath>
#include <optional>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

using Mode = ResizeMode;
using Transform = ResizeTransform;
using Rounding = ResizeRounding;

/// Cubic convolution weights of the four taps around a coordinate whose
/// fraction past its floor is r (ONNX's cubic_coeffs).
void cubicWeights(double r, double a, double (&w)[4]) {
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };
  auto far = [a](double d) {
    return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  };
  w[0] = far(r + 1);
  w[1] = near(r);
  w[2] = near(1 - r);
  w[3] = far(2 - r);
}

/// The input coordinate of output index o (ONNX's coordinate
/// transformation modes; `outLength` is scale * input length, fractional
/// when the scales were given).
double sourceCoordinate(const ResizeParams &p, int64_t o, int64_t in,
                        double outLength, double scale, double roiBegin,
                        double roiEnd) {
  double x = static_cast<double>(o);
  switch (p.transform) {
  case Transform::HalfPixel:
    return (x + 0.5) / scale - 0.5;
  case Transform::HalfPixelSymmetric: {
    double adjustment = outLength / (scale * in);
    double center = in / 2.0;
    return center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
  }
  case Transform::PytorchHalfPixel:
    return outLength > 1 ? (x + 0.5) / scale - 0.5 : -0.5;
  case Transform::AlignCorners:
    return outLength == 1 ? 0.0 : x * (in - 1) / (outLength - 1);
  case Transform::Asymmetric:
    return x / scale;
  case Transform::TFHalfPixelForNN: // opset 11 only
    return (x + 0.5) / scale;
  case Transform::CropAndResize:
    return (outLength > 1 ? x * (roiEnd - roiBegin) * (in - 1) / (outLength - 1)
                          : (roiEnd - roiBegin) * (in - 1) / 2) +
           roiBegin * (in - 1);
  }
  return x;
}

/// The taps of one dimension of `in` elements resized to `out`, or
/// nullopt where every output index reads its own input index alone.
std::optional<ResizePass> dimensionPass(const ResizeParams &p, int64_t in,
                                        int64_t out, double scale,
                                        double roiBegin, double roiEnd) {
  ResizePass a;
  a.in = in;
  a.out = out;
  a.taps = p.mode == Mode::Nearest ? 1 : p.mode == Mode::Linear ? 2 : 4;
  a.index.resize(out * a.taps);
  a.weight.resize(out * a.taps);
  a.outside.assign(out, false);
  bool identity = in == out;
  double outLength = scale * in;
  auto clamp = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  for (int64_t o = 0; o < out; ++o) {
    double x = sourceCoordinate(p, o, in, outLength, scale, roiBegin, roiEnd);
    int64_t *index = &a.index[o * a.taps];
    float *weight = &a.weight[o * a.taps];
    if (p.transform == Transform::CropAndResize && !(x >= 0 && x <= in - 1)) {
      a.outside[o] = true;
      identity = false;
      std::fill_n(index, a.taps, 0);
      std::fill_n(weight, a.taps, 0.f);
      continue;
    }
    // Valid scales keep x within [-1, in]; a plan's extreme or NaN ones
    // must not reach the integer conversion below.
    if (!(x >= -1))
      x = -1;
    if (!(x <= in))
      x = in;
    double floor = std::floor(x), r = x - floor;
    int64_t base = static_cast<int64_t>(floor);
    if (p.mode == Mode::Nearest) {
      bool up = r > 0 && (p.rounding == Rounding::Ceil ||
                          (p.rounding == Rounding::PreferFloor && r > 0.5) ||
                          (p.rounding == Rounding::PreferCeil && r >= 0.5));
      index[0] = clamp(base + up);
      weight[0] = 1.f;
    } else if (p.mode == Mode::Linear) {
      index[0] = clamp(base);
      index[1] = clamp(base + 1);
      weight[0] = static_cast<float>(1 - r);
      weight[1] = static_cast<float>(r);
    } else {
      double w[4];
      cubicWeights(r, p.cubicA, w);
      double sum = 0;
      for (int t = 0; t < 4; ++t) {
        int64_t i = base - 1 + t;
        if (p.excludeOutside && (i < 0 || i >= in))
          w[t] = 0;
        sum += w[t];
        index[t] = clamp(i);
      }
      for (int t = 0; t < 4; ++t)
        weight[t] = static_cast<float>(p.excludeOutside ? w[t] / sum : w[t]);
    }
    // The weight on index o itself, and on the others.
    float own = 0.f, others = 0.f;
    for (int64_t t = 0; t < a.taps; ++t)
      (index[t] == o ? own : others) += std::fabs(weight[t]);
    if (own != 1.f || others != 0.f)
      identity = false;
  }
  if (identity)
    return std::nullopt;
  return a;
}

/// Scales and sizes, from the plan or computed at run time, before use.
llvm::Error checkScales(llvm::ArrayRef<float> scales) {
  for (float s : scales)
    if (!(s > 0.f) || !std::isfinite(s))
      return kernelError("Resize's scales must be positive and finite, got " +
                         std::to_string(s));
  return llvm::Error::success();
}

llvm::Error checkSizes(llvm::ArrayRef<int64_t> sizes) {
  for (int64_t s : sizes)
    if (s < 0)
      return kernelError("Resize's sizes must not be negative, got " +
                         llvm::Twine(s));
  return llvm::Error::success();
}

/// `value` as one of `names` (the enumerator of the same index).
template <typename E>
llvm::Expected<E> oneOf(const OpInfo &info, llvm::StringRef attr,
                        llvm::StringRef dflt,
                        std::initializer_list<llvm::StringRef> names) {
  auto value = info.attrs.getString(attr, dflt.str());
  if (!value)
    return value.takeError();
  for (auto [i, name] : llvm::enumerate(names))
    if (*value == name)
      return static_cast<E>(i);
  return kernelError("Resize's '" + attr + "' is '" + *value +
                     "', not one it knows");
}

class ResizeKernel : public Kernel {
public:
  explicit ResizeKernel(ResizeParams params) : p(std::move(params)) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs.take_front(1)))
      return e;
    Shape outShape;
    llvm::Expected<std::vector<ResizePass>> passes =
        resizePasses(p, inputs, outShape);
    if (!passes)
      return passes.takeError();
    Tensor current = *inputs[0];
    for (const ResizePass &pass : *passes) {
      Tensor y(DType::F32, pass.after);
      resample(current.data<float>(), y.data<float>(), pass, p.extrapolation);
      current = std::move(y);
    }
    outputs[0] = std::move(current);
    return llvm::Error::success();
  }

private:
  ResizeParams p;
};

} // namespace

llvm::Expected<std::vector<ResizePass>>
cpu::resizePasses(const ResizeParams &p, llvm::ArrayRef<const Tensor *> inputs,
                  Shape &outShape) {
  const Tensor &x = *inputs[0];
  int64_t rank = x.rank();
  // Scales or sizes (and roi) computed at run time (hps.dynamic_resize).
  std::vector<float> scales = p.scales, roi = p.roi;
  std::vector<int64_t> sizes = p.sizes;
  if (inputs.size() > 1 && inputs[1]) {
    const Tensor &target = *inputs[1];
    if (target.rank() != 1 ||
        (target.dtype() != DType::F32 && target.dtype() != DType::I64))
      return kernelError("Resize's scales or sizes must be a 1-D f32 or i64 "
                         "tensor, not " +
                         target.typeString());
    if (target.dtype() == DType::F32) {
      scales.assign(target.data<float>(),
                    target.data<float>() + target.numElements());
      if (llvm::Error e = checkScales(scales))
        return std::move(e);
    } else {
      sizes.assign(target.data<int64_t>(),
                   target.data<int64_t>() + target.numElements());
      if (llvm::Error e = checkSizes(sizes))
        return std::move(e);
      scales.assign(sizes.size(), 1.f);
    }
  }
  if (inputs.size() > 2 && inputs[2]) {
    const Tensor &r = *inputs[2];
    if (r.rank() != 1 || r.dtype() != DType::F32)
      return kernelError("Resize's roi must be a 1-D f32 tensor, not " +
                         r.typeString());
    roi.assign(r.data<float>(), r.data<float>() + r.numElements());
  }
  if (static_cast<int64_t>(scales.size()) != rank ||
      (!sizes.empty() && static_cast<int64_t>(sizes.size()) != rank) ||
      (p.transform == Transform::CropAndResize &&
       static_cast<int64_t>(roi.size()) != 2 * rank))
    return kernelError("Resize of " + x.typeString() +
                       " has scales, sizes or roi for another rank");
  // Output sizes, and the scale each dimension maps back with.
  outShape.clear();
  std::vector<double> scale(rank);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t in = x.dim(d);
    if (!sizes.empty()) {
      outShape.push_back(sizes[d] > 0 ? sizes[d] : in);
      scale[d] = in ? double(outShape[d]) / in : 1.0;
    } else {
      double size = std::floor(double(scales[d]) * double(in));
      if (!(size < 9.2e18))
        return kernelError("Resize of " + x.typeString() + " by scale " +
                           std::to_string(scales[d]) + " is too large");
      outShape.push_back(static_cast<int64_t>(size));
      scale[d] = scales[d];
    }
    if (in == 0 && outShape[d] > 0)
      return kernelError("Resize of " + x.typeString() +
                         " reads from an empty dimension " + llvm::Twine(d));
  }
  llvm::Expected<uint64_t> bytes = checkedByteSize(outShape, sizeof(float));
  if (!bytes)
    return bytes.takeError();
  if (llvm::Error e = checkFitsInMemory(*bytes, "Resize's output " +
                                                    shapeToString(outShape)))
    return std::move(e);
  // Dimension by dimension, innermost first.
  std::vector<ResizePass> passes;
  Shape shape = x.shape();
  for (int64_t d = rank - 1; d >= 0; --d) {
    std::optional<ResizePass> pass = dimensionPass(
        p, shape[d], outShape[d], scale[d], roi.empty() ? 0 : roi[d],
        roi.empty() ? 1 : roi[rank + d]);
    if (!pass)
      continue;
    for (int64_t i = 0; i < d; ++i)
      pass->outer *= shape[i];
    for (int64_t i = d + 1; i < rank; ++i)
      pass->inner *= shape[i];
    shape[d] = outShape[d];
    pass->after = shape;
    passes.push_back(std::move(*pass));
  }
  return passes;
}

void cpu::resample(const float *x, float *y, const ResizePass &a,
                   float extrapolation) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < a.outer; ++b)
    for (int64_t o = 0; o < a.out; ++o) {
      float *to = y + (b * a.out + o) * a.inner;
      if (a.outside[o]) {
        std::fill_n(to, a.inner, extrapolation);
        continue;
      }
      const float *from = x + b * a.in * a.inner;
      const int64_t *index = &a.index[o * a.taps];
      const float *weight = &a.weight[o * a.taps];
      const float *row0 = from + index[0] * a.inner;
      float w0 = weight[0];
      for (int64_t i = 0; i < a.inner; ++i)
        to[i] = w0 * row0[i];
      for (int64_t t = 1; t < a.taps; ++t) {
        const float *row = from + index[t] * a.inner;
        float w = weight[t];
        for (int64_t i = 0; i < a.inner; ++i)
          to[i] += w * row[i];
      }
    }
}

void cpu::resampleBackward(const float *dy, float *dx, const ResizePass &a) {
  // Output indices share input indices: each thread takes whole [in,
  // inner] slices, which no other writes.
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < a.outer; ++b) {
    float *to = dx + b * a.in * a.inner;
    std::fill_n(to, a.in * a.inner, 0.f);
    for (int64_t o = 0; o < a.out; ++o) {
      if (a.outside[o]) // the extrapolation value is a constant
        continue;
      const float *from = dy + (b * a.out + o) * a.inner;
      for (int64_t t = 0; t < a.taps; ++t) {
        float *row = to + a.index[o * a.taps + t] * a.inner;
        float w = a.weight[o * a.taps + t];
        for (int64_t i = 0; i < a.inner; ++i)
          row[i] += w * from[i];
      }
    }
  }
}

llvm::Expected<ResizeParams> cpu::resizeParamsOf(const OpInfo &info) {
  if (llvm::Error e = info.checkArity(1, 3))
    return std::move(e);
  auto mode =
      oneOf<Mode>(info, "mode", "nearest", {"nearest", "linear", "cubic"});
  auto transform =
      oneOf<Transform>(info, "coordinate_transformation_mode", "half_pixel",
                       {"half_pixel", "half_pixel_symmetric",
                        "pytorch_half_pixel", "align_corners", "asymmetric",
                        "tf_crop_and_resize", "tf_half_pixel_for_nn"});
  auto rounding = oneOf<Rounding>(
      info, "nearest_mode", "round_prefer_floor",
      {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  auto a = info.attrs.getFloat("cubic_coeff_a", -0.75f);
  auto extrapolation = info.attrs.getFloat("extrapolation_value", 0.f);
  auto exclude = info.attrs.getInt("exclude_outside", 0);
  auto scales = info.attrs.getFloats("scales", std::vector<float>());
  auto sizes = info.attrs.getInts("sizes", std::vector<int64_t>());
  auto roi = info.attrs.getFloats("roi", std::vector<float>());
  if (!mode)
    return mode.takeError();
  if (!transform)
    return transform.takeError();
  if (!rounding)
    return rounding.takeError();
  if (!a)
    return a.takeError();
  if (!extrapolation)
    return extrapolation.takeError();
  if (!exclude)
    return exclude.takeError();
  if (!scales)
    return scales.takeError();
  if (!sizes)
    return sizes.takeError();
  if (!roi)
    return roi.takeError();
  if (llvm::Error e = checkScales(*scales))
    return std::move(e);
  if (llvm::Error e = checkSizes(*sizes))
    return std::move(e);
  ResizeParams p;
  p.mode = *mode;
  p.transform = *transform;
  p.rounding = *rounding;
  p.cubicA = *a;
  p.extrapolation = *extrapolation;
  p.excludeOutside = *exclude != 0;
  p.scales = std::move(*scales);
  p.sizes = std::move(*sizes);
  p.roi = std::move(*roi);
  return p;
}

void cpu::registerResizeKernel(KernelRegistry &registry, CPUContextPtr) {
  registry.add(
      "Resize",
      [](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        llvm::Expected<ResizeParams> p = resizeParamsOf(info);
        if (!p)
          return p.takeError();
        return std::make_unique<ResizeKernel>(std::move(*p));
      });
}
