//===- GradCheckTest.cpp - backward kernels against finite differences ----===//
//
// For each training kernel: the loss L = sum(r * y) of its output y with a
// fixed random r, the analytic gradients from `backward` (fed dy = r), and
// central differences (L(x + h) - L(x - h)) / 2h of every checked input
// element, with L summed in double precision.
//
//===----------------------------------------------------------------------===//

#include "../PlanBuilder.h"
#include "../Reference.h"

#include "../../../lib/Runtime/Backends/CPU/CPUKernels.h"
#include "heterps/Runtime/Train/TrainKernel.h"

#include "llvm/ADT/ScopeExit.h"

#include <cmath>
#include <omp.h>

using namespace heterps::runtime;
using namespace heterps::runtime::testutil;
using namespace heterps::runtime::train;

namespace {

plan::Op makeOp(const std::string &type, size_t numInputs,
                const std::vector<Tensor> &inputs, const Attrs &attrs) {
  plan::Op op;
  op.set_name("op");
  op.set_type(type);
  for (const plan::Attribute &a : attrs.list)
    *op.add_attributes() = a;
  for (size_t i = 0; i < numInputs; ++i)
    op.add_inputs(inputs[i].isNull() ? -1 : static_cast<int32_t>(i));
  op.add_outputs(static_cast<int32_t>(numInputs));
  return op;
}

/// The CPU backend's training kernels.
std::unique_ptr<TrainBackend>
cpuTrainBackend(TrainBackendOptions options = TrainBackendOptions()) {
  return llvm::cantFail(CPUBackend().createTrainBackend(options));
}

/// The CPU training backend, entered on this thread, and tensors in a
/// channel-blocked layout for the kernels that keep layouts.
struct LayoutCase {
  std::unique_ptr<TrainBackend> backend = cpuTrainBackend();
  cpu::CPUContextPtr ctx = std::make_shared<cpu::CPUContext>();
  LayoutCase() { backend->enterThread(); }
  Tensor blocked(const Tensor &t, cpu::Tag tag) const {
    return cpu::reorderTo(t,
                          cpu::memory::desc(cpu::toDims(t.shape()),
                                            cpu::memory::data_type::f32, tag),
                          ctx);
  }
};

double weightedSum(const Tensor &y, const Tensor &r) {
  Tensor plain = llvm::cantFail(y.toPlain());
  double sum = 0;
  for (int64_t i = 0; i < plain.numElements(); ++i)
    sum += double(plain.data<float>()[i]) * r.data<float>()[i];
  return sum;
}

/// Checks the gradients of inputs `check` of a one-op `type` on `inputs`
/// (null tensors for absent inputs), on `threads` threads (0: all cores).
void gradCheck(const std::string &type, std::vector<Tensor> inputs,
               const std::vector<int> &check, const Attrs &attrs = Attrs(),
               float h = 1e-2f, int threads = 0) {
  SCOPED_TRACE(type);
  TrainBackendOptions options;
  options.numThreads = threads;
  std::unique_ptr<TrainBackend> own = cpuTrainBackend(options);
  TrainBackend &backend = *own;
  // Later tests on this thread get the thread count they had.
  int before = omp_get_max_threads();
  auto restore = llvm::make_scope_exit([&] { omp_set_num_threads(before); });
  backend.enterThread();
  plan::Op op = makeOp(type, inputs.size(), inputs, attrs);
  OpInfo info(op, std::vector<const Tensor *>(inputs.size(), nullptr));
  auto kernel = backend.createKernel(info, 0);
  ASSERT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
  std::vector<const Tensor *> args;
  for (Tensor &t : inputs)
    args.push_back(t.isNull() ? nullptr : &t);
  auto loss = [&] {
    Tensor y;
    llvm::Error e = (*kernel)->forward(args, y);
    EXPECT_FALSE(bool(e)) << llvm::toString(std::move(e));
    return y;
  };
  Tensor y = loss();
  ASSERT_FALSE(y.isNull());
  std::mt19937 rng(7);
  Tensor r = randomTensor(y.shape(), rng);
  llvm::SmallVector<bool, 8> need(inputs.size(), false);
  for (int i : check)
    need[i] = true;
  std::vector<Tensor> grads(inputs.size());
  llvm::Error e = (*kernel)->backward(args, y, r, need, grads);
  ASSERT_FALSE(bool(e)) << llvm::toString(std::move(e));

  for (int i : check) {
    SCOPED_TRACE("input " + std::to_string(i));
    ASSERT_FALSE(grads[i].isNull());
    Tensor analytic = llvm::cantFail(grads[i].toPlain());
    ASSERT_EQ(analytic.shape(), inputs[i].shape());
    float *x = inputs[i].data<float>();
    int64_t n = inputs[i].numElements();
    // Every element of small inputs, an even spread of 40 of larger ones.
    int64_t stride = std::max<int64_t>(n / 40, 1);
    for (int64_t k = 0; k < n; k += stride) {
      float saved = x[k];
      x[k] = saved + h;
      double plus = weightedSum(loss(), r);
      x[k] = saved - h;
      double minus = weightedSum(loss(), r);
      x[k] = saved;
      double numeric = (plus - minus) / (2.0 * h);
      double got = analytic.data<float>()[k];
      EXPECT_NEAR(got, numeric, 3e-3 + 2e-2 * std::abs(numeric))
          << "element " << k;
    }
  }
}

Tensor random(Shape shape, unsigned seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  return randomTensor(std::move(shape), rng, lo, hi);
}

/// Random values at least `gap` away from 0 (kinks of ReLU and friends).
Tensor awayFromZero(Shape shape, unsigned seed, float gap = 0.05f) {
  Tensor t = random(std::move(shape), seed);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    float &v = t.data<float>()[i];
    if (std::abs(v) < gap)
      v = v < 0 ? -gap - 0.05f : gap + 0.05f;
  }
  return t;
}

/// A random permutation of evenly spaced values: window maxima stay put
/// under small perturbations.
Tensor distinct(Shape shape, unsigned seed) {
  Tensor t(DType::F32, shape);
  int64_t n = t.numElements();
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  for (int64_t i = 0; i < n; ++i)
    t.data<float>()[i] = -1.f + 0.05f * order[i];
  return t;
}

TEST(GradCheck, Conv) {
  gradCheck("Conv",
            {random({2, 3, 7, 7}, 1), random({4, 3, 3, 3}, 2), random({4}, 3)},
            {0, 1, 2},
            Attrs().ints("pads", {1, 1, 1, 1}).ints("strides", {2, 2}));
}

// 16 channels, 3x3, stride 1: the training kernel takes oneDNN's Winograd
// algorithm for all three passes.
TEST(GradCheck, ConvWinogradShape) {
  // 2 x 4 x 4 output tiles of 4x4 on one thread: Winograd (ConvGrad.cpp).
  gradCheck(
      "Conv",
      {random({2, 16, 16, 16}, 6), random({16, 16, 3, 3}, 7), random({16}, 8)},
      {0, 1, 2}, Attrs().ints("pads", {1, 1, 1, 1}), 1e-2f, /*threads=*/1);
}

// A summed fourth input (splitConcatConvs) without a bias; the forward
// must leave the addend as it was, or the differences drift.
TEST(GradCheck, ConvSummingAnInput) {
  gradCheck("Conv",
            {random({2, 3, 6, 6}, 60), random({4, 3, 3, 3}, 61), Tensor(),
             random({2, 4, 6, 6}, 62)},
            {0, 1, 3}, Attrs().ints("pads", {1, 1, 1, 1}));
}

TEST(GradCheck, ConvGroupedDilatedNoBias) {
  gradCheck("Conv", {random({1, 4, 8, 8}, 4), random({6, 2, 3, 3}, 5)}, {0, 1},
            Attrs()
                .i("group", 2)
                .ints("dilations", {2, 2})
                .ints("pads", {2, 2, 2, 2}));
}

// Groups of 4 and 8 channels (ResNeXt's): 3x3 at stride 1 on our own
// kernels (NarrowGroupConv.h; 13 columns: strips of 7 and 6, 9: of 5 and
// 4; 24 and 20 channels: a padded last block), else merged into groups of the
// host's channel block, 16 or 8 (GroupWidening.h). The outputs and gradients
// are the narrow convolution's; with a fused Relu, the outputs (finite
// differences across its kink would not hold).
TEST(GradCheck, ConvNarrowGroups) {
  struct Case {
    Shape x, w;
    int64_t groups, stride;
    bool relu;
  };
  for (const Case &c : {Case{{2, 32, 6, 13}, {32, 4, 3, 3}, 8, 1, false},
                        Case{{2, 32, 5, 9}, {32, 8, 3, 3}, 4, 1, false},
                        Case{{1, 16, 1, 1}, {16, 4, 3, 3}, 4, 1, false},
                        Case{{1, 16, 4, 5}, {16, 8, 3, 3}, 2, 1, true},
                        Case{{2, 24, 5, 6}, {24, 8, 3, 3}, 3, 1, false},
                        Case{{1, 20, 4, 4}, {20, 4, 3, 3}, 5, 1, false},
                        Case{{2, 32, 7, 7}, {32, 8, 3, 3}, 4, 2, false}}) {
    SCOPED_TRACE("groups " + std::to_string(c.groups) + ", " +
                 std::to_string(c.x[3]) + " columns");
    std::vector<Tensor> inputs = {awayFromZero(c.x, 70), random(c.w, 71),
                                  random({c.w[0]}, 72)};
    Attrs attrs = Attrs()
                      .i("group", c.groups)
                      .ints("pads", {1, 1, 1, 1})
                      .ints("strides", {c.stride, c.stride});
    if (c.relu)
      attrs.s("activation", "Relu");
    else
      gradCheck("Conv", inputs, {0, 1, 2}, attrs);
    std::unique_ptr<TrainBackend> own = cpuTrainBackend();
    own->enterThread();
    plan::Op op = makeOp("Conv", 3, inputs, attrs);
    auto kernel = llvm::cantFail(
        own->createKernel(OpInfo(op, {nullptr, nullptr, nullptr}), 0));
    Tensor y;
    ASSERT_FALSE(
        bool(kernel->forward({&inputs[0], &inputs[1], &inputs[2]}, y)));
    Tensor expected =
        refConv(inputs[0], inputs[1], &inputs[2],
                {{c.stride, c.stride}, {1, 1}, {1, 1, 1, 1}, c.groups});
    if (c.relu)
      for (int64_t i = 0; i < expected.numElements(); ++i)
        expected.data<float>()[i] = std::max(0.f, expected.data<float>()[i]);
    EXPECT_TRUE(allClose(llvm::cantFail(y.toPlain()), expected));
    // In 16-channel blocks, the padded lanes hold zeros, as oneDNN's do.
    int64_t channels = c.x[1], blocks = (channels + 15) / 16;
    if (channels % 16 && y.bytes() == size_t(blocks) * 16 * y.numElements() /
                                          channels * sizeof(float)) {
      int64_t positions = y.numElements() / channels;
      for (int64_t i = 0; i < positions * blocks * 16; ++i)
        if ((i / (positions / c.x[0]) / 16 % blocks) * 16 + i % 16 >= channels)
          ASSERT_EQ(y.data<float>()[i], 0.f) << "padded lane at " << i;
    }
  }
}

