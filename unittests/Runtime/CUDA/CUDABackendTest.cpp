//===- CUDABackendTest.cpp - the CUDA backend against the CPU's -----------===//
//
// Every CUDA kernel family runs small plans whose results must match the
// oneDNN CPU backend's (1e-4 relative to the largest expected value; f32
// with no TF32 on both), including the fusions the plan rewrites make, a
// plan split between the CPU and the GPU (transfers only at the
// boundaries), op types without a CUDA kernel (they run on the CPU and are
// reported) and the errors a kernel gives. ctest label: gpu. Without a GPU
// the program prints one line saying so and exits 77, which ctest counts
// as skipped.
//
//===----------------------------------------------------------------------===//

#include "../PlanBuilder.h"
#include "../Reference.h"
#include "../Train/TrainTestModels.h"

#include "heterps/Runtime/Backend.h"
#include "heterps/Runtime/Executor.h"
#include "heterps/Runtime/Train/Trainer.h"

#include "llvm/ADT/StringExtras.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>

using namespace heterps::runtime;
using namespace heterps::runtime::testutil;

namespace {

/// `p` with every op (or those `onGPU` accepts) on device type "gpu" of
/// kind cuda.
plan::Plan placed(plan::Plan p,
                  std::function<bool(const plan::Op &)> onGPU = nullptr) {
  for (plan::Op &op : *p.mutable_ops())
    if (!onGPU || onGPU(op))
      op.set_device("gpu");
  plan::DeviceType *t = p.add_device_types();
  t->set_name("gpu");
  t->set_kind("cuda");
  return p;
}

float relativeError(const Tensor &got, const Tensor &want) {
  EXPECT_EQ(got.shape(), want.shape());
  if (got.shape() != want.shape())
    return INFINITY;
  float scale = 1e-6f, worst = 0;
  for (int64_t i = 0; i < want.numElements(); ++i)
    scale = std::max(scale, std::abs(want.data<float>()[i]));
  for (int64_t i = 0; i < want.numElements(); ++i) {
    float d = std::abs(got.data<float>()[i] - want.data<float>()[i]);
    worst = std::max(worst, std::isnan(d) ? INFINITY : d);
  }
  return worst / scale;
}

std::vector<Tensor> runOn(const plan::Plan &p, llvm::ArrayRef<Tensor> inputs,
                          std::vector<std::string> *fallbacks = nullptr) {
  auto exec = Executor::create(p, ExecutorOptions());
  EXPECT_TRUE(bool(exec)) << llvm::toString(exec.takeError());
  if (!exec)
    return {};
  auto out = (*exec)->run(inputs);
  EXPECT_TRUE(bool(out)) << llvm::toString(out.takeError());
  if (fallbacks)
    *fallbacks = (*exec)->fallbacks();
  return out ? std::move(*out) : std::vector<Tensor>{};
}

/// Runs `p` on the CPU and on the GPU; every output must agree, and every
/// op must have had a CUDA kernel.
void expectSameOnGPU(const plan::Plan &p, std::vector<Tensor> inputs,
                     const std::string &what, float tolerance = 1e-4f) {
  SCOPED_TRACE(what);
  std::vector<Tensor> want = runOn(p, inputs);
  std::vector<std::string> fallbacks;
  std::vector<Tensor> got = runOn(placed(p), inputs, &fallbacks);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(fallbacks.empty()) << llvm::join(fallbacks, ", ");
  for (size_t k = 0; k < got.size(); ++k) {
    if (want[k].dtype() == DType::I64) {
      EXPECT_EQ(
          std::memcmp(got[k].rawData(), want[k].rawData(), want[k].bytes()), 0);
      continue;
    }
    EXPECT_LT(relativeError(got[k], want[k]), tolerance) << "output " << k;
  }
}

std::mt19937 rng(11);

/// A one-op plan over inputs of `shapes` (inputs; weights where
/// `weightsFrom` <= index) with one output of `out`.
plan::Plan oneOp(const std::string &type, std::vector<Shape> shapes, Shape out,
                 Attrs attrs = Attrs(), size_t weightsFrom = 1,
                 std::vector<Tensor> *inputs = nullptr) {
  PlanBuilder b;
  std::vector<int> args;
  for (size_t k = 0; k < shapes.size(); ++k) {
    Tensor t = randomTensor(shapes[k], rng);
    if (k < weightsFrom) {
      args.push_back(b.input("x" + std::to_string(k), shapes[k]));
      if (inputs)
        inputs->push_back(t);
    } else {
      args.push_back(b.weight("w" + std::to_string(k), t));
    }
  }
  b.output("y", b.op(type, args, out, attrs));
  return b.build();
}

void expectOneOp(const std::string &type, std::vector<Shape> shapes, Shape out,
                 Attrs attrs = Attrs(), size_t weightsFrom = 1) {
  std::vector<Tensor> inputs;
  plan::Plan p = oneOp(type, shapes, out, attrs, weightsFrom, &inputs);
  expectSameOnGPU(p, inputs, type + " " + shapeToString(shapes[0]));
}

TEST(CUDABackend, Convolutions) {
  // Plain, strided, asymmetric pads, depthwise, grouped, dilated, 1-D.
  expectOneOp("Conv", {{2, 8, 12, 12}, {16, 8, 3, 3}, {16}}, {2, 16, 12, 12},
              Attrs().ints("pads", {1, 1, 1, 1}));
  expectOneOp("Conv", {{2, 8, 13, 13}, {16, 8, 3, 3}}, {2, 16, 7, 7},
              Attrs().ints("pads", {1, 1, 1, 1}).ints("strides", {2, 2}));
  expectOneOp("Conv", {{1, 4, 9, 9}, {8, 4, 3, 3}}, {1, 8, 4, 4},
              Attrs().ints("pads", {0, 0, 1, 1}).ints("strides", {2, 2}));
  expectOneOp("Conv", {{2, 8, 10, 10}, {8, 1, 3, 3}, {8}}, {2, 8, 10, 10},
              Attrs().ints("pads", {1, 1, 1, 1}).i("group", 8));
  expectOneOp("Conv", {{2, 8, 10, 10}, {12, 2, 3, 3}}, {2, 12, 8, 8},
              Attrs().i("group", 4));
  expectOneOp("Conv", {{1, 4, 11, 11}, {6, 4, 3, 3}}, {1, 6, 7, 7},
              Attrs().ints("dilations", {2, 2}));
  expectOneOp("Conv", {{2, 4, 20}, {6, 4, 5}, {6}}, {2, 6, 20},
              Attrs().ints("pads", {2, 2}));
}

// Conv + BatchNormalization + Relu (folded and fused), a residual Add
// into a Conv, and ReLU6 as a Clip.
TEST(CUDABackend, ConvolutionFusions) {
  PlanBuilder b;
  int x = b.input("x", {2, 4, 8, 8});
  int y = b.op("Conv",
               {x, b.weight("w", randomTensor({4, 4, 3, 3}, rng)),
                b.weight("b", randomTensor({4}, rng))},
               {2, 4, 8, 8}, Attrs().ints("pads", {1, 1, 1, 1}));
  y = b.op("BatchNormalization",
           {y, b.weight("s", randomTensor({4}, rng, 0.5f, 1.5f)),
            b.weight("t", randomTensor({4}, rng)),
            b.weight("m", randomTensor({4}, rng)),
            b.weight("v", randomTensor({4}, rng, 0.5f, 1.5f))},
           {2, 4, 8, 8});
  y = b.op("Relu", {y}, {2, 4, 8, 8});
  int z = b.op("Conv", {y, b.weight("w2", randomTensor({4, 4, 1, 1}, rng))},
               {2, 4, 8, 8});
  z = b.op("Add", {z, x}, {2, 4, 8, 8});
  z = b.op("Relu", {z}, {2, 4, 8, 8});
  z = b.op("Conv", {z, b.weight("w3", randomTensor({8, 4, 3, 3}, rng))},
           {2, 8, 6, 6});
  z = b.op("Clip", {z}, {2, 8, 6, 6}, Attrs().f("min", 0.f).f("max", 0.5f));
  b.output("y", z);
  expectSameOnGPU(b.build(), {randomTensor({2, 4, 8, 8}, rng)}, "fusions");
  auto exec = llvm::cantFail(Executor::create(placed(b.build())));
  // Three Convs remain, each with its activation inside.
  EXPECT_EQ(exec->plan().ops_size(), 3);
}

// Layer normalisation over the last axis as PyTorch exports it (ReduceMean,
// Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add: ConvNeXt's, between its
// permutes) runs as one LayerNormalization kernel.
TEST(CUDABackend, DecomposedLayerNormRunsAsOneKernel) {
  PlanBuilder b;
  Shape shape = {2, 5, 7, 16}, reduced = {2, 5, 7, 1};
  int x = b.input("x", shape);
  Attrs last = Attrs().ints("axes", {-1}).i("keepdims", 1);
  int m = b.op("ReduceMean", {x}, reduced, last);
  int d = b.op("Sub", {x, m}, shape);
  int p =
      b.op("Pow", {d, b.weight("two", Tensor::fromFloats({}, {2.f}))}, shape);
  int v = b.op("ReduceMean", {p}, reduced, last);
  int e = b.op("Add", {v, b.weight("eps", Tensor::fromFloats({}, {1e-6f}))},
               reduced);
  int n = b.op("Div", {d, b.op("Sqrt", {e}, reduced)}, shape);
  int y = b.op("Mul", {n, b.weight("gamma", randomTensor({16}, rng))}, shape);
  b.output("y",
           b.op("Add", {y, b.weight("beta", randomTensor({16}, rng))}, shape));
  expectSameOnGPU(b.build(), {randomTensor(shape, rng, -2.f, 2.f)},
                  "decomposed layer norm");
  auto exec = llvm::cantFail(Executor::create(placed(b.build())));
  ASSERT_EQ(exec->plan().ops_size(), 1);
  EXPECT_EQ(exec->plan().ops(0).type(), "LayerNormalization");
}

TEST(CUDABackend, MatrixProducts) {
  expectOneOp("Gemm", {{5, 7}, {9, 7}, {9}}, {5, 9}, Attrs().i("trans_b", 1));
  expectOneOp("Gemm", {{7, 5}, {7, 9}, {5, 9}}, {5, 9},
              Attrs().i("trans_a", 1).f("alpha", 0.5f).f("beta", 2.f));
  expectOneOp("Gemm", {{3, 4}, {4, 6}, {1}}, {3, 6});
  expectOneOp("MatMul", {{2, 3, 5, 7}, {2, 3, 7, 4}}, {2, 3, 5, 4}, Attrs(), 2);
  expectOneOp("MatMul", {{4, 5, 7}, {7, 6}}, {4, 5, 6});
  expectOneOp("MatMul", {{5, 7}, {3, 7, 6}}, {3, 5, 6}, Attrs(), 2);
  expectOneOp("MatMul", {{7}, {7, 6}}, {6});
}

TEST(CUDABackend, Pooling) {
  expectOneOp("MaxPool", {{2, 3, 11, 11}}, {2, 3, 6, 6},
              Attrs()
                  .ints("kernel_shape", {3, 3})
                  .ints("strides", {2, 2})
                  .ints("pads", {1, 1, 1, 1}));
  expectOneOp("MaxPool", {{1, 2, 10, 10}}, {1, 2, 5, 5},
              Attrs()
                  .ints("kernel_shape", {3, 3})
                  .ints("strides", {2, 2})
                  .i("ceil_mode", 1));
  for (int64_t include : {0, 1})
    expectOneOp("AveragePool", {{2, 3, 9, 9}}, {2, 3, 5, 5},
                Attrs()
                    .ints("kernel_shape", {3, 3})
                    .ints("strides", {2, 2})
                    .ints("pads", {1, 1, 1, 1})
                    .i("count_include_pad", include));
  expectOneOp("GlobalAveragePool", {{2, 5, 7, 7}}, {2, 5, 1, 1});
  expectOneOp("GlobalMaxPool", {{2, 5, 7, 7}}, {2, 5, 1, 1});
}

TEST(CUDABackend, ElementWise) {
  for (const char *type :
       {"Relu", "LeakyRelu", "Elu", "Sigmoid", "Tanh", "HardSigmoid", "Abs",
        "Exp", "Neg", "Erf", "Softplus", "Softsign", "Selu", "Floor", "Ceil"})
    expectOneOp(type, {{3, 4, 5}}, {3, 4, 5});
  expectOneOp("Clip", {{3, 4, 5}}, {3, 4, 5},
              Attrs().f("min", -0.3f).f("max", 0.6f));
  // Positive inputs.
  for (const char *type : {"Log", "Sqrt", "Reciprocal"}) {
    PlanBuilder b;
    int x = b.input("x", {4, 6});
    b.output("y", b.op(type, {b.op("Exp", {x}, {4, 6})}, {4, 6}));
    expectSameOnGPU(b.build(), {randomTensor({4, 6}, rng)}, type);
  }
  // Broadcasting: trailing, middle and leading axes, scalars.
  for (const char *type : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    expectOneOp(type, {{2, 3, 4, 5}, {3, 1, 5}}, {2, 3, 4, 5});
    expectOneOp(type, {{2, 3, 4, 5}, {2, 3, 4, 5}}, {2, 3, 4, 5}, Attrs(), 2);
    expectOneOp(type, {{1, 4, 1}, {3, 1, 6}}, {3, 4, 6}, Attrs(), 2);
    expectOneOp(type, {{6, 5}, {}}, {6, 5});
  }
  PlanBuilder b;
  int x = b.input("x", {3, 4});
  b.output("y", b.op("Pow",
                     {b.op("Exp", {x}, {3, 4}),
                      b.weight("e", randomTensor({4}, rng))},
                     {3, 4}));
  expectSameOnGPU(b.build(), {randomTensor({3, 4}, rng)}, "Pow");
}

TEST(CUDABackend, SoftmaxAndNormalisation) {
  expectOneOp("Softmax", {{4, 1000}}, {4, 1000});
  expectOneOp("Softmax", {{3, 7, 5}}, {3, 7, 5}, Attrs().i("axis", 1));
  expectOneOp("LogSoftmax", {{6, 33}}, {6, 33});
  expectOneOp("Softmax", {{2, 3, 4}}, {2, 3, 4},
              Attrs().i("axis", 1).i("coerce_2d", 1));
  expectOneOp("LayerNormalization", {{4, 10, 768}, {768}, {768}}, {4, 10, 768});
  expectOneOp("LayerNormalization", {{2, 3, 4, 5}, {20}}, {2, 3, 4, 5},
              Attrs().i("axis", 2).f("epsilon", 1e-3f));
  // A batch norm that follows no Conv is not folded: its own kernel.
  PlanBuilder b;
  int x = b.input("x", {2, 4, 5, 5});
  int y = b.op("BatchNormalization",
               {x, b.weight("s", randomTensor({4}, rng, 0.5f, 1.5f)),
                b.weight("t", randomTensor({4}, rng)),
                b.weight("m", randomTensor({4}, rng)),
                b.weight("v", randomTensor({4}, rng, 0.5f, 1.5f))},
               {2, 4, 5, 5});
  b.output("y", y);
  expectSameOnGPU(b.build(), {randomTensor({2, 4, 5, 5}, rng)}, "batch norm");
}

TEST(CUDABackend, DataMovement) {
  {
    PlanBuilder b;
    int x = b.input("x", {2, 3, 4});
    int c = b.op("Concat", {x, b.weight("a", randomTensor({2, 5, 4}, rng)), x},
                 {2, 11, 4}, Attrs().i("axis", 1));
    std::vector<int> parts =
        b.multiOp("Split", {c}, {{2, 4, 4}, {2, 7, 4}},
                  Attrs().i("axis", 1).ints("split", {4, 7}));
    b.output("first", parts[0]);
    b.output("second", parts[1]);
    b.output("t", b.op("Transpose", {parts[1]}, {4, 2, 7},
                       Attrs().ints("perm", {2, 0, 1})));
    expectSameOnGPU(b.build(), {randomTensor({2, 3, 4}, rng)}, "joins");
  }
  expectOneOp("Slice", {{5, 8, 6}}, {2, 3, 6},
              Attrs()
                  .ints("starts", {1, -1})
                  .ints("ends", {5, 0})
                  .ints("axes", {0, 1})
                  .ints("steps", {2, -3}));
  {
    PlanBuilder b;
    int x = b.input("x", {6, 4});
    int idx = b.weight("i", Tensor::fromInts({2, 2}, {0, -1, 3, 2}));
    b.output("rows", b.op("Gather", {x, idx}, {2, 2, 4}));
    b.output("cols", b.op("Gather", {x, idx}, {6, 2, 2}, Attrs().i("axis", 1)));
    expectSameOnGPU(b.build(), {randomTensor({6, 4}, rng)}, "gather");
  }
  expectOneOp("ReduceMean", {{2, 3, 4, 5}}, {2, 3, 1, 1},
              Attrs().ints("axes", {2, 3}));
  expectOneOp("ReduceSum", {{2, 3, 4, 5}}, {3, 5},
              Attrs().ints("axes", {0, 2}).i("keepdims", 0));
  expectOneOp("ReduceMax", {{2, 3, 40}}, {1, 1, 1});
  expectOneOp("ReduceMin", {{7, 3}}, {7, 1}, Attrs().ints("axes", {-1}));
  {
    PlanBuilder b;
    int x = b.input("x", {2, 3, 5, 5});
    int pads = b.weight("p", Tensor::fromInts({8}, {0, 0, 1, -1, 0, 0, 2, 1}));
    b.output("y", b.op("Pad", {x, pads}, {2, 3, 8, 5}));
    expectSameOnGPU(b.build(), {randomTensor({2, 3, 5, 5}, rng)}, "Pad");
  }
  expectOneOp("Flatten", {{2, 3, 4}}, {2, 12});
  expectOneOp("Reshape", {{2, 3, 4}}, {4, 6}, Attrs().ints("shape", {4, -1}));
}

/// x [N, 1, 6, 6] -> Conv -> Relu -> MaxPool (the GPU) -> Flatten -> Gemm
/// (the CPU), as a two-stage heterogeneous plan would run it.
plan::Plan smallCNN() {
  std::mt19937 r(3);
  PlanBuilder b;
  int x = b.input("x", {-1, 1, 6, 6});
  int y = b.op("Conv",
               {x, b.weight("w1", randomTensor({4, 1, 3, 3}, r)),
                b.weight("b1", randomTensor({4}, r))},
               {-1, 4, 6, 6}, Attrs().ints("pads", {1, 1, 1, 1}));
  y = b.op("Relu", {y}, {-1, 4, 6, 6});
  y = b.op("MaxPool", {y}, {-1, 4, 3, 3},
           Attrs().ints("kernel_shape", {2, 2}).ints("strides", {2, 2}));
  y = b.op("Flatten", {y}, {-1, 36});
  y = b.op("Gemm",
           {y, b.weight("w2", randomTensor({3, 36}, r)),
            b.weight("b2", randomTensor({3}, r))},
           {-1, 3}, Attrs().i("trans_b", 1));
  b.output("logits", y);
  return b.build();
}

bool convolutionPart(const plan::Op &op) {
  return op.type() != "Flatten" && op.type() != "Gemm";
}

TEST(CUDABackend, AMixedPlanCopiesOnlyAtItsBoundaries) {
  Tensor x = randomTensor({8, 1, 6, 6}, rng);
  std::vector<Tensor> want = runOn(smallCNN(), {x});
  auto exec =
      llvm::cantFail(Executor::create(placed(smallCNN(), convolutionPart)));
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> got = llvm::cantFail(exec->run({x}));
    EXPECT_LT(relativeError(got[0], want[0]), 1e-4f);
  }
  // The input to the GPU, the pooled activations back.
  EXPECT_EQ(exec->transfersPerRun(), 2);
  EXPECT_EQ(exec->backendOf(0).substr(0, 5), "cuda:");
  EXPECT_EQ(exec->backendOf(exec->plan().ops_size() - 1), "cpu");
}

