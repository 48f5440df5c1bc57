//===- KernelTest.cpp - CPU kernels against reference loops ---------------===//
//
// Each test runs a one-op (or short) plan on small random inputs and compares
// the values with the naive implementations in Reference.cpp.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"
#include "Reference.h"

#include "../../lib/Runtime/Backends/CPU/CPUKernels.h"
#include "../../lib/Runtime/Backends/CPU/DepthwiseDirect.h"
#include "../../lib/Runtime/Backends/CPU/DirectConvAVX2.h"
#include "../../lib/Runtime/Backends/CPU/DnnlUtils.h"
#include "../../lib/Runtime/Backends/CPU/GroupWidening.h"
#include "../../lib/Runtime/Backends/CPU/NarrowGroupConv.h"
#include "../../lib/Runtime/Backends/CPU/PointwiseDepthwise.h"
#include "../../lib/Runtime/Backends/CPU/SwishPass.h"
#include "../../lib/Runtime/Backends/CPU/WinogradConv.h"
#include "heterps/Runtime/Backends/CPU/CPUBackend.h"
#include "heterps/Runtime/Executor.h"

#include <omp.h>

#include <array>
#include <cfloat>
#include <cmath>
#include <set>
#include <thread>

using namespace heterps::runtime;
using namespace heterps::runtime::testutil;

namespace {

/// An op operand: a graph input, a weight, or absent.
struct Arg {
  Tensor t;
  bool weight = false;
};
Arg in(Tensor t) { return {std::move(t), false}; }
Arg wt(Tensor t) { return {std::move(t), true}; }
Arg none() { return {Tensor(), false}; }

/// Runs one op of `type` on `args` and returns its output (expected shape
/// `out`, type `outType`); fails the test on any error.
Tensor runOp(const std::string &type, const std::vector<Arg> &args, Shape out,
             const Attrs &attrs = Attrs(), DType outType = DType::F32) {
  PlanBuilder b;
  std::vector<int> ids;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg &a = args[i];
    if (a.t.isNull())
      ids.push_back(-1);
    else if (a.weight)
      ids.push_back(b.weight("w" + std::to_string(i), a.t));
    else {
      ids.push_back(b.input("x" + std::to_string(i), a.t.shape(), a.t.dtype()));
      inputs.push_back(a.t);
    }
  }
  b.output("y", b.op(type, ids, out, attrs, outType));
  auto exec = Executor::create(b.build());
  if (!exec) {
    ADD_FAILURE() << llvm::toString(exec.takeError());
    return Tensor();
  }
  auto outputs = (*exec)->run(inputs);
  if (!outputs) {
    ADD_FAILURE() << llvm::toString(outputs.takeError());
    return Tensor();
  }
  return (*outputs)[0];
}

class KernelTest : public ::testing::Test {
protected:
  Tensor random(Shape shape, float lo = -1.f, float hi = 1.f) {
    return randomTensor(std::move(shape), rng, lo, hi);
  }
  std::mt19937 rng{42};
};

} // namespace

//===----------------------------------------------------------------------===//
// Conv
//===----------------------------------------------------------------------===//

TEST_F(KernelTest, Conv2dWithBiasStridesAndPads) {
  Tensor x = random({2, 8, 9, 9}), w = random({16, 8, 3, 3}),
         bias = random({16});
  ConvParams p{{2, 2}, {1, 1}, {1, 1, 1, 1}, 1};
  Tensor y = runOp("Conv", {in(x), wt(w), wt(bias)}, {2, 16, 5, 5},
                   Attrs().ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1}));
  EXPECT_TRUE(allClose(y, refConv(x, w, &bias, p)));
}

TEST_F(KernelTest, Conv2dAsymmetricPadsAndRuntimeWeights) {
  Tensor x = random({1, 3, 7, 6}), w = random({4, 3, 2, 3});
  ConvParams p{{1, 1}, {1, 1}, {0, 1, 1, 2}, 1};
  Tensor y = runOp("Conv", {in(x), in(w)}, {1, 4, 7, 7},
                   Attrs().ints("pads", {0, 1, 1, 2}));
  EXPECT_TRUE(allClose(y, refConv(x, w, nullptr, p)));
}

TEST_F(KernelTest, GroupedAndDilatedConv) {
  Tensor x = random({1, 8, 10, 10}), w = random({12, 2, 3, 3}),
         bias = random({12});
  ConvParams p{{1, 1}, {2, 2}, {2, 2, 2, 2}, 4};
  Tensor y = runOp("Conv", {in(x), wt(w), wt(bias)}, {1, 12, 10, 10},
                   Attrs()
                       .ints("dilations", {2, 2})
                       .ints("pads", {2, 2, 2, 2})
                       .i("group", 4));
  EXPECT_TRUE(allClose(y, refConv(x, w, &bias, p)));
}

TEST_F(KernelTest, DepthwiseConv) {
  Tensor x = random({2, 16, 8, 8}), w = random({16, 1, 3, 3});
  ConvParams p{{1, 1}, {1, 1}, {1, 1, 1, 1}, 16};
  Tensor y = runOp("Conv", {in(x), wt(w)}, {2, 16, 8, 8},
                   Attrs().ints("pads", {1, 1, 1, 1}).i("group", 16));
  EXPECT_TRUE(allClose(y, refConv(x, w, nullptr, p)));
}

TEST_F(KernelTest, Conv1dAnd3d) {
  Tensor x1 = random({2, 4, 11}), w1 = random({6, 4, 3});
  Tensor y1 =
      runOp("Conv", {in(x1), wt(w1)}, {2, 6, 5}, Attrs().ints("strides", {2}));
  EXPECT_TRUE(allClose(y1, refConv(x1, w1, nullptr, {{2}, {1}, {0, 0}, 1})));

  Tensor x3 = random({1, 3, 5, 6, 7}), w3 = random({4, 3, 3, 3, 3}),
         b3 = random({4});
  Tensor y3 = runOp("Conv", {in(x3), wt(w3), wt(b3)}, {1, 4, 5, 6, 7},
                    Attrs().ints("pads", {1, 1, 1, 1, 1, 1}));
  EXPECT_TRUE(allClose(
      y3, refConv(x3, w3, &b3, {{1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, 1})));
}

TEST_F(KernelTest, ConvWithFusedActivation) {
  Tensor x = random({1, 8, 6, 6}), w = random({8, 8, 3, 3}), bias = random({8});
  Tensor ref = refConv(x, w, &bias, {{1, 1}, {1, 1}, {1, 1, 1, 1}, 1});
  Tensor relu =
      runOp("Conv", {in(x), wt(w), wt(bias)}, {1, 8, 6, 6},
            Attrs().ints("pads", {1, 1, 1, 1}).s("activation", "Relu"));
  EXPECT_TRUE(
      allClose(relu, refUnary(ref, [](float v) { return std::max(v, 0.f); })));
  Tensor leaky = runOp("Conv", {in(x), wt(w), wt(bias)}, {1, 8, 6, 6},
                       Attrs()
                           .ints("pads", {1, 1, 1, 1})
                           .s("activation", "LeakyRelu")
                           .f("activation_alpha", 0.2f));
  EXPECT_TRUE(allClose(
      leaky, refUnary(ref, [](float v) { return v < 0 ? 0.2f * v : v; })));
}

// The Swish pass that autotuning may run after a convolution instead of
// oneDNN's post-op (SwishPass.h): within 2e-7 of x / (1 + e^-x) in double
// precision on [-88, 88] (every float exponent there, and a dense sweep),
// signed zeros below, +inf, NaN for NaN and -inf (as x * sigmoid(x)); over
// a length the threads split, with a tail shorter than a vector; the
// AVX-512 path (where the CPU has it) and the portable one.
TEST_F(KernelTest, SwishPassMatchesTheExactFunction) {
  std::vector<float> x;
  for (float v = -90.f; v <= 90.f; v += 0.0029f)
    x.push_back(v);
  for (float v = 1e-30f; v < 88.f; v *= 1.7f) {
    x.push_back(v);
    x.push_back(-v);
  }
  for (float v : {0.f, -0.f, 1e-45f, -1e-45f, 88.f, -88.f, -88.5f, 1e30f,
                  -1e30f, FLT_MAX, -FLT_MAX, INFINITY, -INFINITY, NAN})
    x.push_back(v);
  ASSERT_GT(x.size(), 32768u);
  ASSERT_NE(x.size() % 16, 0u);
  for (auto [name, swish] : {std::pair{"vectorised", cpu::swishInPlace},
                             std::pair{"portable", cpu::swishPortable}})
    for (size_t n : {x.size(), size_t(5)}) {
      SCOPED_TRACE(name);
      std::vector<float> y(x.end() - n, x.end());
      swish(y.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i) {
        float v = x[x.size() - n + i], got = y[i];
        SCOPED_TRACE("swish(" + std::to_string(v) +
                     ") = " + std::to_string(got));
        if (std::isnan(v) || v == -INFINITY) {
          EXPECT_TRUE(std::isnan(got));
        } else if (v < -88.f) {
          EXPECT_EQ(got, 0.f);
        } else if (v == INFINITY) {
          EXPECT_EQ(got, INFINITY);
        } else {
          double want = v / (1.0 + std::exp(-static_cast<double>(v)));
          EXPECT_LE(std::abs(got - want), 2e-7 * std::abs(want) + 1e-44);
        }
      }
    }
}

// A Conv with a fused Swish gives conv(x) * sigmoid(conv(x)), after the sum
// when it has one, with or without autotuning (which may time the Swish as
// a pass after the convolution faster than oneDNN's post-op: a depthwise
// convolution on 32 channels of 56x56, ordinary and 1x1 convolutions).
TEST_F(KernelTest, ConvWithSwishMatchesItsReference) {
  struct Case {
    Shape x, w;
    int64_t group, pad;
    bool sum;
    // Winograd's error follows the sums' magnitude (|y| up to ~20 here),
    // not each output's: ~2e-5 on an element near zero with oneDNN's
    // (AVX-512), up to ~3e-4 with our own (WinogradConv.h, AVX2: ~1.5e-5
    // of the largest output).
    float atol = 1e-5f;
  };
  auto swish = [](float v) { return v / (1.f + std::exp(-v)); };
  for (const Case &c :
       {Case{{2, 32, 56, 56}, {32, 1, 3, 3}, 32, 1, false},
        Case{{1, 16, 20, 20}, {48, 16, 1, 1}, 1, 0, false},
        Case{{1, 16, 9, 9}, {16, 16, 3, 3}, 1, 1, true},
        // Winograd, which has no swish post-op, with the
        // Swish as a pass (EfficientNet-V2's Fused-MBConv).
        Case{{1, 48, 48, 48}, {192, 48, 3, 3}, 1, 1, false, 5e-4f}}) {
    Tensor x = random(c.x, -3.f, 3.f), w = random(c.w), bias = random({c.w[0]});
    Tensor addend = random({c.x[0], c.w[0], c.x[2], c.x[3]});
    Tensor ref = refConv(
        x, w, &bias, {{1, 1}, {1, 1}, {c.pad, c.pad, c.pad, c.pad}, c.group});
    if (c.sum)
      ref = refBinary(ref, addend, [](float u, float v) { return u + v; });
    ref = refUnary(ref, swish);
    PlanBuilder b;
    int xi = b.input("x", x.shape()), si = b.input("s", addend.shape());
    std::vector<int> in = {xi, b.weight("w", w), b.weight("b", bias)};
    if (c.sum)
      in.push_back(si);
    b.output("y", b.op("Conv", in, ref.shape(),
                       Attrs()
                           .i("group", c.group)
                           .ints("pads", {c.pad, c.pad, c.pad, c.pad})
                           .s("activation", "Swish")));
    plan::Plan plan = b.build();
    for (bool autotune : {false, true}) {
      SCOPED_TRACE(x.typeString() + " by " + w.typeString() +
                   (c.sum ? ", summed" : "") + (autotune ? ", autotuned" : ""));
      CPUBackend backend(BackendOptions{0, autotune});
      auto kernel = backend.createKernel(
          OpInfo(plan.ops(0), {nullptr, &w, &bias, nullptr}));
      ASSERT_TRUE(static_cast<bool>(kernel))
          << llvm::toString(kernel.takeError());
      const Tensor *args[] = {&x, &w, &bias, &addend};
      Tensor y;
      ASSERT_FALSE(
          static_cast<bool>((*kernel)->run(llvm::ArrayRef(args, c.sum ? 4 : 3),
                                           llvm::MutableArrayRef<Tensor>(y))));
      EXPECT_TRUE(allClose(llvm::cantFail(y.toPlain()), ref, 1e-4f, c.atol));
    }
  }
}

// Channel counts that 8 divides but 16 does not (24 to 40, a MobileNet's)
// in 16-blocked layouts, the last block padded: a Conv reads them and may
// write them (an autotuning candidate), with or without a summed addend.
TEST_F(KernelTest, ConvOnPaddedBlocksMatchesItsReference) {
  auto ctx = std::make_shared<cpu::CPUContext>();
  Tensor x = random({2, 24, 7, 7}), w = random({40, 24, 1, 1}),
         bias = random({40}), addend = random({2, 40, 7, 7});
  Tensor padded = cpu::reorderTo(x,
                                 cpu::memory::desc(cpu::toDims(x.shape()),
                                                   cpu::memory::data_type::f32,
                                                   cpu::Tag::nChw16c),
                                 ctx);
  for (bool sum : {false, true}) {
    SCOPED_TRACE(sum ? "summed" : "plain");
    Tensor ref = refConv(x, w, &bias, {{1, 1}, {1, 1}, {0, 0, 0, 0}, 1});
    if (sum)
      ref = refBinary(ref, addend, [](float u, float v) { return u + v; });
    PlanBuilder b;
    std::vector<int> in = {b.input("x", x.shape()), b.weight("w", w),
                           b.weight("b", bias)};
    if (sum)
      in.push_back(b.input("s", addend.shape()));
    b.output("y", b.op("Conv", in, ref.shape(), Attrs()));
    plan::Plan plan = b.build();
    CPUBackend backend(BackendOptions{0, /*autotune=*/true});
    auto kernel = llvm::cantFail(backend.createKernel(
        OpInfo(plan.ops(0), {nullptr, &w, &bias, nullptr})));
    const Tensor *args[] = {&padded, &w, &bias, &addend};
    Tensor y;
    ASSERT_FALSE(bool(kernel->run(llvm::ArrayRef(args, sum ? 4 : 3),
                                  llvm::MutableArrayRef<Tensor>(y))));
    EXPECT_TRUE(allClose(llvm::cantFail(y.toPlain()), ref));
  }
}

namespace {

/// `x` channels-last.
Tensor channelsLastOf(const Tensor &x) {
  return cpu::reorderTo(x,
                        cpu::memory::desc(cpu::toDims(x.shape()),
                                          cpu::memory::data_type::f32,
                                          cpu::Tag::nhwc),
                        std::make_shared<cpu::CPUContext>());
}

/// A Conv of `input` by `w` plus `bias` with `attrs` through the Conv
/// kernel, autotuning candidate `name` the only one allowed: its output,
/// or why not.
llvm::Expected<Tensor> runConvCandidate(const Tensor &input, const Tensor &w,
                                        const Tensor &bias,
                                        const Shape &outShape,
                                        const Attrs &attrs,
                                        const std::string &name) {
  PlanBuilder b;
  b.output("y", b.op("Conv",
                     {b.input("x", input.shape()), b.weight("w", w),
                      b.weight("b", bias)},
                     outShape, attrs));
  plan::Plan plan = b.build();
  auto ctx = std::make_shared<cpu::CPUContext>();
  ctx->acceptConvCandidate = [&](llvm::StringRef n) { return n == name; };
  KernelRegistry registry;
  cpu::registerConvKernel(registry, ctx);
  auto kernel =
      (*registry.lookup("Conv"))(OpInfo(plan.ops(0), {nullptr, &w, &bias}));
  if (!kernel)
    return kernel.takeError();
  const Tensor *args[] = {&input, &w, &bias};
  Tensor y;
  if (llvm::Error e = (*kernel)->run(args, llvm::MutableArrayRef<Tensor>(y)))
    return std::move(e);
  return y;
}

/// The activations a Conv fuses (attribute `activation`), by name; Clip's
/// bounds 0 and 6.
const std::map<std::string, std::function<float(float)>> &fusedActivations() {
  static auto relu6 = [](float v) { return std::min(std::max(v, 0.f), 6.f); };
  static const std::map<std::string, std::function<float(float)>> map = {
      {"", [](float v) { return v; }},
      {"Relu", [](float v) { return std::max(v, 0.f); }},
      {"Clip", relu6},
      {"HardSwish", [](float v) { return v * relu6(v + 3.f) / 6.f; }},
      {"Swish", [](float v) { return v / (1.f + std::exp(-v)); }}};
  return map;
}

/// `y` is close to `ref` and NaN at element 0, which the input held; the
/// reference keeps NaN where the kernel does, so those are left out.
void expectCloseWithNaNAtZero(const Tensor &y, const Tensor &ref,
                              float atol = 1e-5f) {
  Tensor plain = llvm::cantFail(y.toPlain());
  ASSERT_TRUE(std::isnan(plain.data<float>()[0]));
  Tensor expected = ref.clone();
  float *got = plain.data<float>(), *want = expected.data<float>();
  for (int64_t i = 0; i < ref.numElements(); ++i)
    if (std::isnan(got[i]) && std::isnan(want[i]))
      got[i] = want[i] = 0.f;
  EXPECT_TRUE(allClose(plain, expected, 1e-4f, atol));
}

/// Op `type`, from the kernels `registerKernels` adds, on `inputs` (null
/// where absent; those in `runtime` graph inputs, the others constant
/// weights) with autotuning candidate `candidate` the only one allowed:
/// its output, or why not. Where the candidate is a fused kernel of our
/// own, its unfused alternative finds no candidate passing the filter, so
/// an output is the candidate's.
llvm::Expected<Tensor>
runOnlyCandidate(llvm::StringRef type,
                 void (*registerKernels)(KernelRegistry &, cpu::CPUContextPtr),
                 const std::vector<const Tensor *> &inputs,
                 std::set<size_t> runtime, const Shape &outShape,
                 const Attrs &attrs, llvm::StringRef candidate) {
  PlanBuilder b;
  std::vector<int> values;
  std::vector<const Tensor *> constants;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    bool isInput = runtime.count(i) > 0;
    values.push_back(!inputs[i] ? -1
                     : isInput  ? b.input(name, inputs[i]->shape())
                                : b.weight(name, *inputs[i]));
    constants.push_back(isInput ? nullptr : inputs[i]);
  }
  b.output("y", b.op(type.str(), values, outShape, attrs));
  plan::Plan plan = b.build();
  auto ctx = std::make_shared<cpu::CPUContext>();
  ctx->acceptConvCandidate = [&](llvm::StringRef n) { return n == candidate; };
  KernelRegistry registry;
  registerKernels(registry, ctx);
  auto kernel = (*registry.lookup(type))(OpInfo(plan.ops(0), constants));
  if (!kernel)
    return kernel.takeError();
  Tensor y;
  if (llvm::Error e = (*kernel)->run(inputs, llvm::MutableArrayRef<Tensor>(y)))
    return std::move(e);
  return y;
}

} // namespace

