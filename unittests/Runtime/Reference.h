//===- Reference.h - naive reference kernels for tests ----------*- C++ -*-===//
//
// Straightforward loops over plain f32 tensors, following the ONNX operator
// definitions, against which the oneDNN kernels are checked.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_UNITTESTS_RUNTIME_REFERENCE_H
#define HETERPS_UNITTESTS_RUNTIME_REFERENCE_H

#include "heterps/Runtime/Tensor.h"

#include "gtest/gtest.h"

#include <functional>
#include <random>

namespace heterps::runtime::testutil {

/// Uniform values in [lo, hi).
Tensor randomTensor(Shape shape, std::mt19937 &rng, float lo = -1.f,
                    float hi = 1.f);

/// Element-wise |actual - expected| <= atol + rtol * |expected|, same shape.
::testing::AssertionResult allClose(const Tensor &actual,
                                    const Tensor &expected, float rtol = 1e-4f,
                                    float atol = 1e-5f);

struct ConvParams {
  std::vector<int64_t> strides, dilations, pads; // per spatial axis; pads 2n
  int64_t group = 1;
};
/// N-D convolution (1 to 3 spatial axes).
Tensor refConv(const Tensor &x, const Tensor &w, const Tensor *b,
               const ConvParams &p);

struct PoolParams {
  std::vector<int64_t> kernel, strides, pads;
  bool max = true;
  bool countIncludePad = false;
  bool ceilMode = false;
};
/// 2-D max or average pooling.
Tensor refPool2d(const Tensor &x, const PoolParams &p);

Tensor refGemm(const Tensor &a, const Tensor &b, const Tensor *c, float alpha,
               float beta, bool transA, bool transB);
/// numpy.matmul.
Tensor refMatMul(const Tensor &a, const Tensor &b);
Tensor refBatchNorm(const Tensor &x, const Tensor &scale, const Tensor &bias,
                    const Tensor &mean, const Tensor &var, float epsilon);
Tensor refLRN(const Tensor &x, int64_t size, float alpha, float beta,
              float bias);
Tensor refSoftmax(const Tensor &x, int64_t axis, bool log);
Tensor refUnary(const Tensor &x, const std::function<float(float)> &fn);
/// numpy broadcasting.
Tensor refBinary(const Tensor &a, const Tensor &b,
                 const std::function<float(float, float)> &fn);
Tensor refConcat(const std::vector<Tensor> &inputs, int64_t axis);
Tensor refTranspose(const Tensor &x, const std::vector<int64_t> &perm);

} // namespace heterps::runtime::testutil

#endif // HETERPS_UNITTESTS_RUNTIME_REFERENCE_H