/// The gradients of a grouped 3x3 convolution of stride 1 and pads 1 with
/// output gradient `dy`, summed in double: dx, dw and db.
static std::vector<Tensor> refGroupedConvGrads(const Tensor &x, const Tensor &w,
                                               const Tensor &dy,
                                               int64_t groups) {
  int64_t n = x.dim(0), cin = x.dim(1), h = x.dim(2), wd = x.dim(3);
  int64_t cout = w.dim(0), c = w.dim(1), k = cout / groups;
  std::vector<double> dx(x.numElements()), dw(w.numElements()), db(cout);
  const float *xs = x.data<float>(), *ws = w.data<float>(),
              *dys = dy.data<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < cout; ++o)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < wd; ++j) {
          double g = dys[((b * cout + o) * h + i) * wd + j];
          db[o] += g;
          for (int64_t q = 0; q < c; ++q)
            for (int64_t t = 0; t < 9; ++t) {
              int64_t ih = i + t / 3 - 1, iw = j + t % 3 - 1;
              if (ih < 0 || ih >= h || iw < 0 || iw >= wd)
                continue;
              int64_t at = ((b * cin + o / k * c + q) * h + ih) * wd + iw;
              dx[at] += g * ws[(o * c + q) * 9 + t];
              dw[(o * c + q) * 9 + t] += g * xs[at];
            }
        }
  std::vector<Tensor> out;
  for (auto [sums, shape] :
       {std::pair(&dx, x.shape()), {&dw, w.shape()}, {&db, Shape{cout}}}) {
    Tensor t(DType::F32, shape);
    for (size_t i = 0; i < sums->size(); ++i)
      t.data<float>()[i] = float((*sums)[i]);
    out.push_back(std::move(t));
  }
  return out;
}

// Grouped 3x3 convolutions at stride 1 that on AVX-512 hosts our own
// Winograd runs in 16-channel blocks (ConvGrad.cpp), each group a slice of
// the blocks: groups of 16 channels on a 28x28 image (the forward and the
// backward-data), of 48 on 18x30 (the same) and on 28x28 (the weight
// gradient too), of 24 on 28x28 (in the 8-channel blocks oneDNN chooses
// for them); elsewhere oneDNN's direct kernels. The outputs, with a
// fused Relu too, and every element of the gradients against sums in
// double (finite differences over Winograd's rounding are too noisy for
// thousands of products a sum).
TEST(GradCheck, ConvGroupedWinogradShape) {
  struct Case {
    Shape x, w;
    int64_t groups;
    bool relu;
  };
  for (const Case &c : {Case{{2, 32, 28, 28}, {32, 16, 3, 3}, 2, false},
                        Case{{2, 96, 18, 30}, {96, 48, 3, 3}, 2, false},
                        Case{{1, 96, 28, 28}, {96, 48, 3, 3}, 2, false},
                        Case{{1, 48, 28, 28}, {48, 24, 3, 3}, 2, false},
                        Case{{2, 32, 28, 28}, {32, 16, 3, 3}, 2, true}}) {
    SCOPED_TRACE(Tensor(DType::F32, c.x).typeString() + " in " +
                 std::to_string(c.groups) + " groups" +
                 (c.relu ? ", Relu" : ""));
    std::vector<Tensor> inputs = {random(c.x, 73), random(c.w, 74),
                                  random({c.w[0]}, 75)};
    Attrs attrs = Attrs().i("group", c.groups).ints("pads", {1, 1, 1, 1});
    if (c.relu)
      attrs.s("activation", "Relu");
    std::unique_ptr<TrainBackend> own = cpuTrainBackend();
    own->enterThread();
    plan::Op op = makeOp("Conv", 3, inputs, attrs);
    auto kernel = llvm::cantFail(
        own->createKernel(OpInfo(op, {nullptr, nullptr, nullptr}), 0));
    std::vector<const Tensor *> args = {&inputs[0], &inputs[1], &inputs[2]};
    Tensor y;
    ASSERT_FALSE(bool(kernel->forward(args, y)));
    Tensor expected = refConv(inputs[0], inputs[1], &inputs[2],
                              {{1, 1}, {1, 1}, {1, 1, 1, 1}, c.groups});
    if (c.relu)
      for (int64_t i = 0; i < expected.numElements(); ++i)
        expected.data<float>()[i] = std::max(0.f, expected.data<float>()[i]);
    EXPECT_TRUE(allClose(llvm::cantFail(y.toPlain()), expected, 1e-4f, 1e-4f));
    if (c.relu)
      continue;
    Tensor dy = random(expected.shape(), 76);
    std::vector<Tensor> grads(3);
    ASSERT_FALSE(
        bool(kernel->backward(args, y, dy, {true, true, true}, grads)));
    std::vector<Tensor> want =
        refGroupedConvGrads(inputs[0], inputs[1], dy, c.groups);
    for (int i = 0; i < 3; ++i) {
      SCOPED_TRACE("input " + std::to_string(i));
      // Winograd's error follows the sums' magnitude (432-3528 products).
      float largest = 0.f;
      for (int64_t e = 0; e < want[i].numElements(); ++e)
        largest = std::max(largest, std::fabs(want[i].data<float>()[e]));
      EXPECT_TRUE(allClose(llvm::cantFail(grads[i].toPlain()), want[i], 0.f,
                           3e-5f * largest));
    }
  }
}

// Depthwise windows whose weight gradient oneDNN 2.6 leaves to its gemm
// fallback (5x5, dilated 3x3), computed by DepthwiseWeightGrad.h in the
// forward's channel-blocked layout; 20 channels pad the last block.
TEST(GradCheck, DepthwiseConvWeights) {
  gradCheck(
      "Conv",
      {random({2, 20, 9, 9}, 63), random({20, 1, 5, 5}, 64), random({20}, 65)},
      {0, 1, 2},
      Attrs()
          .i("group", 20)
          .ints("pads", {2, 2, 2, 2})
          .ints("strides", {2, 2}));
  gradCheck("Conv", {random({2, 24, 8, 7}, 66), random({24, 1, 3, 3}, 67)},
            {0, 1},
            Attrs()
                .i("group", 24)
                .ints("dilations", {2, 2})
                .ints("pads", {2, 1, 2, 1}));
  gradCheck("Conv", {random({1, 8, 6, 6}, 68), random({8, 1, 5, 5}, 69)}, {1},
            Attrs().i("group", 8).ints("pads", {1, 2, 3, 2}));
}

TEST(GradCheck, Activations) {
  for (const char *type : {"Relu", "LeakyRelu", "Elu", "Sigmoid", "Tanh"})
    gradCheck(type, {awayFromZero({2, 3, 4, 4}, 6)}, {0});
  // ReLU6 as MobileNet has it: gradient 1 inside (0, 0.5), 0 outside.
  Tensor x = awayFromZero({2, 3, 4, 4}, 7);
  for (int64_t i = 0; i < x.numElements(); ++i)
    if (std::abs(x.data<float>()[i] - 0.5f) < 0.05f)
      x.data<float>()[i] += 0.1f;
  gradCheck("Clip", {x}, {0}, Attrs().f("min", 0.f).f("max", 0.5f));
}

TEST(GradCheck, MaxPool) {
  gradCheck("MaxPool", {distinct({2, 3, 6, 6}, 8)}, {0},
            Attrs().ints("kernel_shape", {2, 2}).ints("strides", {2, 2}),
            1e-3f);
  gradCheck("MaxPool", {distinct({1, 2, 7, 7}, 9)}, {0},
            Attrs()
                .ints("kernel_shape", {3, 3})
                .ints("strides", {2, 2})
                .i("ceil_mode", 1),
            1e-3f);
}

TEST(GradCheck, AveragePools) {
  gradCheck("AveragePool", {random({2, 3, 7, 7}, 10)}, {0},
            Attrs()
                .ints("kernel_shape", {3, 3})
                .ints("strides", {2, 2})
                .ints("pads", {1, 1, 1, 1}));
  gradCheck("GlobalAveragePool", {random({2, 5, 4, 4}, 11)}, {0});
}

TEST(GradCheck, Gemm) {
  gradCheck("Gemm", {random({3, 5}, 12), random({4, 5}, 13), random({4}, 14)},
            {0, 1, 2}, Attrs().i("trans_b", 1));
  gradCheck("Gemm",
            {random({5, 3}, 15), random({5, 4}, 16), random({3, 4}, 17)},
            {0, 1, 2}, Attrs().i("trans_a", 1).f("alpha", 0.5f).f("beta", 2.f));
}

