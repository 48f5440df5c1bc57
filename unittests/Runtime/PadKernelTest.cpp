//===- PadKernelTest.cpp - ONNX Pad against a reference loop --------------===//

#include "PlanBuilder.h"

#include "heterps/Runtime/Executor.h"

#include "gtest/gtest.h"

using namespace heterps::runtime;
using namespace heterps::runtime::testutil;

namespace {

/// x[i] = i + 1 over `shape`.
Tensor iota(Shape shape) {
  std::vector<float> v(static_cast<size_t>(numElements(shape)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(i + 1);
  return Tensor::fromFloats(shape, v);
}

/// Pad by index arithmetic, one element at a time (rank 2).
std::vector<float> reference(const Tensor &x, std::vector<int64_t> pads,
                             const std::string &mode, float value) {
  int64_t h = x.dim(0), w = x.dim(1);
  int64_t oh = h + pads[0] + pads[2], ow = w + pads[1] + pads[3];
  auto src = [&](int64_t i, int64_t n) -> int64_t {
    if (i >= 0 && i < n)
      return i;
    if (mode == "constant")
      return -1;
    if (mode == "edge")
      return i < 0 ? 0 : n - 1;
    return i < 0 ? -i : 2 * (n - 1) - i; // reflect
  };
  std::vector<float> out;
  for (int64_t r = 0; r < oh; ++r)
    for (int64_t c = 0; c < ow; ++c) {
      int64_t sr = src(r - pads[0], h), sc = src(c - pads[1], w);
      out.push_back(sr < 0 || sc < 0 ? value : x.data<float>()[sr * w + sc]);
    }
  return out;
}

/// Runs Pad with constant pads (and value, and axes when given).
llvm::Expected<Tensor> runPad(const Tensor &x, std::vector<int64_t> pads,
                              const std::string &mode, Shape out,
                              float value = 0,
                              std::vector<int64_t> axes = {}) {
  PlanBuilder b;
  int in = b.input("x", x.shape());
  int p = b.weight("pads", Tensor::fromInts({int64_t(pads.size())}, pads));
  std::vector<int> args = {in, p};
  if (value != 0 || !axes.empty())
    args.push_back(b.weight("value", Tensor::fromFloats({}, {value})));
  if (!axes.empty())
    args.push_back(b.weight("axes", Tensor::fromInts({int64_t(axes.size())}, axes)));
  b.output("y", b.op("Pad", args, out, Attrs().s("mode", mode)));
  auto exec = Executor::create(b.build());
  if (!exec)
    return exec.takeError();
  auto outputs = (*exec)->run({x});
  if (!outputs)
    return outputs.takeError();
  return (*outputs)[0];
}

void expectValues(const Tensor &y, const std::vector<float> &expected) {
  ASSERT_EQ(y.numElements(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(y.data<float>()[i], expected[i]) << "element " << i;
}

TEST(PadKernel, ModesMatchTheReference) {
  Tensor x = iota({3, 4});
  for (std::string mode : {"constant", "reflect", "edge"})
    for (std::vector<int64_t> pads :
         {std::vector<int64_t>{1, 2, 2, 1}, {0, 3, 2, 0}, {2, 0, 0, 3}}) {
      Shape out = {3 + pads[0] + pads[2], 4 + pads[1] + pads[3]};
      llvm::Expected<Tensor> y = runPad(x, pads, mode, out, 2.5f);
      ASSERT_TRUE(bool(y)) << llvm::toString(y.takeError());
      SCOPED_TRACE(mode);
      expectValues(*y, reference(x, pads, mode, 2.5f));
    }
}

TEST(PadKernel, NegativePadsCrop) {
  Tensor x = iota({3, 4});
  llvm::Expected<Tensor> y = runPad(x, {-1, 1, 0, -2}, "constant", {2, 3});
  ASSERT_TRUE(bool(y)) << llvm::toString(y.takeError());
  expectValues(*y, {0, 5, 6, 0, 9, 10});
}

TEST(PadKernel, AxesPadOnlyThoseAxes) {
  // NCHW, pads on H and W only (opset 18's axes input).
  Tensor x = iota({1, 2, 2, 2});
  llvm::Expected<Tensor> y =
      runPad(x, {1, 0, 0, 1}, "constant", {1, 2, 3, 3}, 0.5f, {2, 3});
  ASSERT_TRUE(bool(y)) << llvm::toString(y.takeError());
  expectValues(*y, {0.5, 0.5, 0.5, 1, 2, 0.5, 3, 4, 0.5,
                    0.5, 0.5, 0.5, 5, 6, 0.5, 7, 8, 0.5});
}

TEST(PadKernel, ClearErrors) {
  Tensor x = iota({3, 4});
  auto errorOf = [&](std::vector<int64_t> pads, const std::string &mode) {
    llvm::Expected<Tensor> y = runPad(x, pads, mode, {3, 4});
    return y ? std::string("(ran)") : llvm::toString(y.takeError());
  };
  EXPECT_NE(errorOf({1, 1}, "constant").find("pads has 2 values, expected 4"),
            std::string::npos);
  EXPECT_NE(errorOf({3, 0, 0, 0}, "reflect")
                .find("reflect pads [3, 0, 0, 0] must be smaller than"),
            std::string::npos);
  EXPECT_NE(errorOf({-2, 0, -2, 0}, "constant").find("crop more than"),
            std::string::npos);
  EXPECT_NE(errorOf({0, 0, 0, 0}, "wrap").find("mode 'wrap' is not supported"),
            std::string::npos);
}

} // namespace