TEST(CUDABackend, OpsWithoutAKernelRunOnTheCPUAndAreReported) {
  std::vector<Tensor> inputs;
  plan::Plan p = oneOp("LRN", {{2, 6, 5, 5}}, {2, 6, 5, 5},
                       Attrs().i("size", 3), 1, &inputs);
  std::vector<Tensor> want = runOn(p, inputs);
  std::vector<std::string> fallbacks;
  std::vector<Tensor> got = runOn(placed(p), inputs, &fallbacks);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(relativeError(got[0], want[0]), 0.f);
  EXPECT_EQ(fallbacks, std::vector<std::string>{"gpu: LRN"});
  // A Pad has a CUDA kernel in constant mode only.
  inputs.clear();
  p = oneOp("Pad", {{1, 2, 4, 4}}, {1, 2, 6, 6},
            Attrs().s("mode", "reflect").ints("pads", {0, 0, 1, 1, 0, 0, 1, 1}),
            1, &inputs);
  want = runOn(p, inputs);
  got = runOn(placed(p), inputs, &fallbacks);
  EXPECT_EQ(relativeError(got[0], want[0]), 0.f);
  EXPECT_EQ(fallbacks, std::vector<std::string>{"gpu: Pad"});
}

TEST(CUDABackend, KernelErrorsAreOneLine) {
  PlanBuilder b;
  int x = b.input("x", {4, 3});
  int idx = b.weight("i", Tensor::fromInts({1}, {4}));
  b.output("y", b.op("Gather", {x, idx}, {1, 3}));
  auto exec = llvm::cantFail(Executor::create(placed(b.build())));
  auto out = exec->run({randomTensor({4, 3}, rng)});
  ASSERT_FALSE(bool(out));
  EXPECT_EQ(llvm::toString(out.takeError()),
            "op 0 'Gather0' (Gather): Gather index out of range for axis 0 "
            "of f32[4, 3] on " +
                exec->backendOf(0));

  // A host tensor handed straight to a device kernel.
  auto backend = (*findBackend("cuda"))(BackendOptions(), "gpu");
  ASSERT_TRUE(bool(backend)) << llvm::toString(backend.takeError());
  plan::Plan relu = oneOp("Relu", {{3}}, {3});
  auto kernel = (*backend)->createKernel(OpInfo(relu.ops(0), {nullptr}));
  ASSERT_TRUE(bool(kernel));
  Tensor host = randomTensor({3}, rng);
  std::vector<Tensor> outs(1);
  std::vector<const Tensor *> ins = {&host};
  llvm::Error e = (*kernel)->run(ins, outs);
  EXPECT_EQ(llvm::toString(std::move(e)),
            "input 0 f32[3] is in host memory, not " +
                (*backend)->memory().name() + ": a transfer is missing");
}