// Attention's products of two activations: batch dimensions broadcast
// (one B for both A's leading indices, then both batched).
TEST(GradCheck, BatchedMatMul) {
  gradCheck("MatMul", {random({2, 3, 3, 4}, 60), random({3, 4, 5}, 61)},
            {0, 1});
  gradCheck("MatMul", {random({2, 1, 3, 4}, 62), random({1, 2, 4, 5}, 63)},
            {0, 1});
}

// Attention (fuseTrainableAttention) through its perms: ViT's
// [tokens, batch * heads, d] sources, K read as K^T (perm 1, 2, 0) and the
// result written back to [tokens, batch * heads, d]; then plain operands,
// K^T with its own rows contiguous.
TEST(GradCheck, Attention) {
  Attrs vit = Attrs()
                  .ints("q_perm", {1, 0, 2})
                  .ints("k_perm", {1, 2, 0})
                  .ints("v_perm", {1, 0, 2})
                  .ints("out_perm", {1, 0, 2})
                  .f("scale", 0.45f);
  gradCheck(
      "Attention",
      {random({4, 3, 5}, 80), random({6, 3, 5}, 81), random({6, 3, 2}, 82)},
      {0, 1, 2}, vit);
  Attrs plain = Attrs()
                    .ints("q_perm", {0, 1, 2})
                    .ints("k_perm", {0, 1, 2})
                    .ints("v_perm", {0, 1, 2})
                    .ints("out_perm", {0, 1, 2})
                    .f("scale", 1.3f);
  gradCheck(
      "Attention",
      {random({2, 4, 5}, 83), random({2, 5, 6}, 84), random({2, 6, 3}, 85)},
      {0, 1, 2}, plain);
}

// Where passes each element's gradient to the side it came from; the mask
// and the other side broadcast.
TEST(GradCheck, WhereMaskedFill) {
  Tensor mask(DType::Bool, {3, 1});
  const uint8_t picks[] = {1, 0, 1};
  std::copy(picks, picks + 3, mask.data<uint8_t>());
  gradCheck("Where", {mask, random({3, 4}, 64), random({4}, 65)}, {1, 2});
}

TEST(GradCheck, ExpandTriluCumSum) {
  gradCheck("Expand", {random({3, 1}, 66), Tensor::fromInts({3}, {2, 3, 4})},
            {0});
  gradCheck("Trilu", {random({2, 3, 4}, 67), Tensor::fromInts({1}, {1})}, {0},
            Attrs().i("upper", 0));
  gradCheck("CumSum", {random({2, 5}, 68), Tensor::fromInts({}, {1})}, {0},
            Attrs().i("exclusive", 1).i("reverse", 0));
}

TEST(GradCheck, ScatterND) {
  // Rows 2 and 0 of the data replaced (or added to) by the updates.
  Tensor rows = Tensor::fromInts({2, 1}, {2, -3});
  for (const char *reduction : {"none", "add"})
    gradCheck("ScatterND", {random({3, 4}, 69), rows, random({2, 4}, 70)},
              {0, 2}, Attrs().s("reduction", reduction));
}

TEST(GradCheck, MatMul) {
  gradCheck("MatMul", {random({2, 3, 4}, 18), random({4, 5}, 19)}, {0, 1});
}

TEST(GradCheck, BroadcastingBinaryOps) {
  for (const char *type : {"Add", "Sub", "Mul"}) {
    gradCheck(type, {random({2, 3, 4, 4}, 20), random({3, 1, 1}, 21)}, {0, 1});
    gradCheck(type, {random({2, 3, 4}, 22), random({2, 3, 4}, 23)}, {0, 1});
    gradCheck(type, {random({2, 3, 1, 1}, 24), random({2, 3, 4, 4}, 25)},
              {0, 1});
  }
}

// Over 32768 elements, so that the loops run in parallel, in the patterns
// models have: a bias over the last axis, a per-channel scale (squeeze-
// excitation), broadcasts on both sides, and one along a middle axis.
TEST(GradCheck, BroadcastingBinaryOpsInParallel) {
  std::pair<Shape, Shape> shapes[] = {{{8, 64, 96}, {96}},
                                      {{2, 16, 40, 40}, {2, 16, 1, 1}},
                                      {{4, 1, 96}, {1, 128, 1}},
                                      {{16, 40, 64}, {16, 1, 64}}};
  for (const char *type : {"Add", "Sub", "Mul", "Div"})
    for (auto &[a, b] : shapes)
      gradCheck(type, {random(a, 80), random(b, 81, 0.5f, 2.f)}, {0, 1},
                Attrs(), 1e-2f, /*threads=*/2);
}

TEST(GradCheck, Views) {
  gradCheck("Flatten", {random({2, 3, 2, 2}, 24)}, {0}, Attrs().i("axis", 1));
  gradCheck("Reshape", {random({2, 3, 4}, 25)}, {0},
            Attrs().ints("shape", {6, 4}));
  gradCheck("Identity", {random({3, 4}, 26)}, {0});
}

TEST(GradCheck, Concat) {
  gradCheck("Concat",
            {random({1, 2, 3, 3}, 27), random({1, 3, 3, 3}, 28),
             random({1, 1, 3, 3}, 29)},
            {0, 1, 2}, Attrs().i("axis", 1));
}

// At batch 2 in channel-blocked layouts the gradient's slices are copies of
// runs (ShapeGrad.cpp); with an input in another block size, reorders. Both
// give the plain gradient's slices, in each input's layout.
TEST(ConcatGrad, SlicesBlockedGradients) {
  LayoutCase setup;
  TrainBackend &backend = *setup.backend;
  using cpu::Tag;
  auto blocked = [&](const Tensor &t, Tag tag) {
    return setup.blocked(t, tag);
  };
  Tensor a = random({2, 16, 3, 3}, 70), b = random({2, 32, 3, 3}, 71);
  for (Tag bTag : {Tag::aBcd16b, Tag::aBcd8b}) {
    SCOPED_TRACE(bTag == Tag::aBcd16b ? "runs" : "reorders");
    std::vector<Tensor> inputs = {blocked(a, Tag::aBcd16b), blocked(b, bTag)};
    plan::Op op = makeOp("Concat", 2, inputs, Attrs().i("axis", 1));
    OpInfo info(op, {nullptr, nullptr});
    auto kernel = backend.createKernel(info, 0);
    ASSERT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
    std::vector<const Tensor *> args = {&inputs[0], &inputs[1]};
    Tensor y;
    ASSERT_FALSE(bool((*kernel)->forward(args, y)));
    Tensor r = random({2, 48, 3, 3}, 72);
    std::vector<Tensor> grads(2);
    ASSERT_FALSE(bool((*kernel)->backward(args, y, blocked(r, Tag::aBcd16b),
                                          {true, true}, grads)));
    for (int i = 0; i < 2; ++i) {
      EXPECT_TRUE(cpu::descOf(grads[i]) == cpu::descOf(inputs[i]));
      Tensor plain = llvm::cantFail(grads[i].toPlain());
      int64_t channels = inputs[i].dim(1), first = i == 0 ? 0 : 16;
      for (int64_t n = 0; n < 2; ++n)
        for (int64_t c = 0; c < channels; ++c)
          for (int64_t k = 0; k < 9; ++k)
            ASSERT_EQ(plain.data<float>()[(n * channels + c) * 9 + k],
                      r.data<float>()[(n * 48 + first + c) * 9 + k])
                << "input " << i << " n " << n << " c " << c;
    }
  }
}

// A value per channel (squeeze-excitation's scale) on an activation in a
// channel-blocked layout, 20 channels so that the last block is padded, or
// channels-last (at 40x40 too, rows in parallel), the scale plain or, per
// item, in the activation's layout (as the Conv before it writes it): the
// op and its gradients run in that layout, against plain loops here.
TEST(BinaryGrad, ChannelBroadcastInTheActivationsLayout) {
  LayoutCase setup;
  TrainBackend &backend = *setup.backend;
  using cpu::Tag;
  const int64_t n = 2, c = 20;
  for (auto [tag, side] : {std::pair{Tag::aBcd16b, 3},
                           {Tag::aBcd8b, 3},
                           {Tag::acdb, 3},
                           {Tag::acdb, 40}}) {
    int64_t hw = side * side;
    Tensor x = random({n, c, side, side}, 73),
           g = random({n, c, side, side}, 74);
    for (int scaleKind = 0; scaleKind < 3; ++scaleKind)
      for (const char *type : {"Mul", "Div", "Sub"}) {
        // 0: per channel; 1: per item, plain; 2: per item, x's layout.
        bool perItem = scaleKind > 0;
        bool scaleFirst = std::string(type) == "Sub";
        SCOPED_TRACE(std::string(type) + " scale kind " +
                     std::to_string(scaleKind) + " side " +
                     std::to_string(side) +
                     (tag == Tag::aBcd16b  ? " by 16"
                      : tag == Tag::aBcd8b ? " by 8"
                                           : " channels-last"));
        Shape sShape = perItem ? Shape{n, c, 1, 1} : Shape{c, 1, 1};
        Tensor s = random(sShape, 75, 0.5f, 2.f);
        Tensor bx = setup.blocked(x, tag);
        std::vector<Tensor> inputs = {bx, scaleKind == 2 ? setup.blocked(s, tag)
                                                         : s};
        if (scaleFirst)
          std::swap(inputs[0], inputs[1]);
        plan::Op op = makeOp(type, 2, inputs, Attrs());
        OpInfo info(op, {nullptr, nullptr});
        auto kernel = backend.createKernel(info, 0);
        ASSERT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
        std::vector<const Tensor *> args = {&inputs[0], &inputs[1]};
        Tensor y;
        ASSERT_FALSE(bool((*kernel)->forward(args, y)));
        EXPECT_TRUE(y.sameLayout(bx));
        std::vector<Tensor> grads(2);
        ASSERT_FALSE(bool((*kernel)->backward(args, y, setup.blocked(g, tag),
                                              {true, true}, grads)));
        int xi = scaleFirst ? 1 : 0;
        EXPECT_TRUE(grads[xi].sameLayout(bx));
        Tensor out = llvm::cantFail(y.toPlain()),
               dx = llvm::cantFail(grads[xi].toPlain()),
               ds = llvm::cantFail(grads[1 - xi].toPlain());
        ASSERT_EQ(ds.shape(), sShape);
        std::vector<double> wantDs(ds.numElements(), 0.0);
        for (int64_t i = 0; i < x.numElements(); ++i) {
          int64_t ch = i / hw % c, si = perItem ? i / hw : ch;
          float xv = x.data<float>()[i], sv = s.data<float>()[si],
                gv = g.data<float>()[i];
          float want, wantDx;
          double part;
          if (std::string(type) == "Mul") {
            want = xv * sv, wantDx = gv * sv, part = double(gv) * xv;
          } else if (std::string(type) == "Div") {
            want = xv / sv, wantDx = gv / sv,
            part = -double(gv) * xv / (double(sv) * sv);
          } else {
            want = sv - xv, wantDx = -gv, part = gv;
          }
          wantDs[si] += part;
          ASSERT_NEAR(out.data<float>()[i], want, 1e-6f) << i;
          ASSERT_NEAR(dx.data<float>()[i], wantDx, 1e-6f) << i;
        }
        for (int64_t i = 0; i < ds.numElements(); ++i)
          EXPECT_NEAR(ds.data<float>()[i], wantDs[i], 1e-4 * side) << i;
      }
  }
}