// Each autotuning candidate of a Conv (ConvKernel.cpp), run alone through
// CPUContext::acceptConvCandidate, gives the reference's output: timing
// picks among them per machine and shape, so each must be right on its
// own, and one that cannot be built fails the kernel's first run.
TEST_F(KernelTest, EveryConvCandidateMatchesItsReference) {
  struct Case {
    Shape x, w;
    int64_t group, pad;
    bool swish, channelsLast;
    std::vector<std::string> candidates;
  };
  auto swish = [](float v) { return v / (1.f + std::exp(-v)); };
  std::vector<Case> cases = {
      {{1, 16, 12, 12},
       {16, 16, 3, 3},
       1,
       1,
       true,
       false,
       {"direct", "direct, Swish as a pass", "direct nChw16c",
        "direct nChw16c, Swish as a pass", "direct nChw8c",
        "direct nChw8c, Swish as a pass"}},
      {{2, 32, 8, 8},
       {32, 4, 3, 3},
       8,
       1,
       false,
       false,
       {"direct nChw16c, groups merged", "direct nChw8c, groups merged"}},
      {{1, 24, 7, 7},
       {40, 24, 1, 1},
       1,
       0,
       false,
       false,
       {"direct nChw16c padded"}},
      {{1, 16, 9, 9}, {32, 16, 1, 1}, 1, 0, false, true, {"direct nhwc"}}};
  // oneDNN 2.6 has Winograd on AVX-512 only, and no swish post-op for it:
  // the Swish runs as a pass (EfficientNet-V2's Fused-MBConv blocks).
  // Without AVX-512 it has only its reference kernels for blocks of 16,
  // which the Conv refuses as candidates.
  bool avx512 = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core;
  if (avx512)
    cases[0].candidates.push_back("winograd, Swish as a pass");
  for (Case &c : cases)
    if (!avx512)
      llvm::erase_if(c.candidates, [](const std::string &name) {
        return llvm::StringRef(name).contains("16c");
      });
  for (const Case &c : cases) {
    Tensor x = random(c.x, -3.f, 3.f), w = random(c.w), bias = random({c.w[0]});
    Tensor ref = refConv(
        x, w, &bias, {{1, 1}, {1, 1}, {c.pad, c.pad, c.pad, c.pad}, c.group});
    if (c.swish)
      ref = refUnary(ref, swish);
    Attrs attrs =
        Attrs().i("group", c.group).ints("pads", {c.pad, c.pad, c.pad, c.pad});
    if (c.swish)
      attrs.s("activation", "Swish");
    Tensor input = c.channelsLast ? channelsLastOf(x) : x;
    for (const std::string &name : c.candidates) {
      SCOPED_TRACE(x.typeString() + " by " + w.typeString() + ": " + name);
      llvm::Expected<Tensor> y =
          runConvCandidate(input, w, bias, ref.shape(), attrs, name);
      ASSERT_TRUE(static_cast<bool>(y)) << llvm::toString(y.takeError());
      if (name == "direct nhwc")
        EXPECT_TRUE(cpu::isChannelsLast(*y));
      // Winograd's error follows the sums' magnitude, not each output's.
      EXPECT_TRUE(allClose(llvm::cantFail(y->toPlain()), ref, 1e-4f, 1e-4f));
    }
  }
}

// Our own depthwise kernel (DepthwiseDirect.h), run alone: every kernel
// size, both strides, each activation it takes in registers and a Swish
// as a pass, channel counts that 16 does not divide (the padded last
// block; the channels-last rows' ends), an uneven image and uneven pads,
// two items, both layouts; NaN stays NaN.
TEST_F(KernelTest, OwnDepthwiseConvMatchesItsReference) {
  if (!cpu::depthwiseDirectRuns(3, 1))
    GTEST_SKIP() << "no AVX-512 here: the kernel is not offered";
  struct Case {
    Shape x;
    int64_t kernel, stride;
    std::vector<int64_t> pads;
    std::string activation;
    bool channelsLast = false;
  };
  const auto &activations = fusedActivations();
  std::vector<Case> cases = {
      {{1, 32, 11, 11}, 3, 1, {1, 1, 1, 1}, "Relu"},
      {{1, 24, 13, 13}, 5, 2, {2, 2, 2, 2}, "Clip"},
      {{1, 40, 9, 10}, 3, 2, {0, 1, 1, 0}, "HardSwish"},
      {{2, 16, 12, 12}, 7, 1, {3, 3, 3, 3}, ""},
      {{1, 48, 7, 7}, 3, 1, {1, 1, 1, 1}, "Swish"},
      {{2, 24, 9, 9}, 5, 1, {2, 2, 2, 2}, "Clip", true},
      {{1, 40, 9, 10}, 3, 2, {0, 1, 1, 0}, "Relu", true},
      {{1, 32, 6, 6}, 7, 2, {3, 3, 3, 3}, "Swish", true}};
  for (const Case &c : cases) {
    int64_t channels = c.x[1];
    Tensor x = random(c.x, -3.f, 3.f);
    x.data<float>()[0] = std::nanf("");
    Tensor w = random({channels, 1, c.kernel, c.kernel}),
           bias = random({channels});
    Tensor ref = refUnary(
        refConv(x, w, &bias, {{c.stride, c.stride}, {1, 1}, c.pads, channels}),
        activations.at(c.activation));
    Attrs attrs = Attrs()
                      .i("group", channels)
                      .ints("pads", c.pads)
                      .ints("strides", {c.stride, c.stride});
    if (!c.activation.empty())
      attrs.s("activation", c.activation);
    if (c.activation == "Clip")
      attrs.f("activation_min", 0.f).f("activation_max", 6.f);
    // A Swish in registers, and as the pass after.
    std::string base =
        c.channelsLast ? "own depthwise nhwc" : "own depthwise nChw16c";
    std::vector<std::string> names = {base};
    if (c.activation == "Swish")
      names.push_back(base + ", Swish as a pass");
    for (const std::string &name : names) {
      SCOPED_TRACE(x.typeString() + " by " + w.typeString() + ", " +
                   c.activation + ", " + name);
      llvm::Expected<Tensor> y =
          runConvCandidate(c.channelsLast ? channelsLastOf(x) : x, w, bias,
                           ref.shape(), attrs, name);
      ASSERT_TRUE(static_cast<bool>(y)) << llvm::toString(y.takeError());
      EXPECT_EQ(cpu::isChannelsLast(*y), c.channelsLast);
      expectCloseWithNaNAtZero(*y, ref);
    }
  }
}

// Our own kernel for groups of 4 or 8 channels (NarrowGroupConv.h), run
// alone: both widths, each activation it takes in registers and a Swish as
// a pass, images whose rows split into uneven strips (13 and 11 columns)
// or none (1), two items, channels that leave the last 16-channel block
// padded; NaN stays NaN, in its own group only.
TEST_F(KernelTest, OwnNarrowGroupConvMatchesItsReference) {
  if (!cpu::narrowGroupConvRuns(16, 4))
    GTEST_SKIP() << "no AVX-512 here: the kernel is not offered";
  struct Case {
    Shape x;
    int64_t width;
    std::string activation;
  };
  const auto &activations = fusedActivations();
  std::vector<Case> cases = {
      {{1, 32, 9, 13}, 4, "Relu"},     {{2, 48, 7, 11}, 8, "Swish"},
      {{1, 16, 5, 1}, 4, "HardSwish"}, {{2, 32, 6, 6}, 8, ""},
      {{1, 40, 5, 7}, 8, "Relu"},      {{1, 12, 6, 5}, 4, ""}};
  for (const Case &c : cases) {
    int64_t channels = c.x[1], groups = channels / c.width;
    Tensor x = random(c.x, -3.f, 3.f);
    x.data<float>()[0] = std::nanf("");
    Tensor w = random({channels, c.width, 3, 3}), bias = random({channels});
    Tensor ref =
        refUnary(refConv(x, w, &bias, {{1, 1}, {1, 1}, {1, 1, 1, 1}, groups}),
                 activations.at(c.activation));
    Attrs attrs = Attrs().i("group", groups).ints("pads", {1, 1, 1, 1});
    if (!c.activation.empty())
      attrs.s("activation", c.activation);
    std::vector<std::string> names = {"own narrow groups nChw16c"};
    if (c.activation == "Swish")
      names.push_back(names[0] + ", Swish as a pass");
    for (const std::string &name : names) {
      SCOPED_TRACE(x.typeString() + " by " + w.typeString() + ", " +
                   c.activation + ", " + name);
      llvm::Expected<Tensor> y =
          runConvCandidate(x, w, bias, ref.shape(), attrs, name);
      ASSERT_TRUE(static_cast<bool>(y)) << llvm::toString(y.takeError());
      expectCloseWithNaNAtZero(*y, ref);
    }
  }
}

// Our own Winograd kernel (WinogradConv.h), run alone, in blocks of 8
// channels and, where both channel counts fill them, of 16: each
// activation it takes in registers and a Swish as a pass, a residual sum,
// output channels that 16 does not divide (a half-empty panel), uneven
// images and pads (partial tiles at the edges, a pad of 2), two items,
// weights whose transform bypasses the cache, and both ways it runs: a
// block of tiles a thread and chunks of tiles on all threads; grouped
// convolutions of 8- to 256-channel groups, two items of them (each
// group's channels a slice of every item's), each way.
// Winograd's error follows the sums' magnitude, so the tolerance does too.
TEST_F(KernelTest, OwnWinogradConvMatchesItsReference) {
  if (!cpu::winogradConvRuns(8, 8, {}))
    GTEST_SKIP() << "no AVX2 and FMA here: the kernel is not offered";
  struct Case {
    Shape x;
    int64_t k;
    std::vector<int64_t> pads;
    std::string activation;
    bool sum = false;
    int64_t groups = 1;
  };
  const auto &activations = fusedActivations();
  // Each of at least 5 million multiply-adds, below which the kernel is
  // not offered.
  std::vector<Case> cases = {
      {{1, 32, 28, 28}, 32, {1, 1, 1, 1}, "Relu"},
      {{2, 16, 30, 29}, 24, {0, 1, 1, 0}, "Clip"},
      {{1, 24, 41, 29}, 24, {1, 1, 1, 1}, "HardSwish", true},
      {{2, 64, 11, 11}, 40, {2, 0, 0, 2}, "Relu"},
      {{1, 32, 24, 24}, 32, {1, 1, 1, 1}, "Swish"},
      {{1, 512, 16, 15}, 64, {1, 1, 1, 1}, "", true},
      // Transformed weights of 18 MiB, written past the cache.
      {{1, 512, 8, 8}, 512, {1, 1, 1, 1}, "Relu"},
      {{2, 32, 15, 13}, 48, {1, 1, 1, 1}, "Relu", true},
      {{1, 96, 20, 20}, 96, {1, 1, 1, 1}, "Relu", false, 2},
      {{2, 64, 21, 19}, 64, {1, 1, 1, 1}, "", true, 4},
      {{1, 48, 40, 40}, 48, {1, 1, 1, 1}, "HardSwish", false, 6},
      {{1, 512, 8, 8}, 512, {1, 1, 1, 1}, "Relu", false, 2}};
  std::set<std::pair<bool, bool>> paths; // (chunked, grouped)
  for (const Case &c : cases) {
    int64_t cg = c.x[1] / c.groups, kg = c.k / c.groups;
    Tensor x = random(c.x, -3.f, 3.f), w = random({c.k, cg, 3, 3}),
           bias = random({c.k});
    Tensor ref = refConv(x, w, &bias, {{1, 1}, {1, 1}, c.pads, c.groups});
    Tensor addend = random(ref.shape(), -3.f, 3.f);
    if (c.sum)
      ref = refBinary(ref, addend, std::plus<float>());
    ref = refUnary(ref, activations.at(c.activation));
    Attrs attrs = Attrs().ints("pads", c.pads).i("group", c.groups);
    if (!c.activation.empty())
      attrs.s("activation", c.activation);
    if (c.activation == "Clip")
      attrs.f("activation_min", 0.f).f("activation_max", 6.f);
    bool chunked =
        cpu::winogradChunked({c.x[0], cg, c.x[2], c.x[3], kg, ref.dim(2),
                              ref.dim(3), c.pads[0], c.pads[1]});
    paths.insert({chunked, c.groups > 1});
    float largest = 0.f;
    for (int64_t i = 0; i < ref.numElements(); ++i)
      largest = std::max(largest, std::fabs(ref.data<float>()[i]));
    std::vector<const Tensor *> inputs = {&x, &w, &bias};
    if (c.sum)
      inputs.push_back(&addend);
    // In blocks of 16 where both channel counts (a group's) fill them.
    for (int64_t block : {8, 16}) {
      if (cg % block || kg % block)
        continue;
      std::string name = "own winograd nChw" + std::to_string(block) + "c";
      if (c.activation == "Swish")
        name += ", Swish as a pass";
      SCOPED_TRACE(x.typeString() + " by " + w.typeString() + " in " +
                   std::to_string(c.groups) + " groups, " + c.activation +
                   (c.sum ? ", summed" : "") +
                   (chunked ? ", chunks, " : ", blocks, ") + name);
      llvm::Expected<Tensor> y =
          runOnlyCandidate("Conv", cpu::registerConvKernel, inputs, {0, 3},
                           ref.shape(), attrs, name);
      ASSERT_TRUE(static_cast<bool>(y)) << llvm::toString(y.takeError());
      EXPECT_TRUE(
          allClose(llvm::cantFail(y->toPlain()), ref, 1e-4f, 1e-5f * largest));
    }
  }
  // The 16 tiles of 512 channels (and of 2 groups of 256) take chunks and
  // the second case's 112 tiles of 16 blocks, unless dozens of threads
  // make blocks of a few tiles each.
  if (std::thread::hardware_concurrency() <= 16)
    EXPECT_EQ(paths.size(), 4u);
}

// Our own direct kernels in blocks of 8 (DirectConvAVX2.h), each run
// alone. The 1x1 kernel ("own pointwise"): 49 pixels (tiles of 6 and 5), a
// single pixel, two items, input channels that 16 does not divide (the
// weights' padding). The first-convolution kernel ("own stem"): AlexNet's
// kernel and stride on a small image and others, uneven pads, one to four
// input channels, a non-square kernel. Both: a half panel of outputs, each
// activation they take in registers and a Swish as a pass, residual sums;
// NaN stays NaN where the reference has it.
TEST_F(KernelTest, OwnDirectConvsMatchTheirReferences) {
  if (!cpu::directConvAVX2Runs(8, {}))
    GTEST_SKIP() << "no AVX2 and FMA here: the kernels are not offered";
  struct Case {
    Shape x, w;
    int64_t stride;
    std::vector<int64_t> pads;
    std::string activation;
    bool sum = false;
  };
  const auto &activations = fusedActivations();
  std::vector<int64_t> none = {0, 0, 0, 0};
  std::vector<Case> cases = {
      {{1, 400, 7, 7}, {400, 400, 1, 1}, 1, none, "Relu", true},
      {{1, 24, 5, 3}, {40, 24, 1, 1}, 1, none, "Clip"},
      {{2, 32, 4, 4}, {16, 32, 1, 1}, 1, none, "HardSwish"},
      {{1, 64, 1, 1}, {72, 64, 1, 1}, 1, none, ""},
      {{1, 16, 6, 6}, {32, 16, 1, 1}, 1, none, "Swish", true},
      {{2, 3, 31, 29}, {64, 3, 11, 11}, 4, {2, 2, 2, 2}, "Relu"},
      {{1, 3, 20, 21}, {24, 3, 7, 7}, 2, {3, 3, 3, 3}, "Clip"},
      {{1, 1, 9, 9}, {8, 1, 3, 3}, 1, {0, 1, 1, 0}, "HardSwish", true},
      {{1, 4, 12, 12}, {32, 4, 3, 3}, 2, {1, 1, 1, 1}, "Swish"},
      {{1, 2, 8, 9}, {16, 2, 2, 3}, 2, none, ""}};
  for (const Case &c : cases) {
    Tensor x = random(c.x, -3.f, 3.f), w = random(c.w), bias = random({c.w[0]});
    x.data<float>()[0] = std::nanf("");
    Tensor ref =
        refConv(x, w, &bias, {{c.stride, c.stride}, {1, 1}, c.pads, 1});
    Tensor addend = random(ref.shape(), -3.f, 3.f);
    if (c.sum)
      ref = refBinary(ref, addend, std::plus<float>());
    ref = refUnary(ref, activations.at(c.activation));
    Attrs attrs =
        Attrs().ints("pads", c.pads).ints("strides", {c.stride, c.stride});
    if (!c.activation.empty())
      attrs.s("activation", c.activation);
    if (c.activation == "Clip")
      attrs.f("activation_min", 0.f).f("activation_max", 6.f);
    std::string name =
        c.w[2] * c.w[3] == 1 ? "own pointwise nChw8c" : "own stem nChw8c";
    if (c.activation == "Swish")
      name += ", Swish as a pass";
    SCOPED_TRACE(x.typeString() + " by " + w.typeString() + ", " +
                 c.activation + (c.sum ? ", summed" : ""));
    std::vector<const Tensor *> inputs = {&x, &w, &bias};
    if (c.sum)
      inputs.push_back(&addend);
    llvm::Expected<Tensor> y =
        runOnlyCandidate("Conv", cpu::registerConvKernel, inputs, {0, 3},
                         ref.shape(), attrs, name);
    ASSERT_TRUE(static_cast<bool>(y)) << llvm::toString(y.takeError());
    Tensor plain = llvm::cantFail(y->toPlain());
    int64_t nans = 0;
    for (int64_t i = 0; i < ref.numElements(); ++i) {
      float &a = plain.data<float>()[i], &e = ref.data<float>()[i];
      ASSERT_EQ(std::isnan(a), std::isnan(e)) << i;
      if (std::isnan(e)) {
        a = e = 0.f;
        ++nans;
      }
    }
    EXPECT_GT(nans, 0);
    EXPECT_TRUE(allClose(plain, ref, 1e-4f, 1e-4f));
  }
  // Zero output channels: no kernel (the stem weights' packing divides by
  // them).
  EXPECT_FALSE(cpu::directConvAVX2Runs(0, {}));
}

/// `x` (N, C, H, W) in blocks of `block` channels (C a multiple of it).
static std::vector<float> blocked(const Tensor &x, int64_t block) {
  int64_t n = x.dim(0), c = x.dim(1), hw = x.dim(2) * x.dim(3);
  std::vector<float> out(x.numElements());
  for (int64_t i = 0; i < n * c; ++i)
    for (int64_t q = 0; q < hw; ++q)
      out[((i / block) * hw + q) * block + i % block] =
          x.data<float>()[i * hw + q];
  return out;
}

