//===- NaNPassingTest.cpp - NaN through Relu, Clip and MaxPool ------------===//
//
// ONNX (and PyTorch, and ONNX Runtime) pass NaN on through Relu, Clip and
// MaxPool; oneDNN's kernels, and the activations fused into a Conv, turn it
// into 0. ExecutorOptions::propagateNaN sends runs whose inputs or weights
// hold NaN through kernels that put the NaNs back: these tests check where
// the NaNs land against a window-by-window count, and that every other
// output is what the fused run gives.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"
#include "Reference.h"

#include "heterps/Runtime/Executor.h"

#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::testutil;

namespace {

/// One spatial axis of a window: output o reads inputs o * stride - pad +
/// k * dilation for k < kernel.
struct Axis {
  int64_t kernel, stride, pad, dilation;
};

/// Per output of a 2-D window op over `nan` (a [C, H, W] mask), whether its
/// window reads a NaN.
std::vector<bool> windowsReadingNaN(const std::vector<bool> &nan, int64_t c,
                                    int64_t h, int64_t w, Axis y, Axis x,
                                    int64_t oh, int64_t ow) {
  std::vector<bool> out(c * oh * ow, false);
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t ki = 0; ki < y.kernel; ++ki)
          for (int64_t kj = 0; kj < x.kernel; ++kj) {
            int64_t r = i * y.stride - y.pad + ki * y.dilation;
            int64_t q = j * x.stride - x.pad + kj * x.dilation;
            if (r >= 0 && r < h && q >= 0 && q < w && nan[(ch * h + r) * w + q])
              out[(ch * oh + i) * ow + j] = true;
          }
  return out;
}

std::string errorOf(llvm::Error e) { return llvm::toString(std::move(e)); }

} // namespace

TEST(NaNPassing, ThroughAFusedConvReluAndADilatedMaxPool) {
  std::mt19937 rng{3};
  // A depthwise 3x3 Conv (pads 1) keeps each channel's NaNs in its own
  // channel; the Relu fuses into it; the MaxPool is strided, padded and
  // dilated, the hardest case for finding which windows read a NaN.
  Tensor w = randomTensor({2, 1, 3, 3}, rng);
  PlanBuilder b;
  int in = b.input("x", {1, 2, 9, 9});
  int conv = b.op("Conv", {in, b.weight("w", w), -1}, {1, 2, 9, 9},
                  Attrs().ints("pads", {1, 1, 1, 1}).i("group", 2));
  int relu = b.op("Relu", {conv}, {1, 2, 9, 9});
  b.output("pooled", b.op("MaxPool", {relu}, {1, 2, 4, 4},
                          Attrs()
                              .ints("kernel_shape", {3, 3})
                              .ints("strides", {2, 2})
                              .ints("pads", {1, 1, 1, 1})
                              .ints("dilations", {2, 2})));
  b.output("clipped", b.op("Clip", {in}, {1, 2, 9, 9},
                           Attrs().f("min", 0.f).f("max", 0.5f)));

  Tensor x = randomTensor({1, 2, 9, 9}, rng);
  std::vector<bool> nan(2 * 81, false);
  for (int64_t at : {4, 40, 81 + 80}) {
    x.data<float>()[at] = NAN;
    nan[at] = true;
  }
  ExecutorOptions fusedOnly;
  fusedOnly.propagateNaN = false;
  auto passing = Executor::create(b.build());
  auto dropping = Executor::create(b.build(), fusedOnly);
  ASSERT_TRUE(passing && dropping);
  auto got = (*passing)->run({x});
  auto dropped = (*dropping)->run({x});
  ASSERT_TRUE(got && dropped) << errorOf(got.takeError());

  std::vector<bool> convNaN =
      windowsReadingNaN(nan, 2, 9, 9, {3, 1, 1, 1}, {3, 1, 1, 1}, 9, 9);
  std::vector<bool> poolNaN =
      windowsReadingNaN(convNaN, 2, 9, 9, {3, 2, 1, 2}, {3, 2, 1, 2}, 4, 4);
  const float *pooled = (*got)[0].data<float>();
  const float *reference = (*dropped)[0].data<float>();
  int64_t nans = 0;
  for (size_t i = 0; i < poolNaN.size(); ++i) {
    EXPECT_EQ(std::isnan(pooled[i]), poolNaN[i]) << "pooled output " << i;
    if (!poolNaN[i])
      EXPECT_EQ(pooled[i], reference[i]) << "pooled output " << i;
    nans += poolNaN[i];
  }
  // The NaNs reach some outputs but not all: the test can tell.
  EXPECT_GT(nans, 0);
  EXPECT_LT(nans, static_cast<int64_t>(poolNaN.size()));
  // Without NaN passing, oneDNN drops every one of them.
  for (size_t i = 0; i < poolNaN.size(); ++i)
    EXPECT_FALSE(std::isnan(reference[i])) << "pooled output " << i;

  const float *clipped = (*got)[1].data<float>();
  for (size_t i = 0; i < nan.size(); ++i) {
    EXPECT_EQ(std::isnan(clipped[i]), nan[i]) << "clipped output " << i;
    if (!nan[i])
      EXPECT_EQ(clipped[i], std::clamp(x.data<float>()[i], 0.f, 0.5f));
  }
}

TEST(NaNPassing, ANaNWeightReachesTheOutput) {
  std::mt19937 rng{5};
  Tensor w = randomTensor({4, 3, 3, 3}, rng);
  w.data<float>()[7] = NAN; // output channel 0 only
  PlanBuilder b;
  int in = b.input("x", {1, 3, 6, 6});
  int conv = b.op("Conv", {in, b.weight("w", w), -1}, {1, 4, 4, 4});
  b.output("y", b.op("Relu", {conv}, {1, 4, 4, 4}));
  auto exec = Executor::create(b.build());
  ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());
  auto out = (*exec)->run({randomTensor({1, 3, 6, 6}, rng)});
  ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
  const float *y = (*out)[0].data<float>();
  for (int64_t i = 0; i < 64; ++i)
    EXPECT_EQ(std::isnan(y[i]), i < 16) << "output " << i;
}

// The same with the NaN made from finite constants (the square root of a
// negative weight), which folding turns into a weight before the check.
TEST(NaNPassing, ANaNComputedFromConstantsReachesTheOutput) {
  std::mt19937 rng{6};
  Tensor w = randomTensor({4, 3, 3, 3}, rng, 0.1f, 1.f);
  w.data<float>()[7] = -1.f; // output channel 0 only
  PlanBuilder b;
  int in = b.input("x", {1, 3, 6, 6});
  int root = b.op("Sqrt", {b.weight("w", w)}, {4, 3, 3, 3});
  int conv = b.op("Conv", {in, root, -1}, {1, 4, 4, 4});
  b.output("y", b.op("Relu", {conv}, {1, 4, 4, 4}));
  auto exec = Executor::create(b.build());
  ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());
  EXPECT_EQ((*exec)->plan().ops_size(), 1); // Sqrt folded, Relu fused
  auto out = (*exec)->run({randomTensor({1, 3, 6, 6}, rng)});
  ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
  const float *y = (*out)[0].data<float>();
  for (int64_t i = 0; i < 64; ++i)
    EXPECT_EQ(std::isnan(y[i]), i < 16) << "output " << i;
}