// SiLU's x * sigmoid(x) and Div on same-shape operands, the first one
// channel-blocked: the gradients stay in its layout, padding 0.
TEST(BinaryGrad, SameShapeInABlockedLayout) {
  LayoutCase setup;
  TrainBackend &backend = *setup.backend;
  Tensor x = random({2, 20, 3, 3}, 76), y = random({2, 20, 3, 3}, 77, 0.5f),
         g = random({2, 20, 3, 3}, 78);
  Tensor bx = setup.blocked(x, cpu::Tag::aBcd16b);
  for (const char *type : {"Mul", "Div"}) {
    SCOPED_TRACE(type);
    bool mul = std::string(type) == "Mul";
    std::vector<Tensor> inputs = {bx, y};
    plan::Op op = makeOp(type, 2, inputs, Attrs());
    OpInfo info(op, {nullptr, nullptr});
    auto kernel = llvm::cantFail(backend.createKernel(info, 0));
    std::vector<const Tensor *> args = {&inputs[0], &inputs[1]};
    Tensor out;
    ASSERT_FALSE(bool(kernel->forward(args, out)));
    std::vector<Tensor> grads(2);
    ASSERT_FALSE(bool(kernel->backward(args, out, g, {true, true}, grads)));
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(grads[i].sameLayout(bx)) << i;
      // The last block holds channels 16-19 in lanes 0-3 of 16.
      const float *raw = grads[i].data<float>();
      for (int64_t k = 0; k < 2 * 2 * 9 * 16; ++k)
        if (k / (9 * 16) % 2 == 1 && k % 16 >= 4)
          ASSERT_EQ(raw[k], 0.f) << "padding at " << k;
      Tensor d = llvm::cantFail(grads[i].toPlain());
      for (int64_t k = 0; k < x.numElements(); ++k) {
        float xv = x.data<float>()[k], yv = y.data<float>()[k],
              gv = g.data<float>()[k];
        float want = mul ? (i == 0 ? gv * yv : gv * xv)
                         : (i == 0 ? gv / yv : -gv * xv / (yv * yv));
        ASSERT_NEAR(d.data<float>()[k], want, 1e-5f) << i << " " << k;
      }
    }
  }
}

// ConvNeXt's permutes between channels-last [N, C, H, W] and [N, H, W, C]
// are views in both passes: the gradient of [N, H, W, C] -> [N, C, H, W]
// from a channels-last gradient is that gradient's buffer, and of
// [N, C, H, W] -> [N, H, W, C] a channels-last view of the plain one.
TEST(TransposeGrad, ChannelsLastPermutesAreViews) {
  LayoutCase setup;
  TrainBackend &backend = *setup.backend;
  gradCheck("Transpose", {random({2, 3, 4, 5}, 86)}, {0},
            Attrs().ints("perm", {0, 2, 3, 1}));
  gradCheck("Transpose", {random({2, 4, 5, 3}, 87)}, {0},
            Attrs().ints("perm", {0, 3, 1, 2}));
  for (auto [perm, in, g] :
       {std::tuple{std::vector<int64_t>{0, 3, 1, 2}, random({2, 4, 5, 3}, 88),
                   setup.blocked(random({2, 3, 4, 5}, 89), cpu::Tag::acdb)},
        std::tuple{std::vector<int64_t>{0, 2, 3, 1}, random({2, 3, 4, 5}, 90),
                   random({2, 4, 5, 3}, 91)}}) {
    plan::Op op = makeOp("Transpose", 1, {in}, Attrs().ints("perm", perm));
    OpInfo info(op, {nullptr});
    auto kernel = llvm::cantFail(backend.createKernel(info, 0));
    std::vector<const Tensor *> args = {&in};
    Tensor out;
    ASSERT_FALSE(bool(kernel->forward(args, out)));
    std::vector<Tensor> grads(1);
    ASSERT_FALSE(bool(kernel->backward(args, out, g, {true}, grads)));
    EXPECT_EQ(grads[0].rawData(), g.rawData());
    EXPECT_EQ(grads[0].shape(), in.shape());
    // Output axis i is input axis perm[i]: the gradient's element at input
    // index [a0, a1, a2, a3] is g's at [a_perm[0], ..., a_perm[3]].
    Tensor want = llvm::cantFail(
        cpu::transposePlain(llvm::cantFail(g.toPlain()),
                            perm[1] == 3 ? std::vector<int64_t>{0, 2, 3, 1}
                                         : std::vector<int64_t>{0, 3, 1, 2},
                            setup.ctx));
    EXPECT_TRUE(allClose(llvm::cantFail(grads[0].toPlain()), want, 0.f, 0.f));
  }
}

// Repeated and negative ids: their rows' gradients add up.
TEST(GradCheck, GatherRows) {
  gradCheck("Gather",
            {random({5, 3}, 40), Tensor::fromInts({2, 2}, {4, 0, -1, 2})}, {0},
            Attrs().i("axis", 0));
}

// A transformer's first-token pick (x[:, 0]) gathers along axis 1.
TEST(GradCheck, GatherAlongAnInnerAxis) {
  gradCheck("Gather", {random({2, 4, 3}, 41), Tensor::fromInts({2}, {0, -1})},
            {0}, Attrs().i("axis", 1));
}

TEST(GradCheck, BatchNormTraining) {
  Tensor mean = random({3}, 30), var = random({3}, 31, 0.5f, 2.f);
  gradCheck("BatchNormalization",
            {random({4, 3, 5, 5}, 32), random({3}, 33, 0.5f, 1.5f),
             random({3}, 34), mean, var},
            {0, 1, 2});
  // 20 plain channels: normalized in a blocked layout with a padded block.
  gradCheck("BatchNormalization",
            {random({4, 20, 3, 3}, 35), random({20}, 36, 0.5f, 1.5f),
             random({20}, 37), random({20}, 38), random({20}, 39, 0.5f, 2.f)},
            {0, 1, 2});
  // 1-D (BatchNorm1d): run by the 4-D kernel on a [N, C, 1, W] view.
  gradCheck("BatchNormalization",
            {random({3, 20, 7}, 40), random({20}, 41, 0.5f, 1.5f),
             random({20}, 42), random({20}, 43), random({20}, 44, 0.5f, 2.f)},
            {0, 1, 2});
}

/// A fused Relu (fuseTrainableActivations) trains exactly as the op and a
/// Relu after it: same output, same gradients of every input (the mask of
/// the fused backward is the output > 0, the Relu's the input > 0).
void checkFusedRelu(const std::string &type, std::vector<Tensor> inputs,
                    const std::vector<int> &check, const Attrs &attrs) {
  SCOPED_TRACE(type + " + Relu");
  std::unique_ptr<TrainBackend> own = cpuTrainBackend();
  TrainBackend &backend = *own;
  auto kernelOf = [&](const plan::Op &op, size_t arity) {
    OpInfo info(op, std::vector<const Tensor *>(arity, nullptr));
    auto kernel = backend.createKernel(info, 0);
    EXPECT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
    return std::move(*kernel);
  };
  std::vector<const Tensor *> args;
  for (Tensor &t : inputs)
    args.push_back(&t);
  llvm::SmallVector<bool, 8> need(inputs.size(), false);
  for (int i : check)
    need[i] = true;

  // Unfused: the op, then a Relu.
  auto op = kernelOf(makeOp(type, inputs.size(), inputs, attrs), inputs.size());
  Tensor z = random({1}, 1), zero = Tensor::fromFloats({1}, {0});
  plan::Op reluOp = makeOp("Relu", 1, {z}, Attrs());
  auto relu = kernelOf(reluOp, 1);
  Tensor pre, y;
  ASSERT_FALSE(bool(op->forward(args, pre)));
  ASSERT_FALSE(bool(relu->forward({&pre}, y)));
  std::mt19937 rng(9);
  Tensor r = randomTensor(y.shape(), rng);
  std::vector<Tensor> dPre(1), grads(inputs.size());
  ASSERT_FALSE(bool(relu->backward({&pre}, y, r, {true}, dPre)));
  ASSERT_FALSE(bool(op->backward(args, pre, dPre[0], need, grads)));

  // Fused.
  Attrs fusedAttrs = attrs;
  fusedAttrs.s("activation", "Relu");
  auto fused =
      kernelOf(makeOp(type, inputs.size(), inputs, fusedAttrs), inputs.size());
  Tensor fy;
  ASSERT_FALSE(bool(fused->forward(args, fy)));
  // The gradient in the output's layout, its buffer shared (with `kept`,
  // which must stay as it is) and with the kernel holding its only
  // reference (it masks it in place: TrainKernel::backward).
  auto ctx = std::make_shared<cpu::CPUContext>();
  Tensor shared = cpu::reorderTo(r, cpu::descOf(fy), ctx).clone();
  Tensor kept = shared;
  std::vector<Tensor> fusedGrads(inputs.size()), ownedGrads(inputs.size());
  ASSERT_FALSE(bool(fused->backward(args, fy, shared, need, fusedGrads)));
  EXPECT_TRUE(allClose(llvm::cantFail(kept.toPlain()), r, 0, 0));
  ASSERT_FALSE(
      bool(fused->backward(args, fy, shared.clone(), need, ownedGrads)));

  EXPECT_TRUE(allClose(llvm::cantFail(fy.toPlain()),
                       llvm::cantFail(y.toPlain()), 1e-5f, 1e-6f));
  int masked = 0;
  for (float v : llvm::ArrayRef(llvm::cantFail(y.toPlain()).data<float>(),
                                y.numElements()))
    masked += v == 0;
  EXPECT_GT(masked, y.numElements() / 10); // the mask matters
  for (int i : check) {
    SCOPED_TRACE("input " + std::to_string(i));
    EXPECT_TRUE(allClose(llvm::cantFail(fusedGrads[i].toPlain()),
                         llvm::cantFail(grads[i].toPlain()), 1e-4f, 1e-5f));
    EXPECT_TRUE(allClose(llvm::cantFail(ownedGrads[i].toPlain()),
                         llvm::cantFail(grads[i].toPlain()), 1e-4f, 1e-5f));
  }
}