// Our own Winograd weight gradient (WinogradConv.h) against the sums of
// its definition: output channels that 16 does not divide, uneven images
// and pads (partial tiles, a pad of 2 and of 0), many channels, tiles
// enough for two blocks, and groups in blocks of 16 (as training runs
// RegNet's and ResNeXt's: each group's slice of the blocks, at another
// offset in the second item). Its error follows the sums' magnitude:
// 1.3e-5 of the largest on 16384 products a sum.
TEST_F(KernelTest, OwnWinogradWeightGradientMatchesItsReference) {
  if (!cpu::winogradConvRuns(8, 8, {}))
    GTEST_SKIP() << "no AVX2 and FMA here: the kernel is not offered";
  struct Case {
    Shape x;
    int64_t k, padTop, padLeft, padBottom, padRight;
    int64_t groups = 1, block = 8;
  };
  for (const Case &c : {Case{{2, 16, 30, 29}, 24, 1, 0, 1, 1},
                        Case{{2, 8, 9, 10}, 8, 2, 2, 2, 2},
                        Case{{1, 256, 16, 15}, 32, 1, 1, 1, 1},
                        Case{{1, 16, 14, 14}, 16, 0, 0, 0, 0},
                        Case{{4, 32, 64, 64}, 32, 1, 1, 1, 1},
                        Case{{2, 96, 13, 11}, 96, 1, 1, 1, 1, 2, 16},
                        Case{{2, 64, 7, 9}, 64, 1, 0, 1, 2, 4, 16},
                        Case{{1, 32, 8, 8}, 32, 1, 1, 1, 1, 2, 8}}) {
    int64_t n = c.x[0], ch = c.x[1] / c.groups, h = c.x[2], w = c.x[3];
    int64_t k = c.k / c.groups;
    int64_t oh = h + c.padTop + c.padBottom - 2,
            ow = w + c.padLeft + c.padRight - 2;
    Tensor x = random(c.x), dy = random({n, c.k, oh, ow});
    SCOPED_TRACE(x.typeString() + " to " + dy.typeString() + " in " +
                 std::to_string(c.groups) + " groups, blocks of " +
                 std::to_string(c.block));
    std::vector<double> want(c.k * ch * 9, 0.), wantBias(c.k, 0.);
    const float *xs = x.data<float>(), *dys = dy.data<float>();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t o = 0; o < c.k; ++o)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j) {
            float g = dys[((b * c.k + o) * oh + i) * ow + j];
            wantBias[o] += g;
            for (int64_t q = 0; q < ch; ++q)
              for (int64_t t = 0; t < 9; ++t) {
                int64_t ih = i + t / 3 - c.padTop, iw = j + t % 3 - c.padLeft;
                int64_t in = o / k * ch + q;
                if (ih >= 0 && ih < h && iw >= 0 && iw < w)
                  want[(o * ch + q) * 9 + t] +=
                      g * xs[((b * c.x[1] + in) * h + ih) * w + iw];
              }
          }
    std::vector<float> xb = blocked(x, c.block), dyb = blocked(dy, c.block);
    Tensor dw(DType::F32, {c.k, ch, 3, 3}), db(DType::F32, {c.k});
    cpu::WinogradShape shape{n,  ch,       h,         w,       k,       oh,
                             ow, c.padTop, c.padLeft, c.block, c.groups};
    cpu::winogradWeightGradient(xb.data(), dyb.data(), dw.data<float>(),
                                db.data<float>(), shape);
    double largest = 0, worst = 0;
    for (double v : want)
      largest = std::max(largest, std::fabs(v));
    for (size_t i = 0; i < want.size(); ++i)
      worst = std::max(worst, std::fabs(dw.data<float>()[i] - want[i]));
    EXPECT_LT(worst, 3e-5 * largest) << "largest " << largest;
    for (int64_t o = 0; o < c.k; ++o)
      EXPECT_NEAR(db.data<float>()[o], wantBias[o],
                  1e-5 * std::fabs(wantBias[o]) + 1e-4);
    // The same sums in the same order on one thread.
    Tensor alone(DType::F32, dw.shape());
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    cpu::winogradWeightGradient(xb.data(), dyb.data(), alone.data<float>(),
                                nullptr, shape);
    omp_set_num_threads(threads);
    EXPECT_TRUE(allClose(alone, dw, 0.f, 0.f));
  }
}

// Our own 1x1 + depthwise kernel (PointwiseDepthwise.h), run alone through
// CPUContext::acceptConvCandidate on a fused pair, gives the two reference
// convolutions' output: 3x3, 5x5 and 7x7 windows, both strides, both
// activations of each kind,
// channel counts 16 does not divide, uneven images, two items, and an
// image wide enough that each thread's rows take several steps through its
// buffer; NaN in the input stays NaN.
TEST_F(KernelTest, OwnPointwiseDepthwiseMatchesItsReference) {
  if (!cpu::depthwiseDirectRuns(3, 1))
    GTEST_SKIP() << "no AVX-512 here: the kernel is not offered";
  struct Case {
    Shape x;
    int64_t m, stride;
    std::string activation, dwActivation;
    int64_t kernel = 3;
  };
  const auto &activations = fusedActivations();
  std::vector<Case> cases = {{{1, 16, 112, 112}, 96, 2, "Swish", "Swish"},
                             {{1, 24, 56, 56}, 144, 1, "Clip", "Clip"},
                             {{2, 24, 15, 13}, 72, 2, "HardSwish", "Relu"},
                             {{1, 8, 9, 10}, 40, 1, "Relu", ""},
                             {{2, 40, 7, 7}, 240, 1, "", "HardSwish"},
                             {{1, 48, 14, 14}, 16, 2, "Swish", "Clip"},
                             {{1, 24, 56, 56}, 72, 2, "Relu", "Relu", 5},
                             {{2, 40, 13, 11}, 120, 1, "Swish", "Swish", 5},
                             {{1, 16, 12, 12}, 32, 2, "HardSwish", "", 7}};
  for (const Case &c : cases) {
    int64_t channels = c.x[1];
    Tensor x = random(c.x, -3.f, 3.f);
    x.data<float>()[0] = std::nanf("");
    Tensor pw = random({c.m, channels, 1, 1}), pwBias = random({c.m}),
           dw = random({c.m, 1, c.kernel, c.kernel}), dwBias = random({c.m});
    int64_t pad = c.kernel / 2;
    Tensor mid =
        refUnary(refConv(x, pw, &pwBias, {{1, 1}, {1, 1}, {0, 0, 0, 0}, 1}),
                 activations.at(c.activation));
    Tensor ref = refUnary(
        refConv(mid, dw, &dwBias,
                {{c.stride, c.stride}, {1, 1}, {pad, pad, pad, pad}, c.m}),
        activations.at(c.dwActivation));
    Attrs attrs = Attrs().i("dw_stride", c.stride);
    for (auto [name, activation] : {std::pair{"activation", c.activation},
                                    {"dw_activation", c.dwActivation}})
      if (!activation.empty()) {
        attrs.s(name, activation);
        if (activation == "Clip")
          attrs.f(std::string(name) + "_min", 0.f)
              .f(std::string(name) + "_max", 6.f);
      }
    SCOPED_TRACE(x.typeString() + " to " + llvm::Twine(c.m).str() +
                 " channels, " + llvm::Twine(c.kernel).str() + "x" +
                 llvm::Twine(c.kernel).str() + " stride " +
                 llvm::Twine(c.stride).str() + ", " + c.activation + " then " +
                 c.dwActivation);
    llvm::Expected<Tensor> y =
        runOnlyCandidate("Conv", cpu::registerConvKernel,
                         {&x, &pw, &pwBias, nullptr, &dw, &dwBias}, {0},
                         ref.shape(), attrs, "own pointwise-depthwise");
    ASSERT_TRUE(static_cast<bool>(y)) << llvm::toString(y.takeError());
    expectCloseWithNaNAtZero(*y, ref);
  }
}

// Our own kernel for a whole inverted-residual block (InvertedResidualKernel
// .cpp: 1x1, depthwise, 1x1 projection plus the residual), run alone, gives
// the three reference convolutions' output, with and without the residual
// and a projection activation, channel counts 16 does not divide, both
// strides and several steps per thread.
TEST_F(KernelTest, OwnInvertedResidualMatchesItsReference) {
  if (!cpu::depthwiseDirectRuns(3, 1))
    GTEST_SKIP() << "no AVX-512 here: the kernel is not offered";
  struct Case {
    Shape x;
    int64_t m, out, stride, kernel;
    bool residual;
    std::string activation, dwActivation, projActivation;
  };
  const auto &activations = fusedActivations();
  std::vector<Case> cases = {
      {{1, 16, 112, 112}, 96, 24, 2, 3, false, "Clip", "Clip", ""},
      {{1, 24, 56, 56}, 144, 24, 1, 3, true, "Relu", "Relu", ""},
      {{2, 40, 13, 11}, 120, 40, 1, 5, true, "Swish", "Swish", "Relu"},
      {{1, 24, 15, 15}, 72, 40, 2, 5, false, "HardSwish", "", "Clip"},
      {{1, 8, 9, 10}, 48, 8, 1, 7, true, "", "HardSwish", ""}};
  for (const Case &c : cases) {
    int64_t channels = c.x[1], pad = c.kernel / 2;
    Tensor x = random(c.x, -3.f, 3.f);
    x.data<float>()[0] = std::nanf("");
    Tensor pw = random({c.m, channels, 1, 1}), pwBias = random({c.m}),
           dw = random({c.m, 1, c.kernel, c.kernel}), dwBias = random({c.m}),
           proj = random({c.out, c.m, 1, 1}), projBias = random({c.out});
    ConvParams pointwise{{1, 1}, {1, 1}, {0, 0, 0, 0}, 1};
    Tensor mid = refUnary(refConv(x, pw, &pwBias, pointwise),
                          activations.at(c.activation));
    Tensor wide = refUnary(
        refConv(mid, dw, &dwBias,
                {{c.stride, c.stride}, {1, 1}, {pad, pad, pad, pad}, c.m}),
        activations.at(c.dwActivation));
    Tensor projected = refConv(wide, proj, &projBias, pointwise);
    Tensor addend = random(projected.shape());
    if (c.residual)
      for (int64_t i = 0; i < projected.numElements(); ++i)
        projected.data<float>()[i] += addend.data<float>()[i];
    Tensor ref = refUnary(projected, activations.at(c.projActivation));
    Attrs attrs = Attrs().i("dw_stride", c.stride);
    for (auto [name, activation] : {std::pair{"activation", c.activation},
                                    {"dw_activation", c.dwActivation},
                                    {"proj_activation", c.projActivation}})
      if (!activation.empty()) {
        attrs.s(name, activation);
        if (activation == "Clip")
          attrs.f(std::string(name) + "_min", 0.f)
              .f(std::string(name) + "_max", 6.f);
      }
    SCOPED_TRACE(x.typeString() + " to " + llvm::Twine(c.m).str() + " to " +
                 llvm::Twine(c.out).str() + ", " + llvm::Twine(c.kernel).str() +
                 "x" + llvm::Twine(c.kernel).str() + " stride " +
                 llvm::Twine(c.stride).str() +
                 (c.residual ? ", residual" : ""));
    llvm::Expected<Tensor> y =
        runOnlyCandidate("Conv", cpu::registerConvKernel,
                         {&x, &pw, &pwBias, nullptr, &dw, &dwBias, &proj,
                          &projBias, c.residual ? &addend : nullptr},
                         {0, 8}, ref.shape(), attrs, "own inverted residual");
    ASSERT_TRUE(static_cast<bool>(y)) << llvm::toString(y.takeError());
    // Sums of 144 products near 3 in size, then the residual: an output
    // near 0 keeps their rounding in absolute terms.
    expectCloseWithNaNAtZero(*y, ref, 1e-4f);
  }
}

// SqueezeExcite with the block's projection (fuseProjections), our own
// kernel run alone (the projection by weights scaled per item and input
// channel): the gate, the product and the projection's reference, with and
// without the residual, at batch 1 (items over all threads) and 3 (an item
// per thread), for channel counts 16 does not divide.
TEST_F(KernelTest, OwnGatedProjectionMatchesItsReference) {
  if (!cpu::pointwiseRuns())
    GTEST_SKIP() << "no AVX-512 here: the kernel is not offered";
  struct Case {
    Shape x;
    int64_t out;
    bool residual;
    std::string projActivation;
  };
  for (const Case &c : std::vector<Case>{{{1, 40, 14, 14}, 24, true, ""},
                                         {{3, 24, 9, 7}, 40, false, "Relu"},
                                         {{2, 96, 8, 8}, 16, true, "Relu"}}) {
    int64_t channels = c.x[1], reduced = 8;
    int64_t items = c.x[0], pixels = c.x[2] * c.x[3];
    SCOPED_TRACE(Tensor(DType::F32, c.x).typeString() + " to " +
                 llvm::Twine(c.out).str() + (c.residual ? ", residual" : ""));
    Tensor x = random(c.x, -2.f, 2.f), w1 = random({reduced, channels, 1, 1}),
           b1 = random({reduced}), w2 = random({channels, reduced, 1, 1}),
           b2 = random({channels}), wp = random({c.out, channels, 1, 1}),
           bp = random({c.out});
    Shape outShape{items, c.out, c.x[2], c.x[3]};
    Tensor residual = random(outShape);
    // The reference: means, Relu, Sigmoid gate, product, projection.
    Tensor gated = x.clone();
    for (int64_t n = 0; n < items; ++n) {
      std::vector<float> mean(channels), hidden(reduced);
      for (int64_t k = 0; k < channels; ++k)
        for (int64_t p = 0; p < pixels; ++p)
          mean[k] += x.data<float>()[(n * channels + k) * pixels + p] / pixels;
      for (int64_t r = 0; r < reduced; ++r) {
        float v = b1.data<float>()[r];
        for (int64_t k = 0; k < channels; ++k)
          v += w1.data<float>()[r * channels + k] * mean[k];
        hidden[r] = std::max(v, 0.f);
      }
      for (int64_t k = 0; k < channels; ++k) {
        float v = b2.data<float>()[k];
        for (int64_t r = 0; r < reduced; ++r)
          v += w2.data<float>()[k * reduced + r] * hidden[r];
        float g = 1.f / (1.f + std::exp(-v));
        for (int64_t p = 0; p < pixels; ++p)
          gated.data<float>()[(n * channels + k) * pixels + p] *= g;
      }
    }
    Tensor ref = refConv(gated, wp, &bp, {{1, 1}, {1, 1}, {0, 0, 0, 0}, 1});
    for (int64_t i = 0; i < ref.numElements(); ++i) {
      float &v = ref.data<float>()[i];
      v += c.residual ? residual.data<float>()[i] : 0.f;
      if (!c.projActivation.empty())
        v = std::max(v, 0.f);
    }
    Attrs attrs = Attrs().s("activation", "Relu").s("gate", "Sigmoid");
    if (!c.projActivation.empty())
      attrs.s("proj_activation", c.projActivation);
    llvm::Expected<Tensor> y = runOnlyCandidate(
        "SqueezeExcite", cpu::registerSqueezeExciteKernel,
        {&x, &w1, &b1, &w2, &b2, &wp, &bp, c.residual ? &residual : nullptr},
        {0, 7}, outShape, attrs, "own gated projection");
    ASSERT_TRUE(static_cast<bool>(y)) << llvm::toString(y.takeError());
    EXPECT_TRUE(allClose(llvm::cantFail(y->toPlain()), ref, 1e-4f, 1e-4f));
  }
}

// A filter that accepts no candidate is one error naming the shapes.
TEST_F(KernelTest, NoConvCandidatePassingTheFilterIsAnError) {
  Tensor x = random({1, 16, 6, 6}), w = random({16, 16, 3, 3});
  PlanBuilder b;
  b.output("y", b.op("Conv", {b.input("x", x.shape()), b.weight("w", w)},
                     {1, 16, 4, 4}));
  plan::Plan plan = b.build();
  auto ctx = std::make_shared<cpu::CPUContext>();
  ctx->acceptConvCandidate = [](llvm::StringRef) { return false; };
  KernelRegistry registry;
  cpu::registerConvKernel(registry, ctx);
  auto kernel = llvm::cantFail(
      (*registry.lookup("Conv"))(OpInfo(plan.ops(0), {nullptr, &w})));
  const Tensor *args[] = {&x, &w};
  Tensor y;
  llvm::Error e = kernel->run(args, llvm::MutableArrayRef<Tensor>(y));
  ASSERT_TRUE(static_cast<bool>(e));
  EXPECT_EQ(llvm::toString(std::move(e)),
            "no convolution candidate for f32[1, 16, 6, 6] by "
            "f32[16, 16, 3, 3] passes the filter");
}

// Our own Winograd is not offered below 5 million multiply-adds: a small
// 3x3 convolution that only it may run finds no candidate.
TEST_F(KernelTest, OwnWinogradIsNotOfferedForSmallConvolutions) {
  if (!cpu::winogradConvRuns(8, 8, {}))
    GTEST_SKIP() << "no AVX2 and FMA here: the kernel is not offered";
  Tensor x = random({1, 16, 12, 12}), w = random({32, 16, 3, 3}),
         bias = random({32});
  llvm::Expected<Tensor> y = runOnlyCandidate(
      "Conv", cpu::registerConvKernel, {&x, &w, &bias}, {0}, {1, 32, 12, 12},
      Attrs().ints("pads", {1, 1, 1, 1}), "own winograd nChw8c");
  ASSERT_FALSE(static_cast<bool>(y));
  EXPECT_EQ(llvm::toString(y.takeError()),
            "no convolution candidate for f32[1, 16, 12, 12] by "
            "f32[32, 16, 3, 3] passes the filter");
}

// Our own Winograd is offered in the input's channel blocks only when the
// input has some (a win by a hair in the other blocks left its output to
// be reordered for its neighbours); a plain input may take either.
TEST_F(KernelTest, OwnWinogradIsOfferedInTheInputsBlocks) {
  if (!cpu::winogradConvRuns(16, 16, {}, 16))
    GTEST_SKIP() << "no AVX2 and FMA here: the kernel is not offered";
  auto ctx = std::make_shared<cpu::CPUContext>();
  Tensor plain = random({1, 32, 28, 28}), w = random({32, 32, 3, 3}),
         bias = random({32});
  auto in = [&](cpu::Tag tag) {
    return cpu::reorderTo(plain,
                          cpu::memory::desc(cpu::toDims(plain.shape()),
                                            cpu::memory::data_type::f32, tag),
                          ctx);
  };
  Tensor blocks8 = in(cpu::Tag::nChw8c), blocks16 = in(cpu::Tag::nChw16c);
  Attrs pads = Attrs().ints("pads", {1, 1, 1, 1});
  for (auto [x, block, offered] : {std::tuple{&plain, 8, true},
                                   {&plain, 16, true},
                                   {&blocks8, 8, true},
                                   {&blocks8, 16, false},
                                   {&blocks16, 16, true},
                                   {&blocks16, 8, false}}) {
    std::string name = "own winograd nChw" + std::to_string(block) + "c";
    SCOPED_TRACE(x->typeString() + ", " + name);
    llvm::Expected<Tensor> y =
        runOnlyCandidate("Conv", cpu::registerConvKernel, {x, &w, &bias}, {0},
                         {1, 32, 28, 28}, pads, name);
    if (offered) {
      EXPECT_TRUE(static_cast<bool>(y)) << llvm::toString(y.takeError());
    } else {
      ASSERT_FALSE(static_cast<bool>(y));
      EXPECT_EQ(llvm::toString(y.takeError()),
                "no convolution candidate for " + x->typeString() +
                    " by f32[32, 32, 3, 3] passes the filter");
    }
  }
}