// Copies both ways, of both element types, through the staging buffers.
TEST(CUDABackend, CopiesRoundTrip) {
  auto backend =
      llvm::cantFail((*findBackend("cuda"))(BackendOptions(), "gpu"));
  for (Tensor t : {randomTensor({1000, 37}, rng),
                   Tensor::fromInts({5}, {1, -2, 3, 1ll << 40, 0})}) {
    Transfer in = llvm::cantFail(backend->copy(t, backend->memory()));
    llvm::cantFail(in.done.wait());
    Transfer out =
        llvm::cantFail(backend->copy(in.tensor, MemorySpace::host()));
    llvm::cantFail(out.done.wait());
    EXPECT_EQ(std::memcmp(out.tensor.rawData(), t.rawData(), t.bytes()), 0);
  }
}

/// A network that uses every op type the CUDA backend trains: x [N, 2,
/// 8, 8] -> Conv -> BatchNormalization -> Relu -> (+ 1x1 Conv) -> Clip ->
/// MaxPool -> Concat with an AveragePool of itself -> x * Sigmoid(x) ->
/// strided Conv -> GlobalAveragePool -> Flatten -> Gemm -> LeakyRelu,
/// Sub, Div by weights: logits [N, 3].
MLP trainingNet(const std::string &modelPath) {
  std::mt19937 r(5);
  writeInitializers(modelPath,
                    {{"w1", randomTensor({4, 2, 3, 3}, r, -0.5f, 0.5f)},
                     {"b1", randomTensor({4}, r, -0.1f, 0.1f)},
                     {"scale", randomTensor({4}, r, 0.5f, 1.5f)},
                     {"shift", randomTensor({4}, r, -0.1f, 0.1f)},
                     {"mean", randomTensor({4}, r, -0.1f, 0.1f)},
                     {"var", randomTensor({4}, r, 0.5f, 1.5f)},
                     {"w2", randomTensor({4, 4, 1, 1}, r, -0.5f, 0.5f)},
                     {"w3", randomTensor({6, 8, 3, 3}, r, -0.3f, 0.3f)},
                     {"w4", randomTensor({3, 6}, r, -0.5f, 0.5f)},
                     {"b4", randomTensor({3}, r, -0.1f, 0.1f)},
                     {"shiftOut", randomTensor({3}, r, -0.1f, 0.1f)},
                     {"divisor", randomTensor({3}, r, 0.5f, 1.5f)}});
  PlanBuilder b;
  int x = b.input("x", {-1, 2, 8, 8});
  int a =
      b.op("Conv", {x, b.weightRef("w1", {4, 2, 3, 3}), b.weightRef("b1", {4})},
           {-1, 4, 8, 8}, Attrs().ints("pads", {1, 1, 1, 1}));
  a = b.op("BatchNormalization",
           {a, b.weightRef("scale", {4}), b.weightRef("shift", {4}),
            b.weightRef("mean", {4}), b.weightRef("var", {4})},
           {-1, 4, 8, 8});
  a = b.op("Relu", {a}, {-1, 4, 8, 8});
  int c = b.op("Conv", {a, b.weightRef("w2", {4, 4, 1, 1})}, {-1, 4, 8, 8});
  c = b.op("Add", {a, c}, {-1, 4, 8, 8});
  c = b.op("Clip", {c}, {-1, 4, 8, 8}, Attrs().f("min", 0.f).f("max", 6.f));
  int d = b.op("MaxPool", {c}, {-1, 4, 4, 4},
               Attrs().ints("kernel_shape", {2, 2}).ints("strides", {2, 2}));
  int e = b.op("AveragePool", {d}, {-1, 4, 4, 4},
               Attrs()
                   .ints("kernel_shape", {3, 3})
                   .ints("pads", {1, 1, 1, 1})
                   .i("count_include_pad", 0));
  int f = b.op("Concat", {d, e}, {-1, 8, 4, 4}, Attrs().i("axis", 1));
  int g = b.op("Sigmoid", {f}, {-1, 8, 4, 4});
  f = b.op("Mul", {f, g}, {-1, 8, 4, 4});
  f = b.op("Conv", {f, b.weightRef("w3", {6, 8, 3, 3})}, {-1, 6, 2, 2},
           Attrs().ints("pads", {1, 1, 1, 1}).ints("strides", {2, 2}));
  f = b.op("GlobalAveragePool", {f}, {-1, 6, 1, 1});
  f = b.op("Flatten", {f}, {-1, 6});
  f = b.op("Gemm", {f, b.weightRef("w4", {3, 6}), b.weightRef("b4", {3})},
           {-1, 3}, Attrs().i("trans_b", 1));
  f = b.op("LeakyRelu", {f}, {-1, 3}, Attrs().f("alpha", 0.1f));
  f = b.op("Sub", {f, b.weightRef("shiftOut", {3})}, {-1, 3});
  f = b.op("Div", {f, b.weightRef("divisor", {3})}, {-1, 3});
  b.output("logits", f);
  MLP net{b.build(), {}};
  net.plan.set_model_path(modelPath);
  net.weights = llvm::cantFail(loadWeights(net.plan));
  return net;
}