TEST(FusedRelu, ConvTrainsAsConvThenRelu) {
  for (auto [x, w] : {std::pair{Shape{2, 8, 9, 9}, Shape{16, 8, 3, 3}},
                      // Winograd on one thread (ConvGrad.cpp).
                      std::pair{Shape{2, 16, 16, 16}, Shape{16, 16, 3, 3}}}) {
    int before = omp_get_max_threads();
    omp_set_num_threads(1);
    checkFusedRelu("Conv", {random(x, 50), random(w, 51), random({w[0]}, 52)},
                   {0, 1, 2}, Attrs().ints("pads", {1, 1, 1, 1}));
    // With a summed input: the Relu applies to the sum.
    Shape y = {x[0], w[0], x[2], x[3]};
    checkFusedRelu(
        "Conv",
        {random(x, 53), random(w, 54), random({w[0]}, 55), random(y, 56)},
        {0, 1, 2, 3}, Attrs().ints("pads", {1, 1, 1, 1}));
    omp_set_num_threads(before);
  }
}

// A Relu mask moved to the MaxPool after the Conv (moveReluMasksToMaxPools):
// the MaxPool masks its output gradient, the Conv then leaves it as it is,
// and the Conv's input, weight and bias gradients are those of the Conv
// masking it, bit for bit.
TEST(MovedReluMask, ConvThenMaxPoolTrainsAsBefore) {
  std::unique_ptr<TrainBackend> own = cpuTrainBackend();
  TrainBackend &backend = *own;
  backend.enterThread();
  Tensor x = random({2, 8, 10, 10}, 60), w = random({16, 8, 3, 3}, 61),
         bias = random({16}, 62);
  std::vector<Tensor> inputs = {x, w, bias};
  std::vector<const Tensor *> args = {&x, &w, &bias};
  Attrs window = Attrs().ints("kernel_shape", {3, 3}).ints("strides", {2, 2});
  auto kernelOf = [&](const std::string &type, const std::vector<Tensor> &in,
                      const Attrs &attrs) {
    plan::Op op = makeOp(type, in.size(), in, attrs);
    OpInfo info(op, std::vector<const Tensor *>(in.size(), nullptr));
    auto kernel = backend.createKernel(info, 0);
    EXPECT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
    return std::move(*kernel);
  };
  // Conv + Relu -> MaxPool backwards; returns the Conv's three gradients.
  // With `owned`, the MaxPool holds the only reference to its output
  // gradient and masks it in place.
  auto grads = [&](bool moved, bool poolMasks, bool owned = false) {
    Attrs convAttrs =
        Attrs().ints("pads", {1, 1, 1, 1}).s("activation", "Relu");
    Attrs poolAttrs = window;
    if (moved)
      convAttrs.i("relu_grad_masked", 1);
    if (poolMasks)
      poolAttrs.i("grad_mask_relu", 1);
    auto conv = kernelOf("Conv", inputs, convAttrs);
    Tensor y, pooled;
    EXPECT_FALSE(bool(conv->forward(args, y)));
    auto pool = kernelOf("MaxPool", {y}, poolAttrs);
    EXPECT_FALSE(bool(pool->forward({&y}, pooled)));
    std::mt19937 rng(3);
    Tensor r = randomTensor(pooled.shape(), rng);
    std::vector<Tensor> dy(1), d(3);
    EXPECT_FALSE(
        bool(pool->backward({&y}, pooled, owned ? r.clone() : r, {true}, dy)));
    EXPECT_FALSE(bool(conv->backward(args, y, dy[0], {true, true, true}, d)));
    for (Tensor &t : d)
      t = llvm::cantFail(t.toPlain());
    return d;
  };
  std::vector<Tensor> before = grads(false, false), after = grads(true, true),
                      inPlace = grads(true, true, true),
                      unmasked = grads(true, false);
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("input " + std::to_string(i));
    EXPECT_TRUE(allClose(after[i], before[i], 0, 0));
    EXPECT_TRUE(allClose(inPlace[i], before[i], 0, 0));
    // Neither kernel masking gives other gradients: the mask matters.
    EXPECT_FALSE(allClose(unmasked[i], before[i], 1e-3f, 1e-3f));
  }
}

// The weight gradient of an ungrouped Conv comes in the layout the forward
// reads its weights in (the optimizer then keeps the weights there): fed
// back in that layout, the weights give the plain weights' output. A
// grouped Conv's gradient is plain.
TEST(ConvWeights, GradientInTheForwardsLayout) {
  std::unique_ptr<TrainBackend> own = cpuTrainBackend();
  TrainBackend &backend = *own;
  backend.enterThread();
  for (int64_t groups : {1, 2}) {
    SCOPED_TRACE("groups " + std::to_string(groups));
    std::vector<Tensor> inputs = {random({2, 16, 8, 8}, 60),
                                  random({32, 16 / groups, 3, 3}, 61)};
    Attrs attrs = Attrs().ints("pads", {1, 1, 1, 1}).i("group", groups);
    plan::Op op = makeOp("Conv", 2, inputs, attrs);
    OpInfo info(op, {nullptr, nullptr});
    auto kernel = backend.createKernel(info, 0);
    ASSERT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
    Tensor y, again;
    ASSERT_FALSE(bool((*kernel)->forward({&inputs[0], &inputs[1]}, y)));
    std::vector<Tensor> grads(2);
    ASSERT_FALSE(bool((*kernel)->backward({&inputs[0], &inputs[1]}, y, y,
                                          {false, true}, grads)));
    EXPECT_EQ(grads[1].isPlain(), groups > 1) << grads[1].typeString();
    Tensor w = llvm::cantFail(inputs[1].toLayoutOf(grads[1]));
    ASSERT_TRUE(w.sameLayout(grads[1]));
    ASSERT_FALSE(bool((*kernel)->forward({&inputs[0], &w}, again)));
    EXPECT_TRUE(allClose(llvm::cantFail(again.toPlain()),
                         llvm::cantFail(y.toPlain()), 0, 0));
  }
}

TEST(FusedRelu, BatchNormTrainsAsBatchNormThenRelu) {
  checkFusedRelu("BatchNormalization",
                 {random({4, 16, 5, 5}, 53), random({16}, 54, 0.5f, 1.5f),
                  random({16}, 55), random({16}, 56),
                  random({16}, 57, 0.5f, 2.f)},
                 {0, 1, 2}, Attrs());
}

// A ResNet block's Add and Relu; an Add that broadcasts per channel (in
// the blocked layout of its first operand) and one that broadcasts
// otherwise (plain loops, the Relu a pass after them).
TEST(FusedRelu, AddTrainsAsAddThenRelu) {
  LayoutCase layouts;
  auto blocked = [&](const Tensor &t) {
    return layouts.blocked(t, cpu::Tag::nChw16c);
  };
  checkFusedRelu("Add", {random({2, 8, 5, 5}, 40), random({2, 8, 5, 5}, 41)},
                 {0, 1}, Attrs());
  checkFusedRelu(
      "Add",
      {blocked(random({2, 24, 5, 5}, 42)), blocked(random({2, 24, 5, 5}, 43))},
      {0, 1}, Attrs());
  // Three 8-channel blocks: oneDNN 2.6's post-op there wrote past the
  // output (reluAsPostOp); the Relu is a pass.
  checkFusedRelu(
      "Add",
      {layouts.blocked(random({2, 24, 56, 56}, 48), cpu::Tag::nChw8c),
       layouts.blocked(random({2, 24, 56, 56}, 49), cpu::Tag::nChw8c)},
      {0, 1}, Attrs());
  checkFusedRelu(
      "Add", {blocked(random({2, 24, 5, 5}, 44)), random({1, 24, 1, 1}, 45)},
      {0, 1}, Attrs());
  checkFusedRelu("Add", {random({2, 3, 4}, 46), random({4}, 47)}, {0, 1},
                 Attrs());
}

// Shape arithmetic on i64 has no Relu to fuse: a plan that says so is
// refused with a clear error, not run without its Relu.
TEST(FusedRelu, AddOfIntegersRefusesARelu) {
  std::unique_ptr<TrainBackend> own = cpuTrainBackend();
  Tensor a(DType::I64, {2}), b(DType::I64, {2});
  a.data<int64_t>()[0] = a.data<int64_t>()[1] = 1;
  b.data<int64_t>()[0] = b.data<int64_t>()[1] = -3;
  plan::Op op = makeOp("Add", 2, {a, b}, Attrs().s("activation", "Relu"));
  auto kernel = own->createKernel(OpInfo(op, {nullptr, nullptr}), 0);
  ASSERT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
  Tensor y;
  llvm::Error e = (*kernel)->forward({&a, &b}, y);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e))
                .find("Add with a fused Relu takes f32, not i64"),
            std::string::npos);
}