// A candidate for which oneDNN has only its reference kernel is never
// timed: an RGB image's Conv with 16-channel blocks out (its source left
// to oneDNN) is one without AVX-512. The filter sees every candidate that
// would be timed; where the blocked candidate has a real kernel, it is
// among them.
TEST_F(KernelTest, ConvNeverTimesAReferenceKernel) {
  Tensor x = random({1, 3, 16, 16}), w = random({16, 3, 3, 3});
  PlanBuilder b;
  b.output("y", b.op("Conv", {b.input("x", x.shape()), b.weight("w", w)},
                     {1, 16, 14, 14}));
  plan::Plan plan = b.build();
  auto ctx = std::make_shared<cpu::CPUContext>();
  std::set<std::string> seen;
  ctx->acceptConvCandidate = [&](llvm::StringRef name) {
    seen.insert(name.str());
    return true;
  };
  KernelRegistry registry;
  cpu::registerConvKernel(registry, ctx);
  auto kernel = llvm::cantFail(
      (*registry.lookup("Conv"))(OpInfo(plan.ops(0), {nullptr, &w})));
  const Tensor *args[] = {&x, &w};
  Tensor y;
  ASSERT_FALSE(bool(kernel->run(args, llvm::MutableArrayRef<Tensor>(y))));
  auto desc = [](const Shape &shape, cpu::Tag tag) {
    return cpu::memory::desc(cpu::toDims(shape), cpu::memory::data_type::f32,
                             tag);
  };
  dnnl::convolution_forward::primitive_desc blocked(
      dnnl::convolution_forward::desc(
          dnnl::prop_kind::forward_inference,
          dnnl::algorithm::convolution_direct, desc(x.shape(), cpu::Tag::any),
          desc(w.shape(), cpu::Tag::any), cpu::memory::desc(),
          desc({1, 16, 14, 14}, cpu::Tag::nChw16c), {1, 1}, {0, 0}, {0, 0},
          {0, 0}),
      ctx->engine);
  bool reference = llvm::StringRef(blocked.impl_info_str()).starts_with("ref");
  EXPECT_EQ(seen.count("direct nChw16c"), reference ? 0u : 1u)
      << "oneDNN's kernel for it: " << blocked.impl_info_str();
  EXPECT_EQ(seen.count("direct"), 1u);
}

// PrimitiveArgs keeps an argument's memory object while the same descriptor
// object comes back, pointed at each call's buffer, and makes a new one
// for another descriptor.
TEST_F(KernelTest, PrimitiveArgsKeepTheirMemoryObjects) {
  auto ctx = std::make_shared<cpu::CPUContext>();
  cpu::memory::desc md = cpu::plainDesc({4, 8}), other = cpu::plainDesc({32});
  std::vector<float> first(32), second(32);
  cpu::PrimitiveArgs args;
  args.set(DNNL_ARG_SRC, md, first.data(), ctx->engine);
  dnnl_memory_t made = args.get().at(DNNL_ARG_SRC).get();
  args.set(DNNL_ARG_SRC, md, second.data(), ctx->engine);
  EXPECT_EQ(args.get().at(DNNL_ARG_SRC).get(), made);
  EXPECT_EQ(args.get().at(DNNL_ARG_SRC).get_data_handle(), second.data());
  args.set(DNNL_ARG_SRC, other, first.data(), ctx->engine);
  EXPECT_NE(args.get().at(DNNL_ARG_SRC).get(), made);
  EXPECT_EQ(args.get().at(DNNL_ARG_SRC).get_desc(), other);
  EXPECT_EQ(args.get().at(DNNL_ARG_SRC).get_data_handle(), first.data());
  // A moved set starts afresh: its descriptors belonged to the old owner.
  cpu::PrimitiveArgs moved = std::move(args);
  EXPECT_TRUE(moved.get().empty());
}

// Kernels look their primitives up by shapeKey: the same shape in
// different layouts must give different keys, the same layout the same.
TEST_F(KernelTest, ShapeKeysTellLayoutsApart) {
  auto ctx = std::make_shared<cpu::CPUContext>();
  Tensor plain = random({1, 16, 4, 4});
  auto in = [&](cpu::Tag tag) {
    return cpu::reorderTo(plain,
                          cpu::memory::desc(cpu::toDims(plain.shape()),
                                            cpu::memory::data_type::f32, tag),
                          ctx);
  };
  Tensor blocked = in(cpu::Tag::nChw16c), last = in(cpu::Tag::nhwc),
         blocked2 = in(cpu::Tag::nChw16c);
  auto key = [](const Tensor &t) {
    const Tensor *inputs[] = {&t, nullptr};
    return cpu::shapeKey(inputs);
  };
  EXPECT_NE(key(plain), key(blocked));
  EXPECT_NE(key(plain), key(last));
  EXPECT_NE(key(blocked), key(last));
  EXPECT_EQ(key(blocked), key(blocked2));
  EXPECT_NE(key(plain), key(random({1, 16, 4, 5})));
}

// A summed Conv (a fused residual Add) accumulates into its addend's buffer
// when no other tensor shares it (Kernel::run), and into a copy otherwise,
// leaving the shared addend as it was.
TEST_F(KernelTest, SummedConvReusesAnAddendItOwnsAlone) {
  Tensor x = random({1, 16, 6, 6}), w = random({16, 16, 3, 3});
  Tensor conv = refConv(x, w, nullptr, {{1, 1}, {1, 1}, {1, 1, 1, 1}, 1});
  PlanBuilder b;
  int xi = b.input("x", x.shape()), si = b.input("s", {1, 16, 6, 6});
  b.output("y", b.op("Conv", {xi, b.weight("w", w), -1, si}, {1, 16, 6, 6},
                     Attrs().ints("pads", {1, 1, 1, 1})));
  plan::Plan plan = b.build();
  CPUBackend backend(BackendOptions{0, /*autotune=*/false});
  OpInfo info(plan.ops(0), {nullptr, &w, nullptr, nullptr});
  auto kernel = backend.createKernel(info);
  ASSERT_TRUE(static_cast<bool>(kernel)) << llvm::toString(kernel.takeError());
  auto run = [&](const Tensor &addend) {
    const Tensor *args[] = {&x, &w, nullptr, &addend};
    Tensor y;
    llvm::Error e = (*kernel)->run(args, llvm::MutableArrayRef<Tensor>(y));
    EXPECT_FALSE(static_cast<bool>(e)) << llvm::toString(std::move(e));
    return y;
  };
  // An addend in the output's layout, as a Conv's output would be.
  Tensor first = run(random({1, 16, 6, 6}));
  Tensor before = llvm::cantFail(first.toPlain());
  Tensor ref = refBinary(conv, before, [](float u, float v) { return u + v; });
  for (bool shared : {true, false}) {
    SCOPED_TRACE(shared ? "shared addend" : "addend owned alone");
    Tensor addend = first.clone(), kept;
    if (shared)
      kept = addend;
    const void *buffer = addend.rawData();
    Tensor y = run(addend);
    EXPECT_EQ(y.rawData() == buffer, !shared);
    EXPECT_TRUE(allClose(llvm::cantFail(y.toPlain()), ref, 1e-4f, 1e-5f));
    if (shared)
      EXPECT_TRUE(allClose(llvm::cantFail(kept.toPlain()), before, 0.f, 0.f));
  }
}

// Groups of 2, 4 and 8 channels may run merged into 16-channel groups,
// and groups of 2 and 4 into 8-channel ones (GroupWidening.h): the merged
// weights give the narrow convolution's output and hold the narrow
// weights as their diagonal blocks; other groupings stay. The autotuned
// kernel, which may pick the merged groups by timing, gives the same
// output.
TEST_F(KernelTest, NarrowGroupsMergeIntoWholeBlockGroups) {
  struct Case {
    Shape w;
    int64_t groups, block, merged;
  };
  for (const Case &c :
       {Case{{32, 4, 3, 3}, 8, 16, 4}, Case{{32, 8, 3, 3}, 4, 16, 2},
        Case{{16, 2, 1, 1}, 8, 16, 8}, Case{{24, 3, 3, 3}, 8, 16, 1},
        Case{{32, 1, 3, 3}, 32, 16, 1}, Case{{8, 4, 3, 3}, 2, 16, 1},
        Case{{32, 16, 3, 3}, 2, 16, 1}, Case{{32, 4, 3}, 8, 16, 1},
        Case{{32, 4, 3, 3}, 8, 8, 2}, Case{{16, 2, 1, 1}, 8, 8, 4},
        Case{{32, 8, 3, 3}, 4, 8, 1}, Case{{12, 4, 3, 3}, 3, 8, 1}}) {
    SCOPED_TRACE(Tensor(DType::F32, c.w).typeString() + " in " +
                 std::to_string(c.groups) + " groups, blocks of " +
                 std::to_string(c.block));
    EXPECT_EQ(cpu::groupWidening(c.groups, c.w, c.block), c.merged);
    if (c.merged == 1)
      continue;
    Tensor x = random({2, c.w[1] * c.groups, 7, 7}), w = random(c.w);
    int64_t pad = c.w[2] / 2;
    ConvParams narrow{{1, 1}, {1, 1}, {pad, pad, pad, pad}, c.groups};
    ConvParams merged = narrow;
    merged.group = c.groups / c.merged;
    Tensor wide = cpu::widenGroupWeights(w, c.groups, c.merged);
    Tensor want = refConv(x, w, nullptr, narrow);
    EXPECT_TRUE(allClose(refConv(x, wide, nullptr, merged), want));
    EXPECT_TRUE(
        allClose(cpu::narrowGroupWeights(wide, c.groups, c.merged), w, 0, 0));

    PlanBuilder b;
    int xi = b.input("x", x.shape());
    b.output(
        "y",
        b.op("Conv", {xi, b.weight("w", w)}, want.shape(),
             Attrs().i("group", c.groups).ints("pads", {pad, pad, pad, pad})));
    plan::Plan plan = b.build();
    CPUBackend backend(BackendOptions{0, /*autotune=*/true});
    auto kernel = backend.createKernel(OpInfo(plan.ops(0), {nullptr, &w}));
    ASSERT_TRUE(static_cast<bool>(kernel))
        << llvm::toString(kernel.takeError());
    const Tensor *args[] = {&x, &w};
    Tensor y;
    ASSERT_FALSE(static_cast<bool>(
        (*kernel)->run(args, llvm::MutableArrayRef<Tensor>(y))));
    EXPECT_TRUE(allClose(llvm::cantFail(y.toPlain()), want));

    // An infinity in the first group's input stays out of the other
    // groups' outputs, which the merged group's zeros would make NaN: with
    // non-finite inputs (propagateNaN) the narrow groups run.
    BackendOptions passNaN{0, /*autotune=*/true, /*propagateNaN=*/true};
    CPUBackend nanBackend(passNaN);
    auto nanKernel =
        nanBackend.createKernel(OpInfo(plan.ops(0), {nullptr, &w}));
    ASSERT_TRUE(static_cast<bool>(nanKernel))
        << llvm::toString(nanKernel.takeError());
    Tensor inf = x.clone();
    inf.data<float>()[0] = INFINITY;
    const Tensor *infArgs[] = {&inf, &w};
    ASSERT_FALSE(static_cast<bool>(
        (*nanKernel)->run(infArgs, llvm::MutableArrayRef<Tensor>(y))));
    Tensor plain = llvm::cantFail(y.toPlain());
    int64_t perGroup = c.w[0] / c.groups,
            spatial = plain.numElements() / plain.dim(0) / c.w[0];
    for (int64_t i = perGroup * spatial; i < c.w[0] * spatial; ++i)
      ASSERT_TRUE(std::isfinite(plain.data<float>()[i])) << "element " << i;
  }
}

TEST_F(KernelTest, ConvRejectsMismatchedChannels) {
  PlanBuilder b;
  int x = b.input("x", {1, 3, 4, 4});
  int w = b.weight("w", random({4, 2, 3, 3}));
  b.output("y", b.op("Conv", {x, w}, {1, 4, 2, 2}));
  auto exec = Executor::create(b.build());
  ASSERT_TRUE(static_cast<bool>(exec)) << llvm::toString(exec.takeError());
  auto out = (*exec)->run({random({1, 3, 4, 4})});
  ASSERT_FALSE(static_cast<bool>(out));
  EXPECT_EQ(llvm::toString(out.takeError()),
            "op 0 'Conv0' (Conv): input f32[1, 3, 4, 4] and weight "
            "f32[4, 2, 3, 3] do not match with group 1");
}

// The summed fourth input (a fused residual Add) must have the output's
// shape; the training kernel shares the check (GradCheckTest).
TEST_F(KernelTest, ConvRejectsAMismatchedSummedInput) {
  PlanBuilder b;
  int x = b.input("x", {1, 3, 4, 4});
  int addend = b.input("addend", {1, 4, 3, 3});
  int w = b.weight("w", random({4, 3, 3, 3}));
  b.output("y", b.op("Conv", {x, w, -1, addend}, {1, 4, 2, 2}));
  auto exec = Executor::create(b.build());
  ASSERT_TRUE(static_cast<bool>(exec)) << llvm::toString(exec.takeError());
  std::vector<Tensor> inputs = {random({1, 3, 4, 4}), random({1, 4, 3, 3})};
  auto out = (*exec)->run(inputs);
  ASSERT_FALSE(static_cast<bool>(out));
  EXPECT_EQ(llvm::toString(out.takeError()),
            "op 0 'Conv0' (Conv): summed input is f32[1, 4, 3, 3], expected "
            "shape [1, 4, 2, 2]");
}

//===----------------------------------------------------------------------===//
// Gemm and MatMul
//===----------------------------------------------------------------------===//

TEST_F(KernelTest, GemmTransposesAlphaBeta) {
  for (int transA = 0; transA < 2; ++transA)
    for (int transB = 0; transB < 2; ++transB) {
      Tensor a = transA ? random({7, 5}) : random({5, 7});
      Tensor b = transB ? random({3, 7}) : random({7, 3});
      Tensor c = random({3});
      Tensor y = runOp("Gemm", {in(a), wt(b), wt(c)}, {5, 3},
                       Attrs()
                           .i("trans_a", transA)
                           .i("trans_b", transB)
                           .f("alpha", 0.5f)
                           .f("beta", 2.f));
      EXPECT_TRUE(allClose(y, refGemm(a, b, &c, 0.5f, 2.f, transA, transB)))
          << "trans_a " << transA << " trans_b " << transB;
    }
}

TEST_F(KernelTest, GemmBiasShapes) {
  Tensor a = random({4, 6}), b = random({6, 5});
  // B as an input and as a weight: a constant B of a few rows may run as
  // dnnl_sgemm, which broadcasts C itself.
  for (Shape cShape :
       {Shape{5}, Shape{1, 5}, Shape{4, 1}, Shape{4, 5}, Shape{1}})
    for (bool constantB : {false, true}) {
      Tensor c = random(cShape);
      Tensor y = runOp("Gemm", {in(a), constantB ? wt(b) : in(b), in(c)},
                       {4, 5}, Attrs().f("beta", 0.5f));
      EXPECT_TRUE(allClose(y, refGemm(a, b, &c, 1.f, 0.5f, false, false)))
          << "C " << shapeToString(cShape) << ", constant B " << constantB;
    }
  Tensor y = runOp("Gemm", {in(a), wt(b)}, {4, 5});
  EXPECT_TRUE(allClose(y, refGemm(a, b, nullptr, 1.f, 1.f, false, false)));
}

TEST_F(KernelTest, MatMulNumpySemantics) {
  struct Case {
    Shape a, b, out;
  };
  for (const Case &c :
       {Case{{4, 6}, {6, 3}, {4, 3}}, Case{{2, 4, 6}, {6, 3}, {2, 4, 3}},
        Case{{2, 1, 4, 6}, {3, 6, 5}, {2, 3, 4, 5}}, Case{{6}, {6, 3}, {3}},
        Case{{2, 4, 6}, {6}, {2, 4}}}) {
    Tensor a = random(c.a), b = random(c.b);
    EXPECT_TRUE(
        allClose(runOp("MatMul", {in(a), in(b)}, c.out), refMatMul(a, b)))
        << shapeToString(c.a) << " x " << shapeToString(c.b);
  }
  Tensor a = random({3, 8}), b = random({8, 4});
  EXPECT_TRUE(
      allClose(runOp("MatMul", {in(a), wt(b)}, {3, 4}), refMatMul(a, b)));
}

// Constant B with rows a multiple of 1 KiB, which the matmul stores padded
// where oneDNN keeps B plain (hosts without AVX-512): MatMul's [K, N] and
// Gemm's transposed [N, K], bias and activation included.
TEST_F(KernelTest, ConstantBWithRowsOfWholeKiBs) {
  Tensor a = random({5, 256}), b = random({256, 512}), bias = random({512});
  Tensor product = refMatMul(a, b);
  Tensor y = runOp("MatMul", {in(a), wt(b), wt(bias)}, {5, 512},
                   Attrs().s("activation", "Relu"));
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 512; ++j)
      product.data<float>()[i * 512 + j] = std::max(
          product.data<float>()[i * 512 + j] + bias.data<float>()[j], 0.f);
  EXPECT_TRUE(allClose(y, product));
  Tensor bt = random({300, 256}), c = random({300});
  // Nine rows: above the few that may run as dnnl_sgemm on the plain B.
  Tensor a9 = random({9, 256});
  EXPECT_TRUE(allClose(
      runOp("Gemm", {in(a9), wt(bt), wt(c)}, {9, 300}, Attrs().i("trans_b", 1)),
      refGemm(a9, bt, &c, 1.f, 1.f, false, true)));
}

// The rule for padding weight rows: plain 2-D layouts, either order, whose
// leading stride is a multiple of 256 floats get 16 more; others stay.
TEST_F(KernelTest, PaddedRowsOnlyForRowsOfWholeKiBs) {
  using cpu::memory;
  auto strided = [](memory::dims dims, memory::dims strides) {
    return memory::desc(dims, memory::data_type::f32, strides);
  };
  auto stridesOf = [](const memory::desc &md) {
    const auto &s = md.data.format_desc.blocking.strides;
    return std::vector<int64_t>{s[0], s[1]};
  };
  std::optional<memory::desc> rows =
      cpu::paddedRows(cpu::plainDesc({768, 3072}));
  ASSERT_TRUE(rows.has_value());
  EXPECT_EQ(stridesOf(*rows), (std::vector<int64_t>{3088, 1}));
  std::optional<memory::desc> columns =
      cpu::paddedRows(strided({1024, 1000}, {1, 1024}));
  ASSERT_TRUE(columns.has_value());
  EXPECT_EQ(stridesOf(*columns), (std::vector<int64_t>{1, 1040}));
  EXPECT_FALSE(cpu::paddedRows(cpu::plainDesc({768, 1000})));
  EXPECT_FALSE(cpu::paddedRows(strided({4, 256}, {512, 2})));
  EXPECT_FALSE(cpu::paddedRows(cpu::plainDesc({2, 256, 256})));
  EXPECT_FALSE(cpu::paddedRows(
      memory::desc({256, 256}, memory::data_type::f32, cpu::Tag::AB16b16a)));
}