// Three SGD steps on the GPU give the CPU's losses and weights (running
// statistics included), with every op trained on the GPU.
TEST(CUDABackend, TrainingMatchesTheCPU) {
  TempDir dir;
  MLP net = trainingNet(dir.file("net.onnx"));
  std::mt19937 r(9);
  Tensor x = randomTensor({16, 2, 8, 8}, r);
  Tensor y = Tensor(DType::I64, {16});
  for (int64_t i = 0; i < 16; ++i)
    y.data<int64_t>()[i] = i % 3;
  train::TrainerOptions options;
  auto cpu =
      llvm::cantFail(train::Trainer::create(net.plan, net.weights, options));
  auto gpu = train::Trainer::create(placed(net.plan), net.weights, options);
  ASSERT_TRUE(bool(gpu)) << llvm::toString(gpu.takeError());
  for (int step = 0; step < 3; ++step) {
    auto want = cpu->step(x, y, 0.1f);
    auto got = (*gpu)->step(x, y, 0.1f);
    ASSERT_TRUE(bool(want) && bool(got)) << llvm::toString(got.takeError());
    EXPECT_NEAR(got->loss, want->loss, 1e-4 * std::abs(want->loss)) << step;
  }
  EXPECT_TRUE((*gpu)->fallbacks().empty())
      << llvm::join((*gpu)->fallbacks(), ", ");
  WeightMap want = llvm::cantFail(cpu->weights());
  WeightMap got = llvm::cantFail((*gpu)->weights());
  for (const auto &[v, t] : want)
    EXPECT_LT(relativeError(got.at(v), t), 1e-4f) << net.plan.values(v).name();
}

} // namespace

int main(int argc, char **argv) {
  const BackendFactory *cuda = findBackend("cuda");
  if (!cuda) {
    std::printf("skipped: this build has no CUDA backend\n");
    return 77;
  }
  if (auto probe = (*cuda)(BackendOptions(), "gpu"); !probe) {
    std::printf("skipped: %s\n", llvm::toString(probe.takeError()).c_str());
    return 77;
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