TEST(FusedRelu, OtherActivationsAreRefused) {
  std::unique_ptr<TrainBackend> own = cpuTrainBackend();
  TrainBackend &backend = *own;
  for (const char *type : {"Conv", "BatchNormalization", "Add"}) {
    std::vector<Tensor> inputs = {random({1, 2, 3, 3}, 58),
                                  random({2, 2, 1, 1}, 59)};
    if (std::string(type) == "BatchNormalization")
      inputs = {random({1, 2, 3, 3}, 58), random({2}, 1), random({2}, 2),
                random({2}, 3), random({2}, 4, 0.5f, 1.f)};
    plan::Op op =
        makeOp(type, inputs.size(), inputs, Attrs().s("activation", "Sigmoid"));
    OpInfo info(op, std::vector<const Tensor *>(inputs.size(), nullptr));
    auto kernel = backend.createKernel(info, 0);
    ASSERT_FALSE(bool(kernel));
    EXPECT_NE(llvm::toString(kernel.takeError())
                  .find("can fuse a Relu only, not Sigmoid"),
              std::string::npos);
  }
}

TEST(BatchNormTraining, UpdatesRunningStatistics) {
  std::unique_ptr<TrainBackend> own = cpuTrainBackend();
  TrainBackend &backend = *own;
  Tensor x = random({8, 2, 3, 3}, 35);
  Tensor scale = Tensor::fromFloats({2}, {1, 1}),
         bias = Tensor::fromFloats({2}, {0, 0}),
         mean = Tensor::fromFloats({2}, {1, -1}),
         var = Tensor::fromFloats({2}, {2, 3});
  std::vector<Tensor> inputs = {x, scale, bias, mean, var};
  plan::Op op =
      makeOp("BatchNormalization", 5, inputs, Attrs().f("momentum", 0.9f));
  OpInfo info(op, std::vector<const Tensor *>(5, nullptr));
  auto kernel = llvm::cantFail(backend.createKernel(info, 0));
  Tensor y;
  ASSERT_FALSE(bool(kernel->forward({&x, &scale, &bias, &mean, &var}, y)));
  for (int c = 0; c < 2; ++c) {
    double sum = 0, squares = 0;
    int64_t n = 0;
    for (int64_t b = 0; b < 8; ++b)
      for (int64_t i = 0; i < 9; ++i, ++n) {
        double v = x.data<float>()[(b * 2 + c) * 9 + i];
        sum += v;
        squares += v * v;
      }
    double m = sum / n, unbiased = (squares - n * m * m) / (n - 1);
    EXPECT_NEAR(mean.data<float>()[c], 0.9 * (c ? -1 : 1) + 0.1 * m, 1e-5);
    EXPECT_NEAR(var.data<float>()[c], 0.9 * (c ? 3 : 2) + 0.1 * unbiased, 1e-5);
  }
}

// An input in 4-channel blocks (a grouped Conv's output: ResNeXt's), for
// which oneDNN has only its reference batch norm, is normalized in the
// 16-blocked layout: the same output and gradients as a plain input.
TEST(BatchNormTraining, RunsFourChannelBlocksSixteenBlocked) {
  LayoutCase setup;
  TrainBackend &backend = *setup.backend;
  using cpu::Tag;
  Tensor x = random({4, 20, 3, 3}, 40), g = random({4, 20, 3, 3}, 41);
  std::vector<Tensor> params = {random({20}, 42, 0.5f, 1.5f), random({20}, 43),
                                random({20}, 44), random({20}, 45, 0.5f, 2.f)};
  auto run = [&](const Tensor &in, Tensor &y, std::vector<Tensor> &grads) {
    std::vector<Tensor> inputs = {in};
    for (const Tensor &p : params)
      inputs.push_back(p.clone()); // the running statistics update in place
    plan::Op op = makeOp("BatchNormalization", 5, inputs, Attrs());
    OpInfo info(op, std::vector<const Tensor *>(5, nullptr));
    auto kernel = llvm::cantFail(backend.createKernel(info, 0));
    std::vector<const Tensor *> args;
    for (const Tensor &t : inputs)
      args.push_back(&t);
    ASSERT_FALSE(bool(kernel->forward(args, y)));
    grads.assign(5, Tensor());
    ASSERT_FALSE(bool(
        kernel->backward(args, y, g, {true, true, true, false, false}, grads)));
  };
  Tensor want, got;
  std::vector<Tensor> wantGrads, gotGrads;
  run(x, want, wantGrads);
  run(setup.blocked(x, Tag::aBcd4b), got, gotGrads);
  EXPECT_TRUE(got.sameLayout(setup.blocked(x, Tag::aBcd16b)));
  EXPECT_TRUE(allClose(llvm::cantFail(got.toPlain()),
                       llvm::cantFail(want.toPlain()), 1e-5f, 1e-5f));
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(allClose(llvm::cantFail(gotGrads[i].toPlain()),
                         llvm::cantFail(wantGrads[i].toPlain()), 1e-4f, 1e-5f))
        << "input " << i;
}

TEST(DropoutTraining, MasksAndScalesConsistently) {
  TrainBackendOptions options;
  options.seed = 3;
  std::unique_ptr<TrainBackend> own = cpuTrainBackend(options);
  TrainBackend &backend = *own;
  // Large enough for the mask to be drawn by several threads.
  Tensor x = random({256, 256}, 36, 0.5f, 1.f);
  plan::Op op = makeOp("Dropout", 1, {x}, Attrs().f("ratio", 0.25f));
  OpInfo info(op, {nullptr});
  auto kernel = llvm::cantFail(backend.createKernel(info, 0));
  Tensor y, dx[1];
  ASSERT_FALSE(bool(kernel->forward({&x}, y)));
  Tensor dy = random({256, 256}, 37);
  llvm::SmallVector<bool, 1> need = {true};
  ASSERT_FALSE(bool(kernel->backward({&x}, y, dy, need, dx)));
  int64_t dropped = 0;
  for (int64_t i = 0; i < x.numElements(); ++i) {
    float scale = y.data<float>()[i] / x.data<float>()[i];
    if (scale == 0.f)
      ++dropped;
    else
      EXPECT_NEAR(scale, 1 / 0.75f, 1e-5);
    EXPECT_FLOAT_EQ(dx[0].data<float>()[i], dy.data<float>()[i] * scale);
  }
  EXPECT_NEAR(double(dropped) / x.numElements(), 0.25, 0.01);

  // A second step draws a fresh mask.
  Tensor y2;
  ASSERT_FALSE(bool(kernel->forward({&x}, y2)));
  EXPECT_NE(0, std::memcmp(y.rawData(), y2.rawData(), y.bytes()));

  // The same seed and op index draw the same mask, on one thread too;
  // another seed does not.
  options.numThreads = 1;
  std::unique_ptr<TrainBackend> same = cpuTrainBackend(options);
  auto again = llvm::cantFail(same->createKernel(info, 0));
  ASSERT_FALSE(bool(again->forward({&x}, y2)));
  EXPECT_EQ(0, std::memcmp(y.rawData(), y2.rawData(), y.bytes()));
  options.seed = 4;
  std::unique_ptr<TrainBackend> other = cpuTrainBackend(options);
  auto different = llvm::cantFail(other->createKernel(info, 0));
  ASSERT_FALSE(bool(different->forward({&x}, y2)));
  EXPECT_NE(0, std::memcmp(y.rawData(), y2.rawData(), y.bytes()));

  // A ratio of 0 passes the input and the gradient on unchanged, and still
  // counts its draws (checkpoints record them).
  plan::Op none = makeOp("Dropout", 1, {x}, Attrs().f("ratio", 0.f));
  OpInfo noneInfo(none, {nullptr});
  auto passing = llvm::cantFail(backend.createKernel(noneInfo, 0));
  ASSERT_FALSE(bool(passing->forward({&x}, y)));
  ASSERT_FALSE(bool(passing->backward({&x}, y, dy, need, dx)));
  EXPECT_EQ(0, std::memcmp(y.rawData(), x.rawData(), x.bytes()));
  EXPECT_EQ(0, std::memcmp(dx[0].rawData(), dy.rawData(), dy.bytes()));
  EXPECT_EQ(passing->randomDraws(), 1u);
}

TEST(TrainBackend, UntrainableOpIsNamed) {
  std::unique_ptr<TrainBackend> own = cpuTrainBackend();
  TrainBackend &backend = *own;
  Tensor x = random({2, 2}, 38);
  plan::Op op = makeOp("NonMaxSuppression", 1, {x}, Attrs());
  OpInfo info(op, {nullptr});
  auto kernel = backend.createKernel(info, 0);
  ASSERT_FALSE(bool(kernel));
  EXPECT_EQ(
      llvm::toString(kernel.takeError()),
      "op type 'NonMaxSuppression' cannot be trained yet (no backward kernel)");
}