// An empty batch (or inner dimension) must not reach oneDNN's matmul, which
// divides by zero on it.
TEST_F(KernelTest, GemmAndMatMulOfEmptyOperands) {
  Tensor c = random({6});
  for (bool constantB : {false, true}) {
    Tensor b = random({4, 6});
    Tensor y = runOp(
        "Gemm",
        {in(Tensor(DType::F32, {0, 4})), constantB ? wt(b) : in(b), in(c)},
        {0, 6});
    EXPECT_EQ(y.shape(), (Shape{0, 6}));
    // An inner dimension of 0: alpha A B is 0, so y is beta C broadcast.
    Tensor b0(DType::F32, {0, 6});
    y = runOp(
        "Gemm",
        {in(Tensor(DType::F32, {3, 0})), constantB ? wt(b0) : in(b0), in(c)},
        {3, 6}, Attrs().f("beta", 2.f));
    std::vector<float> twiceC;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 6; ++j)
        twiceC.push_back(2.f * c.data<float>()[j]);
    EXPECT_TRUE(allClose(y, Tensor::fromFloats({3, 6}, twiceC)));
  }
  Tensor y =
      runOp("MatMul", {in(Tensor(DType::F32, {2, 0, 4})), in(random({4, 6}))},
            {2, 0, 6});
  EXPECT_EQ(y.shape(), (Shape{2, 0, 6}));
  y = runOp("MatMul",
            {in(Tensor(DType::F32, {2, 3, 0})), in(Tensor(DType::F32, {0, 6}))},
            {2, 3, 6});
  EXPECT_TRUE(
      allClose(y, Tensor::fromFloats({2, 3, 6}, std::vector<float>(36, 0.f))));
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

TEST_F(KernelTest, UnaryActivations) {
  struct Case {
    const char *type;
    Attrs attrs;
    std::function<float(float)> fn;
    float lo = -2.f;
  };
  std::vector<Case> cases = {
      {"Relu", Attrs(), [](float x) { return std::max(x, 0.f); }},
      {"LeakyRelu", Attrs().f("alpha", 0.1f),
       [](float x) { return x < 0 ? 0.1f * x : x; }},
      {"Elu", Attrs().f("alpha", 0.5f),
       [](float x) { return x < 0 ? 0.5f * (std::exp(x) - 1) : x; }},
      {"Selu", Attrs().f("alpha", 1.5f).f("gamma", 1.1f),
       [](float x) { return 1.1f * (x < 0 ? 1.5f * (std::exp(x) - 1) : x); }},
      {"Sigmoid", Attrs(), [](float x) { return 1 / (1 + std::exp(-x)); }},
      {"HardSigmoid", Attrs().f("alpha", 0.3f).f("beta", 0.4f),
       [](float x) { return std::clamp(0.3f * x + 0.4f, 0.f, 1.f); }},
      {"Tanh", Attrs(), [](float x) { return std::tanh(x); }},
      {"Softplus", Attrs(), [](float x) { return std::log1p(std::exp(x)); }},
      {"Softsign", Attrs(), [](float x) { return x / (1 + std::fabs(x)); }},
      {"Clip", Attrs().f("min", -0.5f).f("max", 0.7f),
       [](float x) { return std::clamp(x, -0.5f, 0.7f); }},
      {"Clip", Attrs().f("max", 0.7f),
       [](float x) { return std::min(x, 0.7f); }},
      {"Abs", Attrs(), [](float x) { return std::fabs(x); }},
      {"Neg", Attrs(), [](float x) { return -x; }},
      {"Exp", Attrs(), [](float x) { return std::exp(x); }},
      {"Erf", Attrs(), [](float x) { return std::erf(x); }},
      {"Floor", Attrs(), [](float x) { return std::floor(x); }},
      {"Ceil", Attrs(), [](float x) { return std::ceil(x); }},
      {"Log", Attrs(), [](float x) { return std::log(x); }, 0.1f},
      {"Sqrt", Attrs(), [](float x) { return std::sqrt(x); }, 0.1f},
      {"Reciprocal", Attrs(), [](float x) { return 1 / x; }, 0.1f},
  };
  for (const Case &c : cases) {
    Tensor x = random({2, 3, 4, 5}, c.lo, 2.f);
    EXPECT_TRUE(
        allClose(runOp(c.type, {in(x)}, x.shape(), c.attrs), refUnary(x, c.fn)))
        << c.type;
  }
}

TEST_F(KernelTest, BinaryOpsWithBroadcasting) {
  using Fn = std::function<float(float, float)>;
  struct Op {
    const char *type;
    Fn fn;
  };
  std::vector<Op> ops = {
      {"Add", [](float a, float b) { return a + b; }},
      {"Sub", [](float a, float b) { return a - b; }},
      {"Mul", [](float a, float b) { return a * b; }},
      {"Div", [](float a, float b) { return a / b; }},
      {"Max", [](float a, float b) { return std::max(a, b); }},
      {"Min", [](float a, float b) { return std::min(a, b); }},
      {"Pow", [](float a, float b) { return std::pow(a, b); }},
      {"PRelu", [](float a, float b) { return a < 0 ? a * b : a; }},
  };
  struct Shapes {
    Shape a, b;
  };
  // Same shape; rhs broadcast per channel; lhs broadcast; both broadcast;
  // a value per row (LayerNorm's mean), small and large enough to run in
  // parallel; a broadcast in the middle; a scalar.
  std::vector<Shapes> shapes = {{{2, 3, 4, 5}, {2, 3, 4, 5}},
                                {{2, 3, 4, 5}, {3, 1, 1}},
                                {{5}, {2, 3, 4, 5}},
                                {{3, 1}, {1, 4}},
                                {{2, 5, 6, 7}, {2, 5, 6, 1}},
                                {{4, 16, 32, 33}, {4, 16, 32, 1}},
                                {{2, 3, 4, 5}, {2, 1, 4, 5}},
                                {{1, 1}, {3, 4, 1}},
                                {{3, 4}, {}}};
  for (const Op &op : ops)
    for (const Shapes &s : shapes) {
      // Positive bases keep Pow real; divisors stay away from 0.
      Tensor a = random(s.a, 0.5f, 2.f), b = random(s.b, 0.5f, 2.f);
      Tensor ref = refBinary(a, b, op.fn);
      EXPECT_TRUE(allClose(runOp(op.type, {in(a), in(b)}, ref.shape()), ref))
          << op.type << " " << shapeToString(s.a) << ", " << shapeToString(s.b);
    }
}

// A trained plan's Add with the Relu after it fused (evaluated by the
// inference executor): same shapes, and a value per channel.
TEST_F(KernelTest, AddWithAFusedRelu) {
  auto relu = [](float a, float b) { return std::max(0.f, a + b); };
  for (auto [sa, sb] : {std::pair{Shape{2, 24, 7, 7}, Shape{2, 24, 7, 7}},
                        std::pair{Shape{2, 24, 7, 7}, Shape{24, 1, 1}}}) {
    Tensor a = random(sa), b = random(sb);
    Tensor ref = refBinary(a, b, relu);
    EXPECT_TRUE(allClose(runOp("Add", {in(a), in(b)}, ref.shape(),
                               Attrs().s("activation", "Relu")),
                         ref))
        << shapeToString(sa) << ", " << shapeToString(sb);
  }
}

// ... but not on shape arithmetic, which has no Relu: a clear error.
TEST_F(KernelTest, AddOfIntegersRefusesAFusedRelu) {
  PlanBuilder b;
  int x = b.input("x", {2}, DType::I64);
  b.output("y", b.op("Add", {x, x}, {2}, Attrs().s("activation", "Relu"),
                     DType::I64));
  auto exec = Executor::create(b.build());
  ASSERT_TRUE(bool(exec)) << llvm::toString(exec.takeError());
  Tensor in(DType::I64, {2});
  in.data<int64_t>()[0] = in.data<int64_t>()[1] = -1;
  auto out = (*exec)->run({in});
  ASSERT_FALSE(bool(out));
  EXPECT_NE(llvm::toString(out.takeError())
                .find("Add with a fused Relu takes f32, not i64"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Pooling and normalisation
//===----------------------------------------------------------------------===//

TEST_F(KernelTest, MaxPool) {
  Tensor x = random({2, 8, 9, 9});
  PoolParams p{{3, 3}, {2, 2}, {1, 1, 1, 1}, true, false, false};
  EXPECT_TRUE(allClose(runOp("MaxPool", {in(x)}, {2, 8, 5, 5},
                             Attrs()
                                 .ints("kernel_shape", {3, 3})
                                 .ints("strides", {2, 2})
                                 .ints("pads", {1, 1, 1, 1})),
                       refPool2d(x, p)));
}

// A plain input of 8 or more channels is pooled in channel blocks (oneDNN
// has only a scalar kernel for plain NCHW): the output comes out blocked,
// with the values of the reference.
TEST_F(KernelTest, MaxPoolOfAPlainInputRunsInChannelBlocks) {
  CPUBackend backend;
  plan::Op op;
  op.set_type("MaxPool");
  op.add_inputs(0);
  op.add_outputs(1);
  for (auto [name, value] : {std::pair{"kernel_shape", 3}, {"strides", 2}}) {
    plan::Attribute *a = op.add_attributes();
    a->set_name(name);
    a->mutable_ints()->add_values(value);
    a->mutable_ints()->add_values(value);
  }
  auto kernel = llvm::cantFail(backend.createKernel(OpInfo(op, {nullptr})));
  for (int64_t c : {4, 8, 24}) {
    Tensor x = random({1, c, 11, 11});
    std::vector<Tensor> out(1);
    const Tensor *args[] = {&x};
    ASSERT_FALSE(bool(kernel->run(args, out)));
    EXPECT_EQ(out[0].isPlain(), c < 8) << c << " channels";
    PoolParams p{{3, 3}, {2, 2}, {0, 0, 0, 0}, true, false, false};
    EXPECT_TRUE(allClose(llvm::cantFail(out[0].toPlain()), refPool2d(x, p)))
        << c << " channels";
  }
}

TEST_F(KernelTest, MaxPoolCeilMode) {
  Tensor x = random({1, 4, 8, 8});
  PoolParams p{{3, 3}, {2, 2}, {0, 0, 0, 0}, true, false, true};
  Tensor ref = refPool2d(x, p);
  ASSERT_EQ(ref.shape(), (Shape{1, 4, 4, 4}));
  EXPECT_TRUE(allClose(runOp("MaxPool", {in(x)}, ref.shape(),
                             Attrs()
                                 .ints("kernel_shape", {3, 3})
                                 .ints("strides", {2, 2})
                                 .i("ceil_mode", 1)),
                       ref));
}

TEST_F(KernelTest, AveragePoolPadding) {
  Tensor x = random({1, 8, 7, 7});
  for (int include = 0; include < 2; ++include) {
    PoolParams p{{3, 3}, {2, 2}, {1, 1, 1, 1}, false, include != 0, false};
    EXPECT_TRUE(allClose(runOp("AveragePool", {in(x)}, {1, 8, 4, 4},
                               Attrs()
                                   .ints("kernel_shape", {3, 3})
                                   .ints("strides", {2, 2})
                                   .ints("pads", {1, 1, 1, 1})
                                   .i("count_include_pad", include)),
                         refPool2d(x, p)))
        << "count_include_pad " << include;
  }
}

TEST_F(KernelTest, GlobalPools) {
  Tensor x = random({2, 5, 6, 7});
  PoolParams avg{{6, 7}, {1, 1}, {0, 0, 0, 0}, false, false, false};
  PoolParams max{{6, 7}, {1, 1}, {0, 0, 0, 0}, true, false, false};
  EXPECT_TRUE(allClose(runOp("GlobalAveragePool", {in(x)}, {2, 5, 1, 1}),
                       refPool2d(x, avg)));
  EXPECT_TRUE(allClose(runOp("GlobalMaxPool", {in(x)}, {2, 5, 1, 1}),
                       refPool2d(x, max)));
}

TEST_F(KernelTest, BatchNormalization) {
  for (Shape shape : {Shape{2, 6, 5, 4}, Shape{3, 6}}) {
    Tensor x = random(shape), scale = random({6}), bias = random({6}),
           mean = random({6}), var = random({6}, 0.1f, 2.f);
    EXPECT_TRUE(allClose(runOp("BatchNormalization",
                               {in(x), wt(scale), wt(bias), wt(mean), wt(var)},
                               shape, Attrs().f("epsilon", 1e-3f)),
                         refBatchNorm(x, scale, bias, mean, var, 1e-3f)))
        << shapeToString(shape);
  }
}

TEST_F(KernelTest, LRN) {
  Tensor x = random({2, 7, 4, 4});
  for (int64_t size : {3, 5}) {
    EXPECT_TRUE(allClose(runOp("LRN", {in(x)}, x.shape(),
                               Attrs()
                                   .i("size", size)
                                   .f("alpha", 1e-2f)
                                   .f("beta", 0.75f)
                                   .f("bias", 2.f)),
                         refLRN(x, size, 1e-2f, 0.75f, 2.f)))
        << "size " << size;
  }
}

TEST_F(KernelTest, SoftmaxAndLogSoftmax) {
  Tensor x = random({2, 3, 4, 5}, -3.f, 3.f);
  EXPECT_TRUE(
      allClose(runOp("Softmax", {in(x)}, x.shape()), refSoftmax(x, -1, false)));
  EXPECT_TRUE(
      allClose(runOp("Softmax", {in(x)}, x.shape(), Attrs().i("axis", 1)),
               refSoftmax(x, 1, false)));
  EXPECT_TRUE(
      allClose(runOp("LogSoftmax", {in(x)}, x.shape(), Attrs().i("axis", 2)),
               refSoftmax(x, 2, true)));
  // coerce_2d: normalised over the flattened dimensions from the axis on.
  Tensor flat = x.clone().reshaped({2, 60});
  Tensor ref = refSoftmax(flat, 1, false).reshaped(x.shape());
  EXPECT_TRUE(allClose(runOp("Softmax", {in(x)}, x.shape(),
                             Attrs().i("axis", 1).i("coerce_2d", 1)),
                       ref));
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

TEST_F(KernelTest, Concat) {
  Tensor a = random({2, 3, 4, 5}), b = random({2, 5, 4, 5}),
         c = random({2, 1, 4, 5});
  EXPECT_TRUE(allClose(runOp("Concat", {in(a), in(b), in(c)}, {2, 9, 4, 5},
                             Attrs().i("axis", 1)),
                       refConcat({a, b, c}, 1)));
  Tensor d = random({1, 3, 4, 5});
  EXPECT_TRUE(allClose(
      runOp("Concat", {in(a), in(d)}, {3, 3, 4, 5}, Attrs().i("axis", -4)),
      refConcat({a, d}, 0)));
}

// Convolutions may leave their outputs in blocked layouts (chosen by
// timing); the concat of such outputs copies whole blocks, and one beside
// a plain input reorders first. Whatever the layouts, the values match.
TEST_F(KernelTest, ConcatOfConvolutionOutputs) {
  Tensor x = random({2, 16, 10, 10}), w1 = random({16, 16, 1, 1}),
         w3 = random({32, 16, 3, 3}), z = random({2, 8, 10, 10}),
         z16 = random({2, 16, 10, 10});
  PlanBuilder b;
  int xi = b.input("x", x.shape()), zi = b.input("z", z.shape()),
      z16i = b.input("z16", z16.shape());
  int y1 = b.op("Conv", {xi, b.weight("w1", w1)}, {2, 16, 10, 10});
  int y3 = b.op("Conv", {xi, b.weight("w3", w3)}, {2, 32, 10, 10},
                Attrs().ints("pads", {1, 1, 1, 1}));
  b.output("blocks",
           b.op("Concat", {y1, y3}, {2, 48, 10, 10}, Attrs().i("axis", 1)));
  b.output("mixed",
           b.op("Concat", {y3, zi, y1}, {2, 56, 10, 10}, Attrs().i("axis", 1)));
  // A plain input of whole channel blocks is reordered, then copied.
  b.output("reordered", b.op("Concat", {y3, z16i, y1}, {2, 64, 10, 10},
                             Attrs().i("axis", 1)));
  auto exec = Executor::create(b.build());
  ASSERT_TRUE(static_cast<bool>(exec)) << llvm::toString(exec.takeError());
  auto outputs = (*exec)->run(std::vector<Tensor>{x, z, z16});
  ASSERT_TRUE(static_cast<bool>(outputs))
      << llvm::toString(outputs.takeError());
  ConvParams p1{{1, 1}, {1, 1}, {0, 0, 0, 0}, 1};
  ConvParams p3{{1, 1}, {1, 1}, {1, 1, 1, 1}, 1};
  Tensor r1 = refConv(x, w1, nullptr, p1), r3 = refConv(x, w3, nullptr, p3);
  EXPECT_TRUE(allClose((*outputs)[0], refConcat({r1, r3}, 1)));
  EXPECT_TRUE(allClose((*outputs)[1], refConcat({r3, z, r1}, 1)));
  EXPECT_TRUE(allClose((*outputs)[2], refConcat({r3, z16, r1}, 1)));
}

TEST_F(KernelTest, ViewsKeepValues) {
  Tensor x = random({2, 3, 4, 5});
  EXPECT_TRUE(allClose(runOp("Flatten", {in(x)}, {6, 20}, Attrs().i("axis", 2)),
                       x.reshaped({6, 20})));
  EXPECT_TRUE(allClose(
      runOp("Reshape", {in(x)}, {2, 12, 5}, Attrs().ints("shape", {0, -1, 5})),
      x.reshaped({2, 12, 5})));
  EXPECT_TRUE(allClose(
      runOp("Unsqueeze", {in(x)}, {2, 1, 3, 4, 5}, Attrs().ints("axes", {1})),
      x.reshaped({2, 1, 3, 4, 5})));
  Tensor s = random({2, 1, 3, 1});
  EXPECT_TRUE(
      allClose(runOp("Squeeze", {in(s)}, {2, 3, 1}, Attrs().ints("axes", {1})),
               s.reshaped({2, 3, 1})));
  EXPECT_TRUE(allClose(runOp("Identity", {in(x)}, x.shape()), x));
  EXPECT_TRUE(allClose(
      runOp("Dropout", {in(x)}, x.shape(), Attrs().f("ratio", 0.5f)), x));
  EXPECT_TRUE(allClose(runOp("Transpose", {in(x)}, {4, 2, 5, 3},
                             Attrs().ints("perm", {2, 0, 3, 1})),
                       refTranspose(x, {2, 0, 3, 1})));
}

TEST_F(KernelTest, GatherRowsAndColumns) {
  // Embedding rows (axis 0), a negative index counting from the end.
  Tensor table = random({5, 3});
  Tensor rows =
      runOp("Gather", {in(table), wt(Tensor::fromInts({2, 2}, {4, 0, -1, 2}))},
            {2, 2, 3}, Attrs().i("axis", 0));
  for (auto [k, id] : llvm::enumerate(std::vector<int64_t>{4, 0, 4, 2}))
    for (int j = 0; j < 3; ++j)
      EXPECT_EQ(rows.data<float>()[k * 3 + j], table.data<float>()[id * 3 + j]);
  // One column of an i64 matrix (a scalar index drops the axis).
  Tensor ids = Tensor::fromInts({3, 2}, {10, 11, 20, 21, 30, 31});
  Tensor column = runOp("Gather", {wt(ids), wt(Tensor::fromInts({}, {1}))}, {3},
                        Attrs().i("axis", 1), DType::I64);
  ASSERT_EQ(column.dtype(), DType::I64);
  EXPECT_EQ(
      std::vector<int64_t>(column.data<int64_t>(), column.data<int64_t>() + 3),
      (std::vector<int64_t>{11, 21, 31}));
}

// One index on the outermost axis (q, k or v out of a [3, ...] tensor) is
// a view into the data, not a copy; other gathers copy.
TEST_F(KernelTest, GatherOfOneOuterSliceIsAView) {
  Tensor qkv = random({3, 2, 4});
  PlanBuilder b;
  int x = b.input("x", qkv.shape()), i = b.input("i", {});
  b.output("y", b.op("Gather", {x, i}, {2, 4}, Attrs().i("axis", 0)));
  plan::Plan plan = b.build();
  CPUBackend backend(BackendOptions{0, /*autotune=*/false});
  auto kernel = llvm::cantFail(
      backend.createKernel(OpInfo(plan.ops(0), {nullptr, nullptr})));
  for (int64_t id : {1, -1}) {
    Tensor index = Tensor::fromInts({}, {id}), y;
    const Tensor *args[] = {&qkv, &index};
    ASSERT_FALSE(bool(kernel->run(args, llvm::MutableArrayRef<Tensor>(y))));
    int64_t row = id < 0 ? id + 3 : id;
    EXPECT_EQ(y.shape(), (Shape{2, 4}));
    EXPECT_EQ(y.data<float>(), qkv.data<float>() + row * 8);
  }
  // Two indices copy.
  Tensor two = Tensor::fromInts({2}, {2, 0}), y;
  const Tensor *args[] = {&qkv, &two};
  ASSERT_FALSE(bool(kernel->run(args, llvm::MutableArrayRef<Tensor>(y))));
  EXPECT_EQ(y.shape(), (Shape{2, 2, 4}));
  EXPECT_NE(y.data<float>(), qkv.data<float>() + 16);
  EXPECT_EQ(y.data<float>()[0], qkv.data<float>()[16]);
  EXPECT_EQ(y.data<float>()[8], qkv.data<float>()[0]);
}

TEST_F(KernelTest, GatherIndexOutOfRangeIsAnError) {
  PlanBuilder b;
  int x = b.input("x", {4, 2});
  int i = b.weight("i", Tensor::fromInts({1}, {4}));
  b.output("y", b.op("Gather", {x, i}, {1, 2}, Attrs().i("axis", 0)));
  auto exec = Executor::create(b.build());
  ASSERT_TRUE(bool(exec)) << llvm::toString(exec.takeError());
  auto out = (*exec)->run({random({4, 2})});
  ASSERT_FALSE(bool(out));
  EXPECT_NE(llvm::toString(out.takeError())
                .find("Gather index 4 is outside [-4, 4) of axis 0 of "
                      "f32[4, 2]"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Reductions, ConvTranspose, LayerNormalization, Split, Slice
//===----------------------------------------------------------------------===//

TEST_F(KernelTest, Reductions) {
  Tensor x = Tensor::fromFloats({2, 3}, {1, 5, 3, -2, 0, 8});
  EXPECT_TRUE(allClose(runOp("ReduceMean", {in(x)}, {2},
                             Attrs().ints("axes", {1}).i("keepdims", 0)),
                       Tensor::fromFloats({2}, {3, 2})));
  EXPECT_TRUE(allClose(runOp("ReduceSum", {in(x)}, {1, 3},
                             Attrs().ints("axes", {-2}).i("keepdims", 1)),
                       Tensor::fromFloats({1, 3}, {-1, 5, 11})));
  EXPECT_TRUE(allClose(runOp("ReduceMax", {in(x)}, {1, 1},
                             Attrs().ints("axes", {}).i("keepdims", 1)),
                       Tensor::fromFloats({1, 1}, {8})));
  EXPECT_TRUE(allClose(runOp("ReduceMin", {in(x)}, {},
                             Attrs().ints("axes", {}).i("keepdims", 0)),
                       Tensor::fromFloats({}, {-2})));
}

// ArgMax and ArgMin: the first of equal values, or the last with
// select_last_index; a NaN is the extreme either way.
TEST_F(KernelTest, ArgMaxAndArgMinTiesAndNaN) {
  Tensor x = Tensor::fromFloats({2, 4}, {1, 7, 7, -2, 3, NAN, 9, NAN});
  auto arg = [&](const char *type, int64_t last) {
    Tensor y = runOp(
        type, {in(x)}, {2},
        Attrs().i("axis", 1).i("keepdims", 0).i("select_last_index", last),
        DType::I64);
    return std::vector<int64_t>(y.data<int64_t>(), y.data<int64_t>() + 2);
  };
  EXPECT_EQ(arg("ArgMax", 0), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg("ArgMax", 1), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(arg("ArgMin", 0), (std::vector<int64_t>{3, 1}));
  Tensor columns = runOp("ArgMin", {in(x)}, {1, 4},
                         Attrs().i("axis", 0).i("keepdims", 1), DType::I64);
  EXPECT_EQ(std::vector<int64_t>(columns.data<int64_t>(),
                                 columns.data<int64_t>() + 4),
            (std::vector<int64_t>{0, 1, 0, 1}));
}

// Reducing only axes of size 1 reduces nothing (oneDNN refuses such a
// reduction): S3D ends with a mean over its [N, 400, 1, 1, 1] logits.
TEST_F(KernelTest, ReductionsOverAxesOfSizeOne) {
  Tensor x = Tensor::fromFloats({2, 3, 1, 1}, {1, 5, 3, -2, 0, 8});
  for (const char *type : {"ReduceMean", "ReduceSum", "ReduceMax"}) {
    EXPECT_TRUE(allClose(runOp(type, {in(x)}, {2, 3},
                               Attrs().ints("axes", {2, 3}).i("keepdims", 0)),
                         Tensor::fromFloats({2, 3}, {1, 5, 3, -2, 0, 8})))
        << type;
    EXPECT_EQ(runOp(type, {in(x)}, {2, 3, 1, 1},
                    Attrs().ints("axes", {-1}).i("keepdims", 1))
                  .shape(),
              (Shape{2, 3, 1, 1}))
        << type;
  }
}

// Reducing an empty set gives the reduction's identity (NaN for the mean,
// 0 / 0); an empty batch reduced along other axes stays empty.
TEST_F(KernelTest, ReductionsOfEmptyTensors) {
  Tensor empty(DType::F32, {0, 3});
  Attrs overBatch = Attrs().ints("axes", {0}).i("keepdims", 1);
  const std::pair<const char *, float> identities[] = {
      {"ReduceSum", 0.f}, {"ReduceMax", -INFINITY}, {"ReduceMin", INFINITY}};
  for (auto [type, identity] : identities) {
    Tensor y = runOp(type, {in(empty)}, {1, 3}, overBatch);
    ASSERT_EQ(y.shape(), (Shape{1, 3})) << type;
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(y.data<float>()[i], identity) << type;
  }
  Tensor mean = runOp("ReduceMean", {in(empty)}, {1, 3}, overBatch);
  ASSERT_EQ(mean.shape(), (Shape{1, 3}));
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(std::isnan(mean.data<float>()[i]));
  Tensor y = runOp("ReduceMean", {in(empty)}, {0, 1},
                   Attrs().ints("axes", {1}).i("keepdims", 1));
  EXPECT_EQ(y.shape(), (Shape{0, 1}));
}

TEST_F(KernelTest, ConvTransposeStridedWithOutputPadding) {
  // Each input value spreads over a 2x2 block of a 5x5 output (stride 2,
  // one row and column of output padding, which hold the bias only).
  Tensor x = Tensor::fromFloats({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w = Tensor::fromFloats({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor b = Tensor::fromFloats({1}, {0.5f});
  Tensor y = runOp("ConvTranspose", {in(x), wt(w), wt(b)}, {1, 1, 5, 5},
                   Attrs()
                       .ints("strides", {2, 2})
                       .ints("output_padding", {1, 1})
                       .ints("pads", {0, 0, 0, 0}));
  std::vector<float> expected(25, 0.5f);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      expected[i * 5 + j] += x.data<float>()[(i / 2) * 2 + j / 2];
  EXPECT_TRUE(allClose(y, Tensor::fromFloats({1, 1, 5, 5}, expected)));
}

/// ConvTranspose in double, by its definition: each input value times
/// the kernel, added at o = i * stride - padBegin + k * dilation (2-D,
/// ONNX weights [C, M/group, kh, kw], output [N, M, oh, ow]).
Tensor refConvTranspose(const Tensor &x, const Tensor &w, const Tensor *b,
                        int64_t group, std::array<int64_t, 2> stride,
                        std::array<int64_t, 2> padBegin,
                        std::array<int64_t, 2> dilation, const Shape &out) {
  int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3);
  int64_t mg = w.dim(1), m = mg * group, kh = w.dim(2), kw = w.dim(3);
  std::vector<double> y(n * m * out[2] * out[3], 0.0);
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t j = 0; j < mg; ++j) {
        int64_t mo = ci / (c / group) * mg + j;
        for (int64_t i = 0; i < h; ++i)
          for (int64_t l = 0; l < wd; ++l)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t bb = 0; bb < kw; ++bb) {
                int64_t oy = i * stride[0] - padBegin[0] + a * dilation[0];
                int64_t ox = l * stride[1] - padBegin[1] + bb * dilation[1];
                if (oy < 0 || oy >= out[2] || ox < 0 || ox >= out[3])
                  continue;
                y[((in * m + mo) * out[2] + oy) * out[3] + ox] +=
                    double(x.data<float>()[((in * c + ci) * h + i) * wd + l]) *
                    w.data<float>()[((ci * mg + j) * kh + a) * kw + bb];
              }
      }
  Tensor t(DType::F32, out);
  for (size_t i = 0; i < y.size(); ++i)
    t.data<float>()[i] =
        float(y[i] + (b ? b->data<float>()[(i / (out[2] * out[3])) % m] : 0));
  return t;
}

// Every ConvTranspose candidate (oneDNN's deconvolution in plain and in
// blocked layouts, the sub-pixel convolutions where the weights are
// constants and the geometry has that form) against the definition, on
// the strides, pads, kernels and groups decoders use; the sub-pixel form
// on phases of one and of two taps (k5 s3), asymmetric pads, output
// padding and channels that do not fill a block of 16.
TEST_F(KernelTest, ConvTransposeCandidatesMatchTheDefinition) {
  struct Case {
    int64_t c, m, h, w, k, stride, group, dilation;
    std::vector<int64_t> pads, outputPadding;
  };
  const Case cases[] = {
      {8, 20, 5, 6, 4, 2, 1, 1, {1, 1, 1, 1}, {}},    // DCGAN, UNet
      {6, 5, 4, 4, 3, 2, 1, 1, {1, 1, 1, 1}, {1, 1}}, // 2x, output padding
      {16, 3, 3, 5, 2, 2, 1, 1, {0, 0, 0, 0}, {}},    // no overlap
      {4, 7, 4, 3, 5, 3, 1, 1, {1, 2, 0, 1}, {}},     // taps 2, 2, 1
      {8, 6, 4, 4, 4, 2, 2, 1, {1, 1, 1, 1}, {}},     // groups: no sub-pixel
      {4, 4, 4, 4, 3, 2, 1, 2, {1, 1, 1, 1}, {}},     // dilated: none either
      {4, 4, 5, 5, 3, 1, 1, 1, {1, 1, 1, 1}, {}}};    // stride 1: none either
  for (const Case &k : cases) {
    Tensor x = random({2, k.c, k.h, k.w});
    Tensor w = random({k.c, k.m / k.group, k.k, k.k});
    Tensor b = random({k.m});
    int64_t op[2] = {0, 0};
    if (!k.outputPadding.empty())
      op[0] = k.outputPadding[0], op[1] = k.outputPadding[1];
    auto size = [&](int64_t in, int64_t axis) {
      return (in - 1) * k.stride - k.pads[axis] - k.pads[axis + 2] +
             k.dilation * (k.k - 1) + 1 + op[axis];
    };
    Shape out{2, k.m, size(k.h, 0), size(k.w, 1)};
    Tensor want =
        refConvTranspose(x, w, &b, k.group, {k.stride, k.stride},
                         {k.pads[0], k.pads[1]}, {k.dilation, k.dilation}, out);
    Attrs attrs = Attrs()
                      .ints("strides", {k.stride, k.stride})
                      .ints("pads", k.pads)
                      .ints("dilations", {k.dilation, k.dilation})
                      .i("group", k.group);
    if (!k.outputPadding.empty())
      attrs.ints("output_padding", k.outputPadding);
    for (const char *candidate :
         {"deconvolution in plain layouts", "deconvolution in blocked layouts",
          "sub-pixel convolutions"})
      for (bool constantWeights : {true, false}) {
        std::set<size_t> runtime = {0};
        if (!constantWeights)
          runtime.insert(1);
        auto y =
            runOnlyCandidate("ConvTranspose", cpu::registerConvTransposeKernel,
                             {&x, &w, &b}, runtime, out, attrs, candidate);
        ASSERT_TRUE(bool(y)) << llvm::toString(y.takeError());
        EXPECT_TRUE(allClose(llvm::cantFail(y->toPlain()), want, 1e-4f, 1e-4f))
            << candidate << ", k" << k.k << " s" << k.stride << " g" << k.group
            << " d" << k.dilation
            << (constantWeights ? ", constant weights" : "");
      }
  }
}

// Weights given at run time (training's) are read on every run: a second
// run with other weights gives their output, not the first's.
TEST_F(KernelTest, ConvTransposeReadsRunTimeWeightsEveryRun) {
  Tensor x = random({1, 4, 3, 3}), w1 = random({4, 5, 4, 4}),
         w2 = random({4, 5, 4, 4});
  PlanBuilder b;
  b.output("y",
           b.op("ConvTranspose",
                {b.input("x", x.shape()), b.input("w", w1.shape())},
                {1, 5, 6, 6},
                Attrs().ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1})));
  plan::Plan plan = b.build();
  auto ctx = std::make_shared<cpu::CPUContext>();
  KernelRegistry registry;
  cpu::registerConvTransposeKernel(registry, ctx);
  auto kernel = (*registry.lookup("ConvTranspose"))(
      OpInfo(plan.ops(0), {nullptr, nullptr}));
  ASSERT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
  for (const Tensor *w : {&w1, &w2}) {
    const Tensor *args[] = {&x, w};
    Tensor y;
    ASSERT_FALSE(bool((*kernel)->run(args, llvm::MutableArrayRef<Tensor>(y))));
    EXPECT_TRUE(allClose(llvm::cantFail(y.toPlain()),
                         refConvTranspose(x, *w, nullptr, 1, {2, 2}, {1, 1},
                                          {1, 1}, {1, 5, 6, 6}),
                         1e-4f, 1e-4f));
  }
}

TEST_F(KernelTest, LayerNormalization) {
  Tensor x = Tensor::fromFloats({2, 2}, {1, 3, 2, 6});
  Tensor scale = Tensor::fromFloats({2}, {1, 2}),
         bias = Tensor::fromFloats({2}, {0, 1});
  float e = 1e-5f, s1 = 1 / std::sqrt(1 + e), s2 = 1 / std::sqrt(4 + e);
  EXPECT_TRUE(allClose(
      runOp("LayerNormalization", {in(x), wt(scale), wt(bias)}, {2, 2},
            Attrs().i("axis", -1).f("epsilon", e)),
      Tensor::fromFloats({2, 2}, {-s1, 1 + 2 * s1, -2 * s2, 1 + 4 * s2})));
}

TEST_F(KernelTest, SplitAndSlice) {
  PlanBuilder b;
  int x = b.input("x", {2, 3});
  std::vector<int> pieces =
      b.multiOp("Split", {x}, {{2, 1}, {2, 2}},
                Attrs().i("axis", 1).ints("split", {1, 2}));
  b.output("first", pieces[0]);
  b.output("second", pieces[1]);
  plan::Plan plan = b.build();
  auto exec = Executor::create(plan);
  ASSERT_TRUE(bool(exec)) << llvm::toString(exec.takeError());
  auto outs = (*exec)->run({Tensor::fromFloats({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(bool(outs)) << llvm::toString(outs.takeError());
  EXPECT_TRUE(allClose((*outs)[0], Tensor::fromFloats({2, 1}, {1, 4})));
  EXPECT_TRUE(allClose((*outs)[1], Tensor::fromFloats({2, 2}, {2, 3, 5, 6})));

  // Backwards from index 8 by 3 (8, 5, 2), and a clamped end.
  Tensor r = Tensor::fromFloats({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_TRUE(allClose(runOp("Slice", {in(r)}, {3},
                             Attrs()
                                 .ints("starts", {8})
                                 .ints("ends", {1})
                                 .ints("axes", {0})
                                 .ints("steps", {-3})),
                       Tensor::fromFloats({3}, {8, 5, 2})));
  EXPECT_TRUE(allClose(runOp("Slice", {in(r)}, {3},
                             Attrs()
                                 .ints("starts", {-3})
                                 .ints("ends", {100})
                                 .ints("axes", {0})
                                 .ints("steps", {1})),
                       Tensor::fromFloats({3}, {7, 8, 9})));
}

namespace {

/// The error of running one op of `type` on plain inputs `xs` (expected
/// output shape `out`), at creation or at run time; "ran" if none.
std::string opError(const std::string &type, std::vector<Tensor> xs, Shape out,
                    const Attrs &attrs, std::vector<Tensor> weights = {}) {
  PlanBuilder b;
  std::vector<int> ids;
  for (size_t i = 0; i < xs.size(); ++i)
    ids.push_back(
        b.input("x" + std::to_string(i), xs[i].shape(), xs[i].dtype()));
  for (size_t i = 0; i < weights.size(); ++i)
    ids.push_back(b.weight("w" + std::to_string(i), weights[i]));
  b.output("y", b.op(type, ids, out, attrs));
  auto exec = Executor::create(b.build());
  if (!exec)
    return llvm::toString(exec.takeError());
  auto outputs = (*exec)->run(xs);
  return outputs ? "ran" : llvm::toString(outputs.takeError());
}

bool endsWith(const std::string &text, const std::string &tail) {
  return text.size() >= tail.size() &&
         text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

} // namespace

// MatMul with `trans_b` (training's foldWeightTransposes: nn.Linear's
// x W^T with W read in place): a 2-D W as an input and as a weight, under
// a 3-D A, with a bias; any other B is one clear error.
TEST_F(KernelTest, MatMulByATransposedWeight) {
  Tensor a = random({2, 3, 6}), w = random({5, 6}), bias = random({5});
  Tensor wT(DType::F32, {6, 5});
  for (int64_t n = 0; n < 5; ++n)
    for (int64_t k = 0; k < 6; ++k)
      wT.data<float>()[k * 5 + n] = w.data<float>()[n * 6 + k];
  Tensor want = refMatMul(a, wT);
  for (bool constant : {false, true})
    EXPECT_TRUE(allClose(runOp("MatMul", {in(a), constant ? wt(w) : in(w)},
                               {2, 3, 5}, Attrs().i("trans_b", 1)),
                         want))
        << "constant W " << constant;
  Tensor biased = runOp("MatMul", {in(a), wt(w), wt(bias)}, {2, 3, 5},
                        Attrs().i("trans_b", 1));
  for (int64_t i = 0; i < want.numElements(); ++i)
    want.data<float>()[i] += bias.data<float>()[i % 5];
  EXPECT_TRUE(allClose(biased, want));
  EXPECT_PRED2(endsWith,
               opError("MatMul", {a, random({2, 5, 6})}, {2, 3, 5},
                       Attrs().i("trans_b", 1)),
               "MatMul by the transpose of f32[2, 5, 6]: trans_b needs a 2-D "
               "B");
}

// The fused ops' kernels (fuseDepthwiseConvs, fuseProjections) reject
// inputs those passes never make, each with one line saying what they need.
TEST_F(KernelTest, FusedConvKernelsRejectWhatTheyCannotDo) {
  Tensor x = random({1, 8, 4, 4}), pw = random({16, 8, 1, 1}),
         dw4 = random({16, 1, 4, 4}), dw3 = random({16, 1, 3, 3}),
         proj3 = random({8, 16, 3, 3}), w1 = random({4, 16, 1, 1}),
         b1 = random({4}), w2 = random({16, 4, 1, 1}), b2 = random({16}),
         narrow = random({8, 12, 1, 1});
  // Op `type` on x and `weights` (null: absent): the error creating or
  // running its kernel, or "ran".
  auto error = [&](const std::string &type, std::vector<const Tensor *> weights,
                   bool projAsInput, const Shape &out,
                   const Attrs &attrs = Attrs()) -> std::string {
    PlanBuilder b;
    std::vector<int> ids = {b.input("x", x.shape())};
    std::vector<const Tensor *> constants = {nullptr}, args = {&x};
    for (size_t i = 0; i < weights.size(); ++i) {
      bool input = projAsInput && i + 1 == weights.size();
      std::string name = "w" + std::to_string(i);
      ids.push_back(!weights[i] ? -1
                    : input     ? b.input(name, weights[i]->shape())
                                : b.weight(name, *weights[i]));
      constants.push_back(input ? nullptr : weights[i]);
      args.push_back(weights[i]);
    }
    b.output("y", b.op(type, ids, out, attrs));
    plan::Plan plan = b.build();
    auto ctx = std::make_shared<cpu::CPUContext>();
    KernelRegistry registry;
    cpu::registerConvKernel(registry, ctx);
    cpu::registerSqueezeExciteKernel(registry, ctx);
    auto kernel = (*registry.lookup(type))(OpInfo(plan.ops(0), constants));
    if (!kernel)
      return llvm::toString(kernel.takeError());
    Tensor y;
    llvm::Error e = (*kernel)->run(args, llvm::MutableArrayRef<Tensor>(y));
    return e ? llvm::toString(std::move(e)) : "ran";
  };
  EXPECT_EQ(error("Conv", {&pw, nullptr, nullptr, &dw4}, false, {1, 16, 4, 4}),
            "a Conv with a fused depthwise Conv needs constant weights and "
            "biases, a 3x3, 5x5 or 7x7 window and no summed input");
  EXPECT_EQ(error("Conv", {&pw, nullptr, nullptr, &dw3, nullptr, &proj3}, false,
                  {1, 8, 4, 4}),
            "a Conv with a fused projection needs a constant 1x1 projection "
            "weight of its width and a constant bias");
  x = random({1, 16, 4, 4});
  Attrs gate = Attrs().s("gate", "Sigmoid");
  EXPECT_EQ(error("SqueezeExcite", {&w1, &b1, &w2, &b2, &narrow}, true,
                  {1, 8, 4, 4}, gate),
            "a SqueezeExcite with a fused projection needs its constant "
            "weight and bias");
  EXPECT_EQ(error("SqueezeExcite", {&w1, &b1, &w2, &b2, &narrow}, false,
                  {1, 8, 4, 4}, gate),
            "SqueezeExcite: projection f32[8, 12, 1, 1] does not fit input "
            "f32[1, 16, 4, 4]");
}

TEST_F(KernelTest, NewKernelsRejectWhatTheyCannotDo) {
  Tensor x = random({2, 3});
  EXPECT_PRED2(
      endsWith,
      opError("Split", {x}, {2, 1}, Attrs().i("axis", 1).ints("split", {1})),
      "Split sizes do not add up to axis 1 of f32[2, 3]");
  EXPECT_PRED2(endsWith,
               opError("Slice", {x}, {2, 3},
                       Attrs().ints("starts", {0}).ints("ends", {1, 2})),
               "Slice needs as many ends, axes and steps as starts");
  EXPECT_PRED2(endsWith,
               opError("Slice", {x}, {2, 3},
                       Attrs()
                           .ints("starts", {0})
                           .ints("ends", {1})
                           .ints("axes", {0})
                           .ints("steps", {0})),
               "Slice axis 0 with step 0 on a rank-2 tensor");
  EXPECT_PRED2(endsWith,
               opError("LayerNormalization", {x}, {2, 3},
                       Attrs().i("axis", -1).f("epsilon", 1e-5f),
                       {random({2})}),
               "LayerNormalization scale f32[2] do not match the normalised "
               "size 3 of f32[2, 3]");
  EXPECT_PRED2(endsWith,
               opError("ConvTranspose", {random({1, 2, 3, 3})}, {1, 1, 4, 4},
                       Attrs(), {random({3, 1, 2, 2})}),
               "ConvTranspose of input f32[1, 2, 3, 3] with weights f32[3, 1, "
               "2, 2] and group 1 is not supported");
  // SqueezeExcite (a fusion's op): weights for 4 channels on 3, a gate it
  // has no form of.
  std::vector<Tensor> se = {random({2, 4, 1, 1}), random({2}),
                            random({4, 2, 1, 1}), random({4})};
  Tensor image = random({1, 3, 2, 2});
  EXPECT_PRED2(endsWith,
               opError("SqueezeExcite", {image}, {1, 3, 2, 2},
                       Attrs().s("gate", "Sigmoid"), se),
               "SqueezeExcite: input f32[1, 3, 2, 2] does not fit weights "
               "f32[2, 4, 1, 1] and f32[4, 2, 1, 1]");
  EXPECT_PRED2(endsWith,
               opError("SqueezeExcite", {random({1, 4, 2, 2})}, {1, 4, 2, 2},
                       Attrs().s("gate", "Tanh"), se),
               "SqueezeExcite: unsupported gate 'Tanh'");
  // Attention (a fusion's op) as a hostile plan could state it.
  Attrs heads = Attrs()
                    .ints("q_perm", {0, 1, 2})
                    .ints("k_perm", {0, 2, 1})
                    .ints("v_perm", {0, 1, 2})
                    .ints("out_perm", {0, 1, 2});
  EXPECT_PRED2(
      endsWith,
      opError("Attention",
              {random({2, 3, 4}), random({2, 5, 4}), random({2, 6, 4})},
              {2, 3, 4}, heads),
      "Attention: Q [2, 3, 4], K^T [2, 4, 5] and V [2, 6, 4] do not "
      "fit");
  EXPECT_PRED2(
      endsWith,
      opError("Attention",
              {random({2, 3, 4}), random({2, 0, 4}), random({2, 0, 4})},
              {2, 3, 4}, heads),
      "Attention: Q [2, 3, 4] and K^T [2, 4, 0] leave no key or no "
      "head dimension to attend over");
  Tensor mask(DType::Bool, {2, 2, 5});
  std::fill_n(mask.data<uint8_t>(), mask.numElements(), 1);
  EXPECT_PRED2(
      endsWith,
      opError("Attention",
              {random({2, 3, 4}), random({2, 5, 4}), random({2, 5, 4}), mask},
              {2, 3, 4}, heads),
      "Attention: the mask bool[2, 2, 5] does not broadcast to the "
      "scores [2, 3, 5]");
  EXPECT_PRED2(endsWith,
               opError("Attention", {random({2, 3, 4}), random({2, 5, 4})},
                       {2, 3, 4},
                       Attrs()
                           .ints("q_perm", {0, 1, 1})
                           .ints("k_perm", {0, 2, 1})
                           .ints("v_perm", {0, 1, 2})
                           .ints("out_perm", {0, 1, 2}),
                       {random({2, 5, 4})}),
               "Attention: q_perm, k_perm, v_perm and out_perm must be "
               "permutations of one rank of 2 or more (of one more where an "
               "index fixes an axis)");
  // Swin's form: q, k and v slices of one [3, 2, 3, 4] tensor; a bias
  // after the mask seen as a view of the [2, 3, 3] scores.
  auto sliced = [](int64_t vIndex) {
    return Attrs()
        .ints("q_perm", {0, 1, 2, 3})
        .ints("k_perm", {0, 1, 3, 2})
        .ints("v_perm", {0, 1, 2, 3})
        .ints("out_perm", {0, 1, 2})
        .i("q_index", 0)
        .i("k_index", 1)
        .i("v_index", vIndex);
  };
  Tensor qkv = random({3, 2, 3, 4});
  EXPECT_PRED2(endsWith,
               opError("Attention", {qkv, qkv, qkv}, {2, 3, 4}, sliced(3)),
               "Attention: v_index 3 is past the 3 slices of v f32[3, 2, 3, "
               "4]");
  Tensor keepAll(DType::Bool, {3});
  std::fill_n(keepAll.data<uint8_t>(), 3, 1);
  EXPECT_PRED2(
      endsWith,
      opError("Attention", {qkv, qkv, qkv, keepAll}, {2, 3, 4},
              sliced(2).ints("bias_ranks", {3}).ints("bias_views", {-1, 3, 3}),
              {random({2, 1, 2})}),
      "Attention: the bias f32[2, 1, 2] does not broadcast to the "
      "scores [2, 3, 3] seen as [-1, 3, 3]");
  EXPECT_PRED2(
      endsWith,
      opError("Attention", {qkv, qkv, qkv, keepAll}, {2, 3, 4},
              sliced(2).ints("bias_ranks", {2}).ints("bias_views", {3, 3, 1})),
      "Attention: bias_views has entries past its bias_ranks");
  // The result's value columns must stay its last axis; a bias must be f32.
  EXPECT_PRED2(
      endsWith,
      opError("Attention",
              {random({2, 3, 4}), random({2, 5, 4}), random({2, 5, 4})},
              {4, 3, 2},
              Attrs()
                  .ints("q_perm", {0, 1, 2})
                  .ints("k_perm", {0, 2, 1})
                  .ints("v_perm", {0, 1, 2})
                  .ints("out_perm", {2, 1, 0})),
      "Attention: out_perm [2, 1, 0] moves the value columns off the last "
      "axis");
  Tensor intBias = Tensor::fromInts({3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_PRED2(
      endsWith,
      opError("Attention", {qkv, qkv, qkv, keepAll}, {2, 3, 4},
              sliced(2).ints("bias_ranks", {3}).ints("bias_views", {-1, 3, 3}),
              {intBias}),
      "Attention: a bias is not an f32 tensor");
  // Roll (fuseRolls' op): an offset per axis.
  EXPECT_PRED2(
      endsWith,
      opError("Roll", {random({2, 3})}, {2, 3}, Attrs().ints("offsets", {1})),
      "Roll of f32[2, 3] has offsets [1] for another rank");
  EXPECT_PRED2(endsWith,
               opError("SkipLayerNormalization",
                       {random({2, 3}), random({3, 2})}, {2, 3}, Attrs(),
                       {random({3})}),
               "SkipLayerNormalization adds f32[2, 3] and f32[3, 2], which "
               "must have one shape of rank 1 or more");
  EXPECT_PRED2(endsWith,
               opError("ConcatShuffle", {random({1, 2, 3}), random({1, 3, 3})},
                       {1, 4, 3}, Attrs()),
               "ConcatShuffle interleaves two tensors of one shape of rank 2 "
               "or more, not f32[1, 2, 3] and f32[1, 3, 3]");
  // A Concat with a batch norm folded in (fuseConcatBatchNorms).
  Tensor part = random({1, 2, 2, 2});
  EXPECT_PRED2(endsWith,
               opError("Concat", {part, part}, {1, 4, 2, 2},
                       Attrs()
                           .i("axis", 1)
                           .floats("scale", {1, 1, 1})
                           .floats("shift", {0, 0, 0})),
               "Concat with a batch norm of 3 channels cannot output [1, 4, "
               "2, 2]");
  EXPECT_PRED2(endsWith,
               opError("Concat", {part, part}, {1, 4, 2, 2},
                       Attrs()
                           .i("axis", 1)
                           .floats("scale", {1, 1, 1, 1})
                           .floats("shift", {0, 0, 0, 0})
                           .s("activation", "Sigmoid")),
               "Concat: a fused batch norm needs as many shifts as scales, "
               "axis 1 and no activation but Relu");
}

//===----------------------------------------------------------------------===//
// Run-time shapes, index tensors and masks (IndexKernels, LogicKernels)
//===----------------------------------------------------------------------===//

namespace {
Tensor bools(Shape shape, std::vector<uint8_t> values) {
  Tensor t(DType::Bool, std::move(shape));
  std::copy(values.begin(), values.end(), t.data<uint8_t>());
  return t;
}
std::vector<int64_t> intsOf(const Tensor &t) {
  return {t.data<int64_t>(), t.data<int64_t>() + t.numElements()};
}
std::vector<uint8_t> boolsOf(const Tensor &t) {
  return {t.data<uint8_t>(), t.data<uint8_t>() + t.numElements()};
}
std::vector<float> floatsOf(const Tensor &t) {
  return {t.data<float>(), t.data<float>() + t.numElements()};
}
} // namespace

TEST_F(KernelTest, ShapeRangeAndConstantOfShape) {
  Tensor x = random({2, 3, 4});
  EXPECT_EQ(
      intsOf(runOp("Shape", {in(x)}, {2}, Attrs().i("start", 1), DType::I64)),
      (std::vector<int64_t>{3, 4}));
  Tensor r =
      runOp("Range",
            {in(Tensor::fromInts({}, {7})), in(Tensor::fromInts({}, {-2})),
             in(Tensor::fromInts({}, {-3}))},
            {-1}, Attrs(), DType::I64);
  EXPECT_EQ(intsOf(r), (std::vector<int64_t>{7, 4, 1})); // ceil(9 / 3)
  EXPECT_NE(opError("Range",
                    {Tensor::fromInts({}, {0}), Tensor::fromInts({}, {4}),
                     Tensor::fromInts({}, {0})},
                    {-1}, Attrs())
                .find("Range with delta 0"),
            std::string::npos);
  Tensor c = runOp("ConstantOfShape", {in(Tensor::fromInts({2}, {2, 3}))},
                   {-1, -1}, Attrs().i("to", 1).f("value", 2.5f));
  EXPECT_EQ(c.shape(), (Shape{2, 3}));
  EXPECT_EQ(floatsOf(c), std::vector<float>(6, 2.5f));
}

TEST_F(KernelTest, ComparisonsLogicAndWhere) {
  Tensor a = Tensor::fromInts({3, 1}, {0, 1, 2});
  Tensor b = Tensor::fromInts({1, 3}, {0, 1, 2});
  Tensor gt = runOp("Greater", {in(b), in(a)}, {3, 3}, Attrs(), DType::Bool);
  EXPECT_EQ(boolsOf(gt), (std::vector<uint8_t>{0, 1, 1, 0, 0, 1, 0, 0, 0}));
  Tensor eq = runOp("Equal", {in(b), in(a)}, {3, 3}, Attrs(), DType::Bool);
  Tensor either = runOp("Or", {in(gt), in(eq)}, {3, 3}, Attrs(), DType::Bool);
  Tensor lower = runOp("Not", {in(either)}, {3, 3}, Attrs(), DType::Bool);
  EXPECT_EQ(boolsOf(lower), (std::vector<uint8_t>{0, 0, 0, 1, 0, 0, 1, 1, 0}));
  // A causal mask: -inf above the diagonal, the scores elsewhere.
  Tensor scores = random({2, 3, 3});
  Tensor y = runOp(
      "Where", {in(gt), in(Tensor::fromFloats({}, {-INFINITY})), in(scores)},
      {2, 3, 3});
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        float v = y.data<float>()[(n * 3 + i) * 3 + j];
        if (j > i)
          EXPECT_EQ(v, -INFINITY);
        else
          EXPECT_EQ(v, scores.data<float>()[(n * 3 + i) * 3 + j]);
      }
}

TEST_F(KernelTest, ExpandCastTriluCumSum) {
  Tensor e = runOp("Expand",
                   {in(Tensor::fromFloats({2, 1}, {1.f, 2.f})),
                    in(Tensor::fromInts({3}, {2, 2, 3}))},
                   {2, 2, 3});
  EXPECT_EQ(floatsOf(e),
            (std::vector<float>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}));
  Tensor c = runOp("Cast", {in(Tensor::fromFloats({3}, {-1.5f, 0.f, 2.7f}))},
                   {3}, Attrs().i("to", 7), DType::I64);
  EXPECT_EQ(intsOf(c), (std::vector<int64_t>{-1, 0, 2}));
  Tensor m = runOp("Cast", {in(bools({2}, {1, 0}))}, {2}, Attrs().i("to", 1));
  EXPECT_EQ(floatsOf(m), (std::vector<float>{1, 0}));
  Tensor ones = Tensor::fromFloats({3, 3}, std::vector<float>(9, 1.f));
  Tensor t = runOp("Trilu", {in(ones), in(Tensor::fromInts({}, {-1}))}, {3, 3},
                   Attrs().i("upper", 0));
  EXPECT_EQ(floatsOf(t), (std::vector<float>{0, 0, 0, 1, 0, 0, 1, 1, 0}));
  Tensor s = runOp("CumSum",
                   {in(Tensor::fromFloats({2, 3}, {1, 2, 3, 4, 5, 6})),
                    in(Tensor::fromInts({}, {1}))},
                   {2, 3}, Attrs().i("exclusive", 1).i("reverse", 1));
  EXPECT_EQ(floatsOf(s), (std::vector<float>{5, 3, 0, 11, 6, 0}));
}

// Shape arithmetic on i64 tensors: the binary kernels and Concat take them.
TEST_F(KernelTest, IntegerShapeArithmetic) {
  Tensor shp = Tensor::fromInts({3}, {2, 5, 8});
  Tensor rows = runOp("Mul", {in(shp), in(Tensor::fromInts({}, {3}))}, {3},
                      Attrs(), DType::I64);
  EXPECT_EQ(intsOf(rows), (std::vector<int64_t>{6, 15, 24}));
  Tensor q = runOp("Div", {in(shp), in(Tensor::fromInts({1}, {-2}))}, {3},
                   Attrs(), DType::I64);
  EXPECT_EQ(intsOf(q), (std::vector<int64_t>{-1, -2, -4})); // truncates
  Tensor cat = runOp("Concat", {in(shp), in(Tensor::fromInts({1}, {-1}))}, {4},
                     Attrs().i("axis", 0), DType::I64);
  EXPECT_EQ(intsOf(cat), (std::vector<int64_t>{2, 5, 8, -1}));
  EXPECT_NE(opError("Div", {shp, Tensor::fromInts({}, {0})}, {3}, Attrs())
                .find("integer division by zero"),
            std::string::npos);
}

// Mod: Python's sign without fmod (integers), C's with it.
TEST_F(KernelTest, Mod) {
  Tensor a = Tensor::fromInts({4}, {7, -7, 7, -7});
  Tensor b = Tensor::fromInts({4}, {3, 3, -3, -3});
  EXPECT_EQ(intsOf(runOp("Mod", {in(a), in(b)}, {4}, Attrs(), DType::I64)),
            (std::vector<int64_t>{1, 2, -2, -1}));
  EXPECT_EQ(intsOf(runOp("Mod", {in(a), in(b)}, {4}, Attrs().i("fmod", 1),
                         DType::I64)),
            (std::vector<int64_t>{1, -1, 1, -1}));
  // INT64_MIN % -1 would trap; it is 0.
  Tensor low = Tensor::fromInts({1}, {INT64_MIN});
  EXPECT_EQ(intsOf(runOp("Mod", {in(low), in(Tensor::fromInts({}, {-1}))}, {1},
                         Attrs(), DType::I64)),
            (std::vector<int64_t>{0}));
  Tensor f = runOp("Mod",
                   {in(Tensor::fromFloats({2, 2}, {5.5f, -5.5f, 5.5f, -5.5f})),
                    in(Tensor::fromFloats({2, 1}, {2.f, -2.f}))},
                   {2, 2}, Attrs().i("fmod", 1));
  EXPECT_EQ(floatsOf(f), (std::vector<float>{1.5f, -1.5f, 1.5f, -1.5f}));
  EXPECT_NE(opError("Mod", {a, Tensor::fromInts({}, {0})}, {4}, Attrs())
                .find("integer division by zero in Mod"),
            std::string::npos);
  EXPECT_NE(
      opError("Mod",
              {Tensor::fromFloats({1}, {1.f}), Tensor::fromFloats({1}, {1.f})},
              {1}, Attrs())
          .find("Mod of f32[1] without fmod"),
      std::string::npos);
}

TEST_F(KernelTest, ScatterND) {
  Tensor data = Tensor::fromFloats({3, 2}, {1, 2, 3, 4, 5, 6});
  // Rows 2 and -3 (row 0) replaced.
  Tensor rows = Tensor::fromInts({2, 1}, {2, -3});
  Tensor updates = Tensor::fromFloats({2, 2}, {10, 20, 30, 40});
  EXPECT_EQ(
      floatsOf(runOp("ScatterND", {in(data), in(rows), in(updates)}, {3, 2})),
      (std::vector<float>{30, 40, 3, 4, 10, 20}));
  // Elements, one named twice: the reduction sees both.
  Tensor at = Tensor::fromInts({3, 2}, {1, 1, 1, 1, 0, 0});
  Tensor ones = Tensor::fromFloats({3}, {1, 1, 1});
  EXPECT_EQ(floatsOf(runOp("ScatterND", {in(data), in(at), in(ones)}, {3, 2},
                           Attrs().s("reduction", "add"))),
            (std::vector<float>{2, 2, 3, 6, 5, 6}));
  EXPECT_EQ(floatsOf(runOp("ScatterND", {in(data), in(at), in(ones)}, {3, 2},
                           Attrs().s("reduction", "min"))),
            (std::vector<float>{1, 2, 3, 1, 5, 6}));
  EXPECT_EQ(intsOf(runOp("ScatterND",
                         {in(Tensor::fromInts({3}, {1, 2, 3})),
                          in(Tensor::fromInts({1, 1}, {1})),
                          in(Tensor::fromInts({1}, {5}))},
                         {3}, Attrs().s("reduction", "mul"), DType::I64)),
            (std::vector<int64_t>{1, 10, 3}));
  EXPECT_NE(opError("ScatterND",
                    {data, Tensor::fromInts({1, 1}, {3}),
                     Tensor::fromFloats({1, 2}, {1, 1})},
                    {3, 2}, Attrs())
                .find("ScatterND: index 3 out of range for dimension 0 of "
                      "f32[3, 2]"),
            std::string::npos);
  EXPECT_NE(opError("ScatterND", {data, rows, ones}, {3, 2}, Attrs())
                .find("ScatterND: updates f32[3] should have shape [2, 2]"),
            std::string::npos);
  EXPECT_NE(opError("ScatterND", {data, rows, updates}, {3, 2},
                    Attrs().s("reduction", "sum"))
                .find("unknown reduction 'sum'"),
            std::string::npos);
}

// A Slice that is one run of consecutive elements (rows of a batch of one)
// is a view into its input; one index of a stepped axis too.
TEST_F(KernelTest, SliceOfOneRunIsAView) {
  Tensor x = random({1, 4, 6, 3});
  PlanBuilder b;
  int xi = b.input("x", x.shape());
  b.output(
      "rows",
      b.op("Slice", {xi}, {1, 2, 6, 3},
           Attrs().ints("starts", {1}).ints("ends", {3}).ints("axes", {1})));
  b.output("one", b.op("Slice", {xi}, {1, 1, 1, 3},
                       Attrs()
                           .ints("starts", {3, 5})
                           .ints("ends", {2, 0})
                           .ints("axes", {1, 2})
                           .ints("steps", {-2, -7})));
  plan::Plan plan = b.build();
  CPUBackend backend(BackendOptions{0, /*autotune=*/false});
  for (int op = 0; op < 2; ++op) {
    auto kernel =
        llvm::cantFail(backend.createKernel(OpInfo(plan.ops(op), {nullptr})));
    Tensor y;
    const Tensor *args[] = {&x};
    ASSERT_FALSE(bool(kernel->run(args, llvm::MutableArrayRef<Tensor>(y))));
    // rows 1-2: from element 18; row 3, column 5: element (3 * 6 + 5) * 3.
    EXPECT_EQ(y.data<float>(), x.data<float>() + (op == 0 ? 18 : 69));
    EXPECT_EQ(y.numElements(), op == 0 ? 36 : 3);
  }
}

// A step on an inner axis copies the axes after it as runs (Swin's patch
// merging, every other column of [N, H, W, C]); a step on the last axis
// element by element.
TEST_F(KernelTest, SliceWithStepsOnInnerAxes) {
  Tensor x = random({2, 4, 6, 3});
  Tensor y = runOp("Slice", {in(x)}, {2, 2, 3, 3},
                   Attrs()
                       .ints("starts", {1, 0})
                       .ints("ends", {4, 6})
                       .ints("axes", {1, 2})
                       .ints("steps", {2, 2}));
  Tensor z = runOp("Slice", {in(x)}, {2, 4, 6, 2},
                   Attrs()
                       .ints("starts", {2})
                       .ints("ends", {-4})
                       .ints("axes", {3})
                       .ints("steps", {-2}));
  const float *px = x.data<float>();
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t w = 0; w < 3; ++w)
        for (int64_t c = 0; c < 3; ++c)
          EXPECT_EQ(y.data<float>()[((n * 2 + h) * 3 + w) * 3 + c],
                    px[((n * 4 + 1 + 2 * h) * 6 + 2 * w) * 3 + c]);
  for (int64_t r = 0; r < 2 * 4 * 6; ++r)
    for (int64_t c = 0; c < 2; ++c)
      EXPECT_EQ(z.data<float>()[r * 2 + c], px[r * 3 + 2 - 2 * c]);
}

// Reshape and Slice whose shape and bounds are inputs computed at run time.
TEST_F(KernelTest, ComputedReshapeAndSlice) {
  Tensor x = random({2, 3, 4});
  Tensor r =
      runOp("Reshape", {in(x), in(Tensor::fromInts({2}, {-1, 4}))}, {-1, -1});
  EXPECT_EQ(r.shape(), (Shape{6, 4}));
  EXPECT_EQ(floatsOf(r), floatsOf(x));
  Tensor s = runOp(
      "Slice",
      {in(x), in(Tensor::fromInts({1}, {1})), in(Tensor::fromInts({1}, {3})),
       in(Tensor::fromInts({1}, {2})), in(Tensor::fromInts({1}, {1}))},
      {-1, -1, -1});
  ASSERT_EQ(s.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(s.data<float>()[0], x.data<float>()[1]);
  EXPECT_EQ(s.data<float>()[1], x.data<float>()[2]);
  EXPECT_NE(
      opError("Reshape", {x, Tensor::fromInts({2}, {5, 5})}, {-1, -1}, Attrs())
          .find("cannot reshape f32[2, 3, 4] to [5, 5]"),
      std::string::npos);
}

// SqueezeExcite (fuseSqueezeExcites) on activations in each layout a Conv
// leaves them in: plain, channel-blocked by 16 and 8 (20 channels, the last
// block padded) and channels-last (at batch 1 over 41x41 too, where the
// means of one item split across threads), against plain loops.
TEST_F(KernelTest, SqueezeExciteReadsEveryLayout) {
  using cpu::Tag;
  CPUBackend backend;
  auto ctx = std::make_shared<cpu::CPUContext>();
  const int64_t c = 20, r = 4;
  Tensor w1 = random({r, c, 1, 1}), b1 = random({r}), w2 = random({c, r, 1, 1}),
         b2 = random({c});
  plan::Op op;
  op.set_type("SqueezeExcite");
  for (int i = 0; i < 5; ++i)
    op.add_inputs(i);
  op.add_outputs(5);
  auto attr = [&](const char *name) {
    plan::Attribute *a = op.add_attributes();
    a->set_name(name);
    return a;
  };
  attr("activation")->set_s("Relu");
  attr("gate")->set_s("HardSigmoid");
  attr("gate_alpha")->set_f(1.f / 6);
  attr("gate_beta")->set_f(0.5f);
  auto kernel = llvm::cantFail(
      backend.createKernel(OpInfo(op, {nullptr, &w1, &b1, &w2, &b2})));
  ASSERT_TRUE(kernel->acceptsLayouts());
  for (auto [tag, batch, side] : {std::tuple{Tag::abcd, 2, 3},
                                  {Tag::aBcd16b, 2, 3},
                                  {Tag::aBcd8b, 2, 3},
                                  {Tag::acdb, 2, 3},
                                  {Tag::acdb, 1, 41}}) {
    SCOPED_TRACE(std::string(tag == Tag::abcd      ? "plain"
                             : tag == Tag::aBcd16b ? "by 16"
                             : tag == Tag::aBcd8b  ? "by 8"
                                                   : "channels-last") +
                 " batch " + std::to_string(batch) + " side " +
                 std::to_string(side));
    Tensor x = random({batch, c, side, side});
    Tensor laid =
        cpu::reorderTo(x,
                       cpu::memory::desc(cpu::toDims(x.shape()),
                                         cpu::memory::data_type::f32, tag),
                       ctx);
    std::vector<Tensor> out(1);
    const Tensor *args[] = {&laid, &w1, &b1, &w2, &b2};
    ASSERT_FALSE(bool(kernel->run(args, out)));
    EXPECT_TRUE(out[0].sameLayout(laid));
    Tensor got = llvm::cantFail(out[0].toPlain());
    int64_t hw = side * side;
    for (int64_t n = 0; n < batch; ++n) {
      const float *xn = x.data<float>() + n * c * hw;
      std::vector<double> hidden(r);
      for (int64_t j = 0; j < r; ++j) {
        double sum = b1.data<float>()[j];
        for (int64_t k = 0; k < c; ++k) {
          double mean = 0;
          for (int64_t i = 0; i < hw; ++i)
            mean += xn[k * hw + i];
          sum += w1.data<float>()[j * c + k] * mean / hw;
        }
        hidden[j] = std::max(sum, 0.0);
      }
      for (int64_t k = 0; k < c; ++k) {
        double g = b2.data<float>()[k];
        for (int64_t j = 0; j < r; ++j)
          g += w2.data<float>()[k * r + j] * hidden[j];
        g = std::clamp(g / 6 + 0.5, 0.0, 1.0);
        for (int64_t i = 0; i < hw; ++i)
          ASSERT_NEAR(got.data<float>()[(n * c + k) * hw + i],
                      xn[k * hw + i] * g, 1e-5)
              << "item " << n << " channel " << k << " position " << i;
      }
    }
  }
}

// A Transpose between channels-last [N, C, H, W] and plain [N, H, W, C]
// (ConvNeXt's permutes) is a view of the same bytes, both ways; other
// layouts and permutations copy. Values as refTranspose's in every case.
TEST_F(KernelTest, TransposeBetweenChannelsLastAndPlainIsAView) {
  using cpu::Tag;
  CPUBackend backend;
  auto ctx = std::make_shared<cpu::CPUContext>();
  struct Case {
    Tag tag;
    std::vector<int64_t> perm;
    bool view;
  };
  for (const Case &c : {Case{Tag::acdb, {0, 2, 3, 1}, true},
                        Case{Tag::abcd, {0, 3, 1, 2}, true},
                        Case{Tag::aBcd16b, {0, 2, 3, 1}, false},
                        Case{Tag::acdb, {0, 3, 1, 2}, false},
                        Case{Tag::abcd, {0, 2, 3, 1}, false}}) {
    SCOPED_TRACE("layout " + std::to_string(int(c.tag)) + " perm " +
                 std::to_string(c.perm[1]) + std::to_string(c.perm[2]) +
                 std::to_string(c.perm[3]));
    plan::Op op;
    op.set_type("Transpose");
    op.add_inputs(0);
    op.add_outputs(1);
    plan::Attribute *attr = op.add_attributes();
    attr->set_name("perm");
    for (int64_t p : c.perm)
      attr->mutable_ints()->add_values(p);
    auto kernel = llvm::cantFail(backend.createKernel(OpInfo(op, {nullptr})));
    Tensor x = random({2, 20, 3, 5});
    Tensor laid =
        cpu::reorderTo(x,
                       cpu::memory::desc(cpu::toDims(x.shape()),
                                         cpu::memory::data_type::f32, c.tag),
                       ctx);
    std::vector<Tensor> out(1);
    const Tensor *args[] = {&laid};
    ASSERT_FALSE(bool(kernel->run(args, out)));
    EXPECT_EQ(out[0].rawData() == laid.rawData(), c.view);
    EXPECT_TRUE(allClose(llvm::cantFail(out[0].toPlain()),
                         refTranspose(x, c.perm), 0.f, 0.f));
  }
}

// ShuffleNet's ConcatShuffle and channel-half Slices keep channels-last
// tensors channels-last (no reorder on either side of the shuffle) and
// give the same values as on plain ones; other layouts, and slices of other
// axes or with steps, go through plain ones.
TEST_F(KernelTest, ShuffleAndChannelSlicesKeepChannelsLast) {
  using cpu::Tag;
  CPUBackend backend;
  auto ctx = std::make_shared<cpu::CPUContext>();
  auto laid = [&](const Tensor &x, Tag tag) {
    return cpu::reorderTo(x,
                          cpu::memory::desc(cpu::toDims(x.shape()),
                                            cpu::memory::data_type::f32, tag),
                          ctx);
  };
  auto kernelOf = [&](plan::Op op, std::vector<const Tensor *> constants) {
    op.add_outputs(9);
    return llvm::cantFail(backend.createKernel(OpInfo(op, constants)));
  };
  const int64_t n = 2, c = 12, h = 3, w = 4, hw = h * w;

  plan::Op shuffleOp;
  shuffleOp.set_type("ConcatShuffle");
  shuffleOp.add_inputs(0);
  shuffleOp.add_inputs(1);
  // Whole, and as two halves (fuseShuffleChunks: the output's first and
  // second c channels, each from c / 2 channels of a and of b).
  plan::Op halvesOp = shuffleOp;
  halvesOp.add_outputs(8);
  Tensor a = random({n, c, h, w}), b = random({n, c, h, w});
  for (int64_t parts : {1, 2}) {
    auto shuffle =
        kernelOf(parts == 1 ? shuffleOp : halvesOp, {nullptr, nullptr});
    int64_t width = c / parts;
    for (auto [tagA, tagB] : {std::pair{Tag::acdb, Tag::acdb},
                              {Tag::abcd, Tag::abcd},
                              {Tag::acdb, Tag::abcd},
                              {Tag::aBcd8b, Tag::aBcd8b}}) {
      SCOPED_TRACE("ConcatShuffle of " + std::to_string(int(tagA)) + " and " +
                   std::to_string(int(tagB)) + " in " + std::to_string(parts));
      Tensor la = laid(a, tagA), lb = laid(b, tagB);
      std::vector<Tensor> out(parts);
      const Tensor *args[] = {&la, &lb};
      ASSERT_FALSE(bool(shuffle->run(args, out)));
      for (int64_t part = 0; part < parts; ++part) {
        EXPECT_EQ(cpu::isChannelsLast(out[part]),
                  tagA == Tag::acdb && tagB == Tag::acdb);
        Tensor got = llvm::cantFail(out[part].toPlain());
        ASSERT_EQ(got.shape(), (Shape{n, 2 * width, h, w}));
        for (int64_t i = 0; i < n; ++i)
          for (int64_t k = 0; k < width; ++k)
            for (int64_t p = 0; p < hw; ++p) {
              int64_t from = (i * c + width * part + k) * hw + p,
                      to = (i * 2 * width + 2 * k) * hw + p;
              ASSERT_EQ(got.data<float>()[to], a.data<float>()[from]);
              ASSERT_EQ(got.data<float>()[to + hw], b.data<float>()[from]);
            }
      }
    }
  }
  {
    Tensor odd = random({1, 3, 2, 2});
    std::vector<Tensor> out(2);
    const Tensor *args[] = {&odd, &odd};
    EXPECT_EQ(
        llvm::toString(kernelOf(halvesOp, {nullptr, nullptr})->run(args, out)),
        "ConcatShuffle of two f32[1, 3, 2, 2] cannot give its output as "
        "two halves of whole channels of each");
  }

  struct SliceCase {
    int64_t axis, start, end, step;
    bool staysChannelsLast;
  };
  for (SliceCase sc : {SliceCase{1, c / 2, c, 1, true},
                       {1, 0, c / 2, 1, true},
                       {1, 0, c, 2, false},
                       {2, 1, h, 1, false}}) {
    SCOPED_TRACE("Slice of axis " + std::to_string(sc.axis) + " from " +
                 std::to_string(sc.start) + " step " + std::to_string(sc.step));
    plan::Op op;
    op.set_type("Slice");
    op.add_inputs(0);
    for (auto [name, v] : {std::pair{"starts", sc.start},
                           {"ends", sc.end},
                           {"axes", sc.axis},
                           {"steps", sc.step}}) {
      plan::Attribute *attr = op.add_attributes();
      attr->set_name(name);
      attr->mutable_ints()->add_values(v);
    }
    auto slice = kernelOf(op, {nullptr});
    Tensor x = random({n, c, h, w}), lx = laid(x, Tag::acdb);
    std::vector<Tensor> out(1);
    const Tensor *args[] = {&lx};
    ASSERT_FALSE(bool(slice->run(args, out)));
    EXPECT_EQ(cpu::isChannelsLast(out[0]), sc.staysChannelsLast);
    Tensor got = llvm::cantFail(out[0].toPlain());
    Shape want = x.shape();
    want[sc.axis] = (sc.end - sc.start + sc.step - 1) / sc.step;
    ASSERT_EQ(got.shape(), want);
    int64_t k = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t y = 0; y < h; ++y)
          for (int64_t xx = 0; xx < w; ++xx) {
            int64_t index[] = {i, ch, y, xx};
            int64_t at = index[sc.axis];
            if (at < sc.start || at >= sc.end || (at - sc.start) % sc.step)
              continue;
            ASSERT_EQ(got.data<float>()[k++],
                      x.data<float>()[((i * c + ch) * h + y) * w + xx]);
          }
    EXPECT_EQ(k, got.numElements());
  }
}

// ArgMax over an empty axis has no extreme: one error naming it.
TEST_F(KernelTest, ArgMaxOverAnEmptyAxisIsAnError) {
  EXPECT_NE(opError("ArgMax", {Tensor(DType::F32, {2, 0})}, {2},
                    Attrs().i("axis", 1).i("keepdims", 0))
                .find("ArgMax over the empty axis 1 of f32[2, 0]"),
            std::string::npos);
}