// Backward kernels that exist only for some forms of their op say which.
TEST(TrainBackend, UnsupportedFormsAreNamed) {
  std::unique_ptr<TrainBackend> own = cpuTrainBackend();
  TrainBackend &backend = *own;
  Tensor x = random({3, 4}, 70), y;
  // A Conv's summed input must have the output's shape.
  Tensor image = random({1, 3, 4, 4}, 71), w = random({4, 3, 3, 3}, 72),
         addend = random({1, 4, 3, 3}, 73);
  plan::Op conv = makeOp("Conv", 4, {image, w, Tensor(), addend}, Attrs());
  OpInfo convInfo(conv, {nullptr, nullptr, nullptr, nullptr});
  auto convKernel = llvm::cantFail(backend.createKernel(convInfo, 0));
  EXPECT_EQ(
      llvm::toString(convKernel->forward({&image, &w, nullptr, &addend}, y)),
      "summed input is f32[1, 4, 3, 3], expected shape [1, 4, 2, 2]");

  plan::Op pad = makeOp(
      "Pad", 1, {x}, Attrs().s("mode", "reflect").ints("pads", {0, 1, 0, 1}));
  OpInfo padInfo(pad, {nullptr});
  auto padKernel = backend.createKernel(padInfo, 0);
  ASSERT_FALSE(bool(padKernel));
  EXPECT_EQ(llvm::toString(padKernel.takeError()),
            "the backward of Pad in mode 'reflect' is not supported (constant "
            "only)");
  // Integer Mod runs forward (Swin's pads); a float one has no gradient yet.
  Tensor ints = Tensor::fromInts({2}, {7, -7}),
         three = Tensor::fromInts({}, {3});
  plan::Op mod = makeOp("Mod", 2, {ints, three}, Attrs());
  OpInfo modInfo(mod, {nullptr, nullptr});
  auto modKernel = llvm::cantFail(backend.createKernel(modInfo, 0));
  ASSERT_FALSE(bool(modKernel->forward({&ints, &three}, y)));
  EXPECT_EQ(y.data<int64_t>()[1], 2);
  EXPECT_EQ(llvm::toString(modKernel->forward({&x, &x}, y)),
            "Mod of floats cannot be trained yet (no gradient)");

  // Attention trains without a mask only.
  Tensor mask(DType::Bool, {3, 3});
  plan::Op attention = makeOp("Attention", 4, {x, x, x, mask},
                              Attrs()
                                  .ints("q_perm", {0, 1})
                                  .ints("k_perm", {1, 0})
                                  .ints("v_perm", {0, 1})
                                  .ints("out_perm", {0, 1}));
  OpInfo attentionInfo(attention, {nullptr, nullptr, nullptr, nullptr});
  auto attentionKernel = backend.createKernel(attentionInfo, 0);
  ASSERT_FALSE(bool(attentionKernel));
  EXPECT_EQ(llvm::toString(attentionKernel.takeError()),
            "Attention with a mask cannot be trained");
  auto attentionError = [&](Attrs attrs, std::vector<Tensor> in) {
    plan::Op op = makeOp("Attention", 3, in, attrs);
    OpInfo info(op, {nullptr, nullptr, nullptr});
    auto kernel = backend.createKernel(info, 0);
    if (!kernel)
      return llvm::toString(kernel.takeError());
    Tensor out;
    return llvm::toString((*kernel)->forward({&in[0], &in[1], &in[2]}, out));
  };
  auto perms = [](std::vector<int64_t> q) {
    return Attrs()
        .ints("q_perm", std::move(q))
        .ints("k_perm", {0, 1})
        .ints("v_perm", {0, 1})
        .ints("out_perm", {0, 1});
  };
  Tensor q = random({3, 4}, 92), k = random({4, 5}, 93);
  EXPECT_EQ(attentionError(perms({0, 1}).i("q_index", 0), {q, k, q}),
            "Attention with `q_index` cannot be trained");
  EXPECT_EQ(attentionError(perms({0, 0}), {q, k, q}),
            "Attention: q_perm, k_perm, v_perm and out_perm must be "
            "permutations of one rank of 2 or more");
  EXPECT_EQ(attentionError(perms({0, 1}), {q, k, random({4, 2}, 94)}),
            "Attention: Q [3, 4], K^T [4, 5] and V [4, 2] do not fit");
  // Q as q's transpose: its rows are q's columns, strided.
  EXPECT_EQ(attentionError(perms({1, 0}),
                           {random({4, 3}, 95), k, random({5, 2}, 96)}),
            "Attention: a matrix of q, k, v or the result has its rows "
            "strided");

  Tensor rows = Tensor::fromInts({1, 1}, {0});
  plan::Op scatter = makeOp("ScatterND", 3, {x, rows, random({1, 4}, 74)},
                            Attrs().s("reduction", "mul"));
  OpInfo scatterInfo(scatter, {nullptr, nullptr, nullptr});
  auto scatterKernel = backend.createKernel(scatterInfo, 0);
  ASSERT_FALSE(bool(scatterKernel));
  EXPECT_EQ(llvm::toString(scatterKernel.takeError()),
            "ScatterND with reduction 'mul' cannot be trained yet (no backward "
            "kernel)");
}

} // namespace

TEST(GradCheck, DivMaxMinPow) {
  Tensor a = distinct({2, 3, 4}, 41), b = distinct({3, 4}, 42);
  gradCheck("Div", {random({2, 3, 4}, 43), random({3, 1}, 44, 0.5f, 2.f)},
            {0, 1});
  // Distinct values on both sides: no ties within the step.
  for (float &v : llvm::MutableArrayRef(b.data<float>(), b.numElements()))
    v += 0.025f;
  gradCheck("Max", {a, b}, {0, 1});
  gradCheck("Min", {a, b}, {0, 1});
  gradCheck("Pow", {random({2, 3}, 45, 0.5f, 2.f), random({2, 3}, 46)}, {0, 1},
            Attrs(), 1e-3f);
}

TEST(GradCheck, MoreElementwise) {
  // Gelu, Swish and HardSwish come from the training rewrites (fuseSelfGates).
  for (const char *type :
       {"Neg", "Selu", "Softsign", "Erf", "Gelu", "Swish", "HardSwish"})
    gradCheck(type, {awayFromZero({2, 3, 4}, 47)}, {0});
  gradCheck("Reciprocal", {random({2, 3}, 48, 0.5f, 2.f)}, {0});
  gradCheck("HardSigmoid", {random({2, 3, 4}, 49, -2.f, 2.f)}, {0},
            Attrs().f("alpha", 0.2f).f("beta", 0.5f));
}

// GELU's own kernel (GeluGrad.cpp) against the erf form in double, over the
// tails and across the spans it splits a tensor into, plain and in a
// channel-blocked layout whose last block is padded; NaN and +inf pass, and
// -inf gives NaN as x * (erf(x / sqrt 2) + 1) * 0.5, the exported graph, does.
TEST(GeluGrad, MatchesTheErfForm) {
  LayoutCase setup;
  TrainBackend &backend = *setup.backend;
  const int64_t c = 20, hw = 45 * 45; // 40,500 elements: three spans
  Tensor x = random({1, c, 45, 45}, 90, -12.f, 12.f);
  float *xv = x.data<float>();
  const float special[] = {0.f,  -0.f,  1e-30f,   -1e-30f,   6.f, -6.f,
                           1e4f, -1e4f, INFINITY, -INFINITY, NAN};
  std::copy(std::begin(special), std::end(special), xv);
  Tensor dy = random(x.shape(), 91);
  auto exact = [](double v) {
    double cdf = 0.5 * (1 + std::erf(v / std::sqrt(2.0)));
    double pdf = std::exp(-v * v / 2) / std::sqrt(2 * M_PI);
    return std::pair<double, double>(v * cdf, cdf + v * pdf);
  };
  for (bool blocked : {false, true}) {
    SCOPED_TRACE(blocked ? "aBcd16b" : "plain");
    Tensor in = blocked ? setup.blocked(x, cpu::Tag::aBcd16b) : x;
    plan::Op op = makeOp("Gelu", 1, {in}, Attrs());
    OpInfo info(op, {nullptr});
    auto kernel = backend.createKernel(info, 0);
    ASSERT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
    Tensor y;
    ASSERT_FALSE(bool((*kernel)->forward({&in}, y)));
    EXPECT_TRUE(cpu::descOf(y) == cpu::descOf(in));
    std::vector<Tensor> dx(1);
    Tensor dyIn = blocked ? setup.blocked(dy, cpu::Tag::aBcd16b) : dy;
    ASSERT_FALSE(bool((*kernel)->backward({&in}, y, dyIn, {true}, dx)));
    Tensor yPlain = llvm::cantFail(y.toPlain());
    Tensor dxPlain = llvm::cantFail(dx[0].toPlain());
    for (int64_t i = 0; i < c * hw; ++i) {
      float v = xv[i], got = yPlain.data<float>()[i];
      if (std::isnan(v) || v == -INFINITY) {
        EXPECT_TRUE(std::isnan(got)) << "x " << v;
        continue;
      }
      if (v == INFINITY) {
        EXPECT_EQ(got, INFINITY);
        continue;
      }
      auto [value, slope] = exact(v);
      double scale = std::max(1.0, std::abs(double(v)));
      ASSERT_NEAR(got, value, 4e-7 * scale) << "x " << v;
      ASSERT_NEAR(dxPlain.data<float>()[i], dy.data<float>()[i] * slope,
                  1e-6 * scale)
          << "x " << v;
    }
  }
}

TEST(GradCheck, SoftmaxAndLogSoftmax) {
  for (const char *type : {"Softmax", "LogSoftmax"}) {
    gradCheck(type, {random({2, 3, 4}, 50)}, {0}, Attrs().i("axis", 1));
    gradCheck(type, {random({3, 5}, 51)}, {0}, Attrs().i("axis", -1));
  }
}

TEST(GradCheck, TransposeAndSlice) {
  gradCheck("Transpose", {random({2, 3, 4}, 52)}, {0},
            Attrs().ints("perm", {2, 0, 1}));
  gradCheck("Slice", {random({4, 6}, 53)}, {0},
            Attrs()
                .ints("starts", {1, 5})
                .ints("ends", {4, 0})
                .ints("axes", {0, 1})
                .ints("steps", {2, -2}));
  // ShuffleNet's channel shuffle and split: a 5-D transpose, and channel
  // halves (runs over the whole trailing axes) and a middle row range.
  gradCheck("Transpose", {random({2, 2, 3, 2, 4}, 56)}, {0},
            Attrs().ints("perm", {0, 2, 1, 3, 4}));
  for (auto [start, end, axis] :
       {std::tuple{3, 6, 1}, std::tuple{0, 3, 1}, std::tuple{1, 3, 2}})
    gradCheck("Slice", {random({2, 6, 4, 3}, 57)}, {0},
              Attrs()
                  .ints("starts", {start})
                  .ints("ends", {end})
                  .ints("axes", {axis}));
}

TEST(GradCheck, Reductions) {
  gradCheck("ReduceMean", {random({2, 3, 4}, 54)}, {0},
            Attrs().ints("axes", {1}).i("keepdims", 1));
  gradCheck("ReduceSum", {random({2, 3, 4}, 55)}, {0},
            Attrs().ints("axes", {0, 2}).i("keepdims", 0));
  // ConvNeXt's channels-last LayerNorm means, over 32768 elements (rows in
  // parallel), and a sum of everything.
  gradCheck("ReduceMean", {random({4, 20, 20, 24}, 60)}, {0},
            Attrs().ints("axes", {-1}).i("keepdims", 1), 1e-2f, 2);
  gradCheck("ReduceSum", {random({3, 5}, 61)}, {0}, Attrs().i("keepdims", 0));
  for (const char *type : {"ReduceMax", "ReduceMin"})
    gradCheck(type, {distinct({2, 3, 4}, 56)}, {0},
              Attrs().ints("axes", {-1}).i("keepdims", 0));
}

TEST(GradCheck, LayerNormalization) {
  gradCheck("LayerNormalization",
            {random({2, 3, 4}, 57), random({3, 4}, 58), random({3, 4}, 59)},
            {0, 1, 2}, Attrs().i("axis", 1).f("epsilon", 1e-5f));
  // ConvNeXt's channels-last LayerNorm, rows in parallel (two threads sum
  // the scale and bias gradients apart).
  gradCheck("LayerNormalization",
            {random({4, 18, 18, 32}, 67), random({32}, 68), random({32}, 69)},
            {0, 1, 2}, Attrs().i("axis", -1).f("epsilon", 1e-6f), 1e-2f, 2);
}

TEST(GradCheck, LRNPadPRelu) {
  gradCheck(
      "LRN", {random({2, 5, 3, 3}, 60)}, {0},
      Attrs().i("size", 3).f("alpha", 1e-2f).f("beta", 0.75f).f("bias", 1.f));
  gradCheck("Pad", {random({2, 3, 4}, 61)}, {0},
            Attrs().s("mode", "constant").ints("pads", {0, 1, -1, 1, 2, 0}));
  gradCheck("PRelu", {awayFromZero({2, 3, 4}, 62), random({3, 1}, 63)}, {0, 1});
}

TEST(GradCheck, ConvTranspose) {
  gradCheck(
      "ConvTranspose",
      {random({1, 4, 3, 3}, 64), random({4, 3, 2, 2}, 65), random({6}, 66)},
      {0, 1, 2},
      Attrs()
          .ints("strides", {2, 2})
          .ints("pads", {0, 1, 1, 0})
          .ints("output_padding", {1, 1})
          .i("group", 2));
}

// Resize is linear in its input: each mode and a coordinate transformation
// that reaches past the edges (clamped taps read twice), upsampling and
// downsampling, sizes with a dimension copied (0), scales given at run
// time, and a crop whose outside is the extrapolation constant.
TEST(GradCheck, Resize) {
  auto attrs = [](const std::string &mode, const std::string &transform) {
    return Attrs()
        .s("mode", mode)
        .s("coordinate_transformation_mode", transform)
        .s("nearest_mode", "round_prefer_floor")
        .f("cubic_coeff_a", -0.75f)
        .i("exclude_outside", 0)
        .f("extrapolation_value", 0.f);
  };
  gradCheck("Resize", {random({2, 3, 4, 5}, 70)}, {0},
            attrs("linear", "half_pixel").floats("scales", {1, 1, 2, 1.5f}));
  gradCheck("Resize", {random({1, 2, 5, 6}, 71)}, {0},
            attrs("cubic", "align_corners")
                .floats("scales", {1, 1, 1, 1})
                .ints("sizes", {0, 0, 3, 8}));
  gradCheck("Resize", {random({1, 2, 4, 4}, 72)}, {0},
            attrs("nearest", "asymmetric").floats("scales", {1, 1, 0.5f, 3}));
  Tensor scales(DType::F32, {4});
  std::copy_n(std::vector<float>{1, 1, 1.5f, 0.75f}.data(), 4,
              scales.data<float>());
  gradCheck("Resize", {random({2, 2, 4, 4}, 73), scales}, {0},
            attrs("linear", "pytorch_half_pixel"));
  gradCheck("Resize", {random({1, 1, 4, 4}, 74)}, {0},
            attrs("linear", "tf_crop_and_resize")
                .f("extrapolation_value", 5.f)
                .floats("scales", {1, 1, 1.5f, 1.5f})
                .floats("roi", {0, 0, -0.2f, 0.1f, 1, 1, 0.9f, 1.3f}));
}

// LSTM, GRU (both linear_before_reset forms) and RNN through time: every
// input, W, R, B and the initial state, forward, reverse and
// bidirectional; T 3, batch 2, input 3, hidden 2. A backward that dropped
// the state's gradient between steps, or R's bias for GRU, fails it.
TEST(GradCheck, RecurrentLayers) {
  struct Case {
    const char *type;
    int64_t gates;
    const char *direction;
    int64_t lbr;
    bool state;
  };
  const Case cases[] = {
      {"LSTM", 4, "forward", 0, true}, {"LSTM", 4, "bidirectional", 0, false},
      {"GRU", 3, "reverse", 1, true},  {"GRU", 3, "bidirectional", 0, true},
      {"GRU", 3, "forward", 0, false}, {"RNN", 1, "bidirectional", 0, true}};
  unsigned seed = 100;
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(c.type) + " " + c.direction + " lbr " +
                 std::to_string(c.lbr));
    int64_t d = std::string(c.direction) == "bidirectional" ? 2 : 1, h = 2,
            gh = c.gates * h;
    int64_t rows = std::string(c.type) == "LSTM" ? 2 * d : d;
    std::vector<Tensor> inputs = {
        random({3, 2, 3}, seed++), random({d, gh, 3}, seed++),
        random({d, gh, h}, seed++), random({d, 2 * gh}, seed++)};
    std::vector<int> check = {0, 1, 2, 3};
    if (c.state) {
      inputs.push_back(random({rows, 2, h}, seed++));
      check.push_back(4);
    }
    gradCheck(c.type, inputs, check,
              Attrs()
                  .i("hidden_size", h)
                  .s("direction", c.direction)
                  .i("linear_before_reset", c.lbr));
  }
}

// Training hands kernels the parameters as their constants (Backprop.cpp)
// and updates them in place each step: a forward that kept what it made
// from the first step's weights (ConvTranspose reordered them once) would
// train the layers before it only. The forward after an in-place update
// gives the updated weights' output.
TEST(ConvTransposeTraining, ForwardReadsWeightsUpdatedInPlace) {
  std::unique_ptr<TrainBackend> backend = cpuTrainBackend();
  backend->enterThread();
  std::vector<Tensor> inputs = {random({2, 8, 5, 5}, 301),
                                random({8, 4, 4, 4}, 302)};
  Attrs attrs = Attrs().ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
  plan::Op op = makeOp("ConvTranspose", 2, inputs, attrs);
  OpInfo info(op, {nullptr, &inputs[1]});
  auto kernel = backend->createKernel(info, 0);
  ASSERT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
  const Tensor *args[] = {&inputs[0], &inputs[1]};
  Tensor first, second;
  ASSERT_FALSE(bool((*kernel)->forward(args, first)));
  for (int64_t i = 0; i < inputs[1].numElements(); ++i)
    inputs[1].data<float>()[i] *= 2.f;
  ASSERT_FALSE(bool((*kernel)->forward(args, second)));
  Tensor a = llvm::cantFail(first.toPlain()),
         b = llvm::cantFail(second.toPlain());
  ASSERT_EQ(a.numElements(), b.numElements());
  for (int64_t i = 0; i < a.numElements(); ++i)
    EXPECT_NEAR(b.data<float>()[i], 2.f * a.data<float>()[i], 1e-4f) << i;
}

// A recurrent layer's input may come in a backend layout (a Conv's output
// before an LSTM): its forward gives the plain input's output; inputs that
// do not fit are named in one error.
TEST(RecurrentTraining, TakesLayoutsAndNamesMismatchedShapes) {
  LayoutCase c;
  Tensor x = random({3, 16, 4}, 401), w = random({1, 8, 4}, 402),
         r = random({1, 8, 2}, 403), b = random({1, 16}, 404);
  Attrs attrs = Attrs().i("hidden_size", 2).s("direction", "forward");
  plan::Op op = makeOp("LSTM", 4, {x, w, r, b}, attrs);
  auto kernel = c.backend->createKernel(
      OpInfo(op, std::vector<const Tensor *>(4, nullptr)), 0);
  ASSERT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
  Tensor xb = c.blocked(x, cpu::Tag::aBc16b), plain, fromBlocked;
  const Tensor *plainArgs[] = {&x, &w, &r, &b},
               *blockedArgs[] = {&xb, &w, &r, &b};
  ASSERT_FALSE(bool((*kernel)->forward(plainArgs, plain)));
  ASSERT_FALSE(bool((*kernel)->forward(blockedArgs, fromBlocked)));
  EXPECT_TRUE(allClose(fromBlocked, plain, 0.f, 0.f));
  Tensor r3 = random({1, 8, 3}, 405), y;
  const Tensor *bad[] = {&x, &w, &r3, &b};
  llvm::Error e = (*kernel)->forward(bad, y);
  EXPECT_EQ(llvm::toString(std::move(e)),
            "LSTM of input f32[3, 16, 4] with W f32[1, 8, 4], R f32[1, 8, 3], "
            "B f32[1, 16] and hidden_size 2: the shapes do not fit");
}
