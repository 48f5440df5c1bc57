//===- ExecutorTest.cpp - running whole plans -----------------------------===//

#include "PlanBuilder.h"
#include "Reference.h"

#include "../../lib/Runtime/Backends/CPU/Fusion.h"
#include "heterps/Runtime/Executor.h"

#include "heterps/Runtime/Plan.h"
#include "llvm/ADT/StringExtras.h"

#include "oneapi/dnnl/dnnl.hpp"
#include "onnx/onnx_pb.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <fstream>
#include <functional>

using namespace heterps::runtime;
using namespace heterps::runtime::testutil;

namespace {

float relu(float v) { return std::max(v, 0.f); }

/// conv-relu-maxpool-conv-bn-relu-gap-flatten-gemm-softmax with a dynamic
/// batch, and the same computation with the reference loops.
class SmallCNN : public ::testing::Test {
protected:
  SmallCNN() {
    int x = b.input("image", {-1, 3, 8, 8});
    int c1 = b.op("Conv", {x, b.weight("w1", w1), b.weight("b1", b1)},
                  {-1, 8, 8, 8}, Attrs().ints("pads", {1, 1, 1, 1}));
    int r1 = b.op("Relu", {c1}, {-1, 8, 8, 8});
    int p1 = b.op("MaxPool", {r1}, {-1, 8, 4, 4},
                  Attrs().ints("kernel_shape", {2, 2}).ints("strides", {2, 2}));
    int c2 = b.op("Conv", {p1, b.weight("w2", w2), -1}, {-1, 16, 4, 4},
                  Attrs().ints("pads", {1, 1, 1, 1}));
    int bn = b.op("BatchNormalization",
                  {c2, b.weight("scale", scale), b.weight("shift", shift),
                   b.weight("mean", mean), b.weight("var", var)},
                  {-1, 16, 4, 4}, Attrs().f("epsilon", 1e-5f));
    int r2 = b.op("Relu", {bn}, {-1, 16, 4, 4});
    int gap = b.op("GlobalAveragePool", {r2}, {-1, 16, 1, 1});
    int flat = b.op("Flatten", {gap}, {-1, 16});
    int fc = b.op("Gemm", {flat, b.weight("fc_w", fcW), b.weight("fc_b", fcB)},
                  {-1, 10}, Attrs().i("trans_b", 1));
    b.output("probs", b.op("Softmax", {fc}, {-1, 10}));
  }

  Tensor reference(const Tensor &x) {
    Tensor y =
        refUnary(refConv(x, w1, &b1, {{1, 1}, {1, 1}, {1, 1, 1, 1}, 1}), relu);
    y = refPool2d(y, {{2, 2}, {2, 2}, {0, 0, 0, 0}, true, false, false});
    y = refConv(y, w2, nullptr, {{1, 1}, {1, 1}, {1, 1, 1, 1}, 1});
    y = refUnary(refBatchNorm(y, scale, shift, mean, var, 1e-5f), relu);
    y = refPool2d(y, {{4, 4}, {1, 1}, {0, 0, 0, 0}, false, false, false});
    y = refGemm(y.reshaped({x.dim(0), 16}), fcW, &fcB, 1.f, 1.f, false, true);
    return refSoftmax(y, -1, false);
  }

  std::mt19937 rng{7};
  Tensor w1 = randomTensor({8, 3, 3, 3}, rng), b1 = randomTensor({8}, rng),
         w2 = randomTensor({16, 8, 3, 3}, rng), scale = randomTensor({16}, rng),
         shift = randomTensor({16}, rng), mean = randomTensor({16}, rng),
         var = randomTensor({16}, rng, 0.5f, 2),
         fcW = randomTensor({10, 16}, rng), fcB = randomTensor({10}, rng);
  PlanBuilder b;
};

std::string errorOf(llvm::Error e) { return llvm::toString(std::move(e)); }

template <typename T> std::string errorOf(llvm::Expected<T> e) {
  return e ? "" : llvm::toString(e.takeError());
}

} // namespace

TEST_F(SmallCNN, MatchesTheReferenceAtTwoBatchSizes) {
  ExecutorOptions options;
  options.numThreads = 2;
  auto exec = Executor::create(b.build(), options);
  ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());
  for (int64_t batch : {1, 3}) {
    Tensor x = randomTensor({batch, 3, 8, 8}, rng);
    auto out = (*exec)->run({x});
    ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
    ASSERT_EQ(out->size(), 1u);
    EXPECT_TRUE(allClose((*out)[0], reference(x), 1e-4f, 1e-6f))
        << "batch " << batch;
  }
}

TEST_F(SmallCNN, FoldsBatchNormAndFusesActivations) {
  auto exec = Executor::create(b.build());
  ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());
  // BN folds into the second Conv; both Relus fuse into their Convs.
  std::vector<std::string> types;
  for (const plan::Op &op : (*exec)->plan().ops())
    types.push_back(op.type());
  EXPECT_EQ(types, (std::vector<std::string>{"Conv", "MaxPool", "Conv",
                                             "GlobalAveragePool", "Flatten",
                                             "Gemm", "Softmax"}));
  ExecutorOptions unfused;
  unfused.fuse = false;
  auto plain = Executor::create(b.build(), unfused);
  ASSERT_TRUE(static_cast<bool>(plain)) << errorOf(plain.takeError());
  EXPECT_EQ((*plain)->plan().ops_size(), 9);
  Tensor x = randomTensor({2, 3, 8, 8}, rng);
  auto fusedOut = (*exec)->run({x});
  auto plainOut = (*plain)->run({x});
  ASSERT_TRUE(fusedOut && plainOut);
  EXPECT_TRUE(allClose((*fusedOut)[0], (*plainOut)[0], 1e-5f, 1e-6f));
}

TEST_F(SmallCNN, PrimitiveCacheCreatesOncePerShape) {
  auto exec = Executor::create(b.build());
  ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());
  Executor &e = **exec;
  EXPECT_EQ(e.counter("primitives_created"), 0);
  ASSERT_TRUE(static_cast<bool>(e.run({randomTensor({2, 3, 8, 8}, rng)})));
  int64_t firstCreated = e.counter("primitives_created");
  // Conv, MaxPool, Conv, GlobalAveragePool, Gemm, Softmax (Flatten is a view).
  EXPECT_EQ(firstCreated, 6);
  EXPECT_EQ(e.counter("primitive_cache_hits"), 0);
  ASSERT_TRUE(static_cast<bool>(e.run({randomTensor({2, 3, 8, 8}, rng)})));
  EXPECT_EQ(e.counter("primitives_created"), firstCreated);
  EXPECT_EQ(e.counter("primitive_cache_hits"), 6);
  ASSERT_TRUE(static_cast<bool>(e.run({randomTensor({5, 3, 8, 8}, rng)})));
  EXPECT_EQ(e.counter("primitives_created"), 12);
  // Both shapes stay cached: going back to the first creates nothing.
  ASSERT_TRUE(static_cast<bool>(e.run({randomTensor({2, 3, 8, 8}, rng)})));
  EXPECT_EQ(e.counter("primitives_created"), 12);
  EXPECT_EQ(e.counter("primitive_cache_hits"), 12);
}

TEST_F(SmallCNN, RunsByInputName) {
  auto exec = Executor::create(b.build());
  ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());
  Tensor x = randomTensor({1, 3, 8, 8}, rng);
  auto out = (*exec)->run(std::map<std::string, Tensor>{{"image", x}});
  ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
  EXPECT_TRUE(allClose((*out)[0], reference(x), 1e-4f, 1e-6f));

  EXPECT_EQ(errorOf((*exec)->run(std::map<std::string, Tensor>{})),
            "missing input 'image'");
  EXPECT_EQ(errorOf((*exec)->run(
                std::map<std::string, Tensor>{{"image", x}, {"label", x}})),
            "unknown input 'label' (the plan's inputs are 'image')");
}

TEST_F(SmallCNN, RejectsWrongInputs) {
  auto exec = Executor::create(b.build());
  ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());
  EXPECT_EQ(errorOf((*exec)->run({randomTensor({1, 3, 9, 8}, rng)})),
            "input 'image': expected f32[-1, 3, 8, 8], got f32[1, 3, 9, 8]");
  EXPECT_EQ(errorOf((*exec)->run(
                {Tensor::fromInts({1, 3, 8, 8}, std::vector<int64_t>(192))})),
            "input 'image': expected f32[-1, 3, 8, 8], got i64[1, 3, 8, 8]");
  EXPECT_EQ(errorOf((*exec)->run(llvm::ArrayRef<Tensor>())),
            "expected 1 inputs, got 0");
}

TEST(Executor, UnsupportedOpFailsAtCreation) {
  PlanBuilder b;
  int x = b.input("x", {4});
  b.output("y", b.op("NonMaxSuppression", {x}, {4}));
  EXPECT_EQ(errorOf(Executor::create(b.build())),
            "op 0 'NonMaxSuppression0' (NonMaxSuppression): op type "
            "'NonMaxSuppression' is not supported by the cpu backend");
}

TEST(Executor, BadAttributeFailsAtCreation) {
  PlanBuilder b;
  int x = b.input("x", {1, 1, 4, 4});
  b.output("y",
           b.op("MaxPool", {x}, {1, 1, 2, 2}, Attrs().f("kernel_shape", 2.f)));
  EXPECT_EQ(errorOf(Executor::create(b.build())),
            "op 0 'MaxPool0' (MaxPool): attribute 'kernel_shape' must be a "
            "list of ints");
}

TEST(Executor, WrongDeclaredOutputShapeIsAnError) {
  PlanBuilder b;
  int x = b.input("x", {2, 3});
  b.output("y", b.op("Relu", {x}, {3, 2}));
  auto exec = Executor::create(b.build());
  ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());
  EXPECT_EQ(errorOf((*exec)->run({Tensor(DType::F32, {2, 3})})),
            "op 0 'Relu0' (Relu) produced f32[2, 3] for 'Relu0.out', but the "
            "plan expects f32[3, 2]");
}

TEST(Executor, MissingDeviceTypesAreErrorsUnlessEmulated) {
  PlanBuilder b;
  int x = b.input("x", {4});
  int y = b.op("Relu", {x}, {4});
  b.place("v100", 0);
  b.output("y", y);
  EXPECT_EQ(errorOf(Executor::create(b.build())),
            "op 0 'Relu0' (Relu) is placed on device type 'v100', whose kind "
            "the plan does not give (this runtime has: " +
                llvm::join(backendKinds(), ", ") +
                "; heterps-run --emulate-missing-devices runs it on the "
                "emulated device)");
  ExecutorOptions options;
  options.emulateMissingDevices = true;
  auto exec = Executor::create(b.build(), options);
  ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());
  EXPECT_EQ((*exec)->emulatedDevices(), std::vector<std::string>{"v100"});
  options.emulateMissingDevices = false;
  options.cpuDeviceTypes = {"v100"};
  EXPECT_TRUE(static_cast<bool>(Executor::create(b.build(), options)));
}

TEST(Executor, GraphOutputsMayBeInputsOrWeights) {
  PlanBuilder b;
  int x = b.input("x", {2});
  int w = b.weight("w", Tensor::fromFloats({2}, {1.f, 2.f}));
  b.output("same", x);
  b.output("weight", w);
  b.output("sum", b.op("Add", {x, w}, {2}));
  auto exec = Executor::create(b.build());
  ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());
  auto out = (*exec)->run({Tensor::fromFloats({2}, {10.f, 20.f})});
  ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
  EXPECT_TRUE(allClose((*out)[0], Tensor::fromFloats({2}, {10.f, 20.f})));
  EXPECT_TRUE(allClose((*out)[1], Tensor::fromFloats({2}, {1.f, 2.f})));
  EXPECT_TRUE(allClose((*out)[2], Tensor::fromFloats({2}, {11.f, 22.f})));
}

//===----------------------------------------------------------------------===//
// Weights from an ONNX model
//===----------------------------------------------------------------------===//

namespace {
class ModelWeights : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("heterps-weights", dir));
    onnx::ModelProto model;
    onnx::GraphProto *graph = model.mutable_graph();
    onnx::TensorProto *w = graph->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(2);
    for (float v : {1.f, 2.f})
      w->add_float_data(v);
    onnx::TensorProto *raw = graph->add_initializer();
    raw->set_name("raw");
    raw->set_data_type(onnx::TensorProto::FLOAT);
    raw->add_dims(2);
    float rawValues[] = {3.f, 4.f};
    raw->set_raw_data(rawValues, sizeof(rawValues));
    // External data: 8 bytes at offset 4 of weights.bin.
    onnx::TensorProto *ext = graph->add_initializer();
    ext->set_name("ext");
    ext->set_data_type(onnx::TensorProto::FLOAT);
    ext->add_dims(2);
    ext->set_data_location(onnx::TensorProto::EXTERNAL);
    auto entry = [&](const char *k, const char *v) {
      auto *e = ext->add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    entry("location", "weights.bin");
    entry("offset", "4");
    entry("length", "8");
    float extValues[] = {0.f, 5.f, 6.f};
    write("weights.bin",
          std::string(reinterpret_cast<char *>(extValues), sizeof(extValues)));
    onnx::NodeProto *constant = graph->add_node();
    constant->set_op_type("Constant");
    constant->add_output("const");
    onnx::AttributeProto *value = constant->add_attribute();
    value->set_name("value");
    value->set_type(onnx::AttributeProto::TENSOR);
    *value->mutable_t() = *w;
    write("model.onnx", model.SerializeAsString());
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  void write(const std::string &name, const std::string &bytes) {
    std::ofstream(path(name), std::ios::binary) << bytes;
  }
  std::string path(const std::string &name) const {
    llvm::SmallString<128> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }

  llvm::SmallString<128> dir;
};
} // namespace

TEST_F(ModelWeights, ResolvesInitializersConstantsAndExternalData) {
  PlanBuilder b;
  int x = b.input("x", {2});
  int s1 = b.op("Add", {x, b.weightRef("w", {2})}, {2});
  int s2 = b.op("Add", {s1, b.weightRef("raw", {2})}, {2});
  int s3 = b.op("Add", {s2, b.weightRef("ext", {2})}, {2});
  b.output("y", b.op("Add", {s3, b.weightRef("const", {2})}, {2}));
  plan::Plan plan = b.build();
  plan.set_model_path("model.onnx");
  ASSERT_FALSE(static_cast<bool>(savePlan(plan, path("plan.pbtxt"))));

  auto loaded = loadPlan(path("plan.pbtxt"));
  ASSERT_TRUE(static_cast<bool>(loaded)) << errorOf(loaded.takeError());
  EXPECT_EQ(loaded->model_path(), path("model.onnx"));
  auto exec = Executor::create(*loaded);
  ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());
  auto out = (*exec)->run({Tensor::fromFloats({2}, {100.f, 200.f})});
  ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
  // 100 + 1 + 3 + 5 + 1, 200 + 2 + 4 + 6 + 2.
  EXPECT_TRUE(allClose((*out)[0], Tensor::fromFloats({2}, {110.f, 214.f})));
}

TEST_F(ModelWeights, ReportsMissingAndMismatchedInitializers) {
  PlanBuilder b;
  int x = b.input("x", {2});
  b.output("y", b.op("Add", {x, b.weightRef("nope", {2})}, {2}));
  plan::Plan plan = b.build();
  plan.set_model_path(path("model.onnx"));
  EXPECT_EQ(errorOf(Executor::create(plan)),
            path("model.onnx") + ": no initializer named 'nope'");

  PlanBuilder b2;
  x = b2.input("x", {3});
  b2.output("y", b2.op("Add", {x, b2.weightRef("w", {3})}, {3}));
  plan = b2.build();
  plan.set_model_path(path("model.onnx"));
  EXPECT_EQ(errorOf(Executor::create(plan)),
            path("model.onnx") +
                ": initializer 'w' is f32[2], but the plan expects f32[3]");

  plan.set_model_path(path("missing.onnx"));
  EXPECT_EQ(errorOf(Executor::create(plan)),
            path("missing.onnx") +
                ": cannot read model: No such file or directory");
}

//===----------------------------------------------------------------------===//
// Residual blocks
//===----------------------------------------------------------------------===//

TEST(Executor, FusesResidualAddWithoutClobberingTheAddend) {
  std::mt19937 rng(3);
  Tensor w0 = randomTensor({16, 16, 3, 3}, rng),
         w1 = randomTensor({16, 16, 3, 3}, rng), b1 = randomTensor({16}, rng);
  PlanBuilder b;
  Attrs pads = Attrs().ints("pads", {1, 1, 1, 1});
  int x = b.input("x", {-1, 16, 6, 6});
  // y0 = conv0(x) is both the residual and a graph output.
  int y0 = b.op("Conv", {x, b.weight("w0", w0)}, {-1, 16, 6, 6}, pads);
  int c1 = b.op("Conv", {y0, b.weight("w1", w1), b.weight("b1", b1)},
                {-1, 16, 6, 6}, pads);
  int sum = b.op("Add", {y0, c1}, {-1, 16, 6, 6});
  b.output("y0", y0);
  b.output("out", b.op("Relu", {sum}, {-1, 16, 6, 6}));
  auto exec = Executor::create(b.build());
  ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());
  const plan::Plan &fused = (*exec)->plan();
  ASSERT_EQ(fused.ops_size(), 2);
  EXPECT_EQ(fused.ops(1).inputs_size(), 4);

  Tensor in = randomTensor({2, 16, 6, 6}, rng);
  auto out = (*exec)->run({in});
  ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
  ConvParams p{{1, 1}, {1, 1}, {1, 1, 1, 1}, 1};
  Tensor refY0 = refConv(in, w0, nullptr, p);
  Tensor refOut = refUnary(refBinary(refY0, refConv(refY0, w1, &b1, p),
                                     [](float u, float v) { return u + v; }),
                           relu);
  // Autotuning may run these 3x3 convolutions by Winograd, whose error
  // follows the sums' magnitude rather than each output's.
  EXPECT_TRUE(allClose((*out)[0], refY0, 1e-4f, 1e-4f));
  EXPECT_TRUE(allClose((*out)[1], refOut, 1e-4f, 1e-4f));
}

/// y = conv1(a) + (addend), a = conv0(x): the Add fuses into conv1, and a
/// is last read there, so conv1 may accumulate into the addend's buffer -
/// but not when the addend is a itself, which conv1 also reads.
static void checkResidualOfDyingValue(bool addendIsSource) {
  std::mt19937 rng(5);
  Tensor w0 = randomTensor({16, 16, 3, 3}, rng),
         w1 = randomTensor({16, 16, 3, 3}, rng),
         w2 = randomTensor({16, 16, 3, 3}, rng);
  PlanBuilder b;
  Attrs pads = Attrs().ints("pads", {1, 1, 1, 1});
  int x = b.input("x", {-1, 16, 6, 6});
  int a = b.op("Conv", {x, b.weight("w0", w0)}, {-1, 16, 6, 6}, pads);
  int addend = addendIsSource ? a
                              : b.op("Conv", {x, b.weight("w2", w2)},
                                     {-1, 16, 6, 6}, pads);
  int c = b.op("Conv", {a, b.weight("w1", w1)}, {-1, 16, 6, 6}, pads);
  b.output("out", b.op("Add", {c, addend}, {-1, 16, 6, 6}));
  for (bool autotune : {false, true}) {
    ExecutorOptions options;
    options.autotune = autotune;
    auto exec = Executor::create(b.build(), options);
    ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());
    ASSERT_EQ((*exec)->plan().ops_size(), addendIsSource ? 2 : 3);
    Tensor in = randomTensor({2, 16, 6, 6}, rng);
    ConvParams p{{1, 1}, {1, 1}, {1, 1, 1, 1}, 1};
    Tensor refA = refConv(in, w0, nullptr, p);
    Tensor refAddend = addendIsSource ? refA : refConv(in, w2, nullptr, p);
    Tensor ref = refBinary(refConv(refA, w1, nullptr, p), refAddend,
                           [](float u, float v) { return u + v; });
    for (int run = 0; run < 2; ++run) {
      auto out = (*exec)->run({in});
      ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
      // Autotuning may pick Winograd (by timing), whose error here reaches
      // ~1.3e-5 on an element near zero: above atol 1e-5.
      EXPECT_TRUE(allClose((*out)[0], ref, 1e-4f, 1e-4f));
    }
  }
}

TEST(Executor, ResidualAccumulatesIntoAnAddendNothingElseReads) {
  checkResidualOfDyingValue(/*addendIsSource=*/false);
}

TEST(Executor, ResidualOfTheConvSourceDoesNotOverwriteIt) {
  checkResidualOfDyingValue(/*addendIsSource=*/true);
}

// The addend of a fused residual Add that a later op reads too keeps its
// values: a kernel may write only into inputs it reads last.
TEST(Executor, ResidualAddendReadLaterKeepsItsValues) {
  std::mt19937 rng(8);
  Tensor w0 = randomTensor({8, 8, 3, 3}, rng),
         w1 = randomTensor({8, 8, 3, 3}, rng);
  PlanBuilder b;
  Attrs pads = Attrs().ints("pads", {1, 1, 1, 1});
  int x = b.input("x", {-1, 8, 5, 5});
  int a = b.op("Conv", {x, b.weight("w0", w0)}, {-1, 8, 5, 5}, pads);
  int c = b.op("Conv", {a, b.weight("w1", w1)}, {-1, 8, 5, 5}, pads);
  int sum = b.op("Add", {c, a}, {-1, 8, 5, 5});
  int later = b.op("Sigmoid", {a}, {-1, 8, 5, 5});
  b.output("sum", sum);
  b.output("later", later);
  ExecutorOptions plain;
  plain.fuse = false;
  auto unfusedOr = Executor::create(b.build(), plain);
  ASSERT_TRUE(bool(unfusedOr)) << llvm::toString(unfusedOr.takeError());
  auto fusedOr = Executor::create(b.build());
  ASSERT_TRUE(bool(fusedOr)) << llvm::toString(fusedOr.takeError());
  auto unfused = std::move(*unfusedOr), fused = std::move(*fusedOr);
  ASSERT_EQ(fused->plan().ops(1).inputs_size(), 4);
  Tensor in = randomTensor({2, 8, 5, 5}, rng);
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> want = llvm::cantFail(unfused->run({in}));
    std::vector<Tensor> got = llvm::cantFail(fused->run({in}));
    for (size_t k = 0; k < want.size(); ++k)
      EXPECT_TRUE(allClose(got[k], want[k], 1e-4f, 1e-4f)) << k;
  }
}

/// x -> Tanh -> GELU as PyTorch exports it (x / sqrt(2), Erf, + 1, * x,
/// * 0.5) -> output, and with `erfRead` the Erf's output a graph output too.
static plan::Plan geluPlan(bool erfRead) {
  PlanBuilder b;
  int x = b.input("x", {-1, 6, 7});
  int t = b.op("Tanh", {x}, {-1, 6, 7});
  int d =
      b.op("Div", {t, b.weight("sqrt2", Tensor::fromFloats({}, {1.4142135f}))},
           {-1, 6, 7});
  int e = b.op("Erf", {d}, {-1, 6, 7});
  int a = b.op("Add", {b.weight("one", Tensor::fromFloats({}, {1.f})), e},
               {-1, 6, 7});
  int m = b.op("Mul", {t, a}, {-1, 6, 7});
  b.output("y",
           b.op("Mul", {m, b.weight("half", Tensor::fromFloats({}, {0.5f}))},
                {-1, 6, 7}));
  if (erfRead)
    b.output("erf", e);
  return b.build();
}

TEST(Executor, FusesGeluAndKeepsItsOutputs) {
  std::mt19937 rng(4);
  Tensor in = randomTensor({3, 6, 7}, rng, -3.f, 3.f);
  for (bool erfRead : {false, true}) {
    ExecutorOptions plain;
    plain.fuse = false;
    auto unfused = llvm::cantFail(Executor::create(geluPlan(erfRead), plain));
    auto fused = llvm::cantFail(Executor::create(geluPlan(erfRead)));
    // Fused into one op, unless an intermediate is read elsewhere.
    ASSERT_EQ(fused->plan().ops_size(), erfRead ? 6 : 2);
    if (!erfRead)
      EXPECT_EQ(fused->plan().ops(1).type(), "Gelu");
    std::vector<Tensor> want = llvm::cantFail(unfused->run({in}));
    std::vector<Tensor> got = llvm::cantFail(fused->run({in}));
    for (size_t k = 0; k < want.size(); ++k)
      EXPECT_TRUE(allClose(got[k], want[k], 1e-5f, 1e-6f)) << k;
  }
}

/// Layer normalisation over the last axis as PyTorch exports it, with a
/// bias unless `noBias`, and with the centred value a graph output too when
/// `centredRead`.
static plan::Plan layerNormPlan(bool noBias, bool centredRead) {
  std::mt19937 rng(12);
  PlanBuilder b;
  int x = b.input("x", {-1, 3, 8});
  int t = b.op("Tanh", {x}, {-1, 3, 8});
  Attrs last = Attrs().ints("axes", {-1}).i("keepdims", 1);
  int m = b.op("ReduceMean", {t}, {-1, 3, 1}, last);
  int d = b.op("Sub", {t, m}, {-1, 3, 8});
  int p = b.op("Pow", {d, b.weight("two", Tensor::fromFloats({}, {2.f}))},
               {-1, 3, 8});
  int v = b.op("ReduceMean", {p}, {-1, 3, 1}, last);
  int e = b.op("Add", {v, b.weight("eps", Tensor::fromFloats({}, {1e-6f}))},
               {-1, 3, 1});
  int s = b.op("Sqrt", {e}, {-1, 3, 1});
  int n = b.op("Div", {d, s}, {-1, 3, 8});
  int y =
      b.op("Mul", {n, b.weight("gamma", randomTensor({8}, rng))}, {-1, 3, 8});
  if (!noBias)
    y = b.op("Add", {b.weight("beta", randomTensor({8}, rng)), y}, {-1, 3, 8});
  b.output("y", y);
  if (centredRead)
    b.output("centred", d);
  return b.build();
}

TEST(Executor, FusesDecomposedLayerNorms) {
  std::mt19937 rng(13);
  Tensor in = randomTensor({4, 3, 8}, rng, -2.f, 2.f);
  for (bool noBias : {false, true})
    for (bool centredRead : {false, true}) {
      SCOPED_TRACE(std::string(noBias ? "no bias" : "bias") +
                   (centredRead ? ", centred read elsewhere" : ""));
      ExecutorOptions plain;
      plain.fuse = false;
      auto unfused = llvm::cantFail(
          Executor::create(layerNormPlan(noBias, centredRead), plain));
      auto fused =
          llvm::cantFail(Executor::create(layerNormPlan(noBias, centredRead)));
      int ops = unfused->plan().ops_size();
      EXPECT_EQ(fused->plan().ops_size(), centredRead ? ops : 2);
      if (!centredRead)
        EXPECT_EQ(fused->plan().ops(1).type(), "LayerNormalization");
      std::vector<Tensor> want = llvm::cantFail(unfused->run({in}));
      std::vector<Tensor> got = llvm::cantFail(fused->run({in}));
      for (size_t k = 0; k < want.size(); ++k)
        EXPECT_TRUE(allClose(got[k], want[k], 1e-5f, 1e-5f)) << k;
    }
}

// A Linear layer on 3-D activations (MatMul by a [K, N] weight, Add of an
// [N] bias) runs as one MatMul with the bias; a product read elsewhere, or
// an addend that is not a bias, stays as it is.
TEST(Executor, FusesMatMulBiases) {
  std::mt19937 rng(14);
  Tensor w = randomTensor({8, 5}, rng), bias = randomTensor({5}, rng);
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    PlanBuilder b;
    int x = b.input("x", {-1, 3, 8});
    int mm = b.op("MatMul", {x, b.weight("w", w)}, {-1, 3, 5});
    int addend = variant == 2 ? b.weight("full", randomTensor({3, 5}, rng))
                              : b.weight("b", bias);
    b.output("y", b.op("Add", {addend, mm}, {-1, 3, 5}));
    if (variant == 1)
      b.output("product", mm);
    ExecutorOptions plain;
    plain.fuse = false;
    auto unfused = llvm::cantFail(Executor::create(b.build(), plain));
    auto fused = llvm::cantFail(Executor::create(b.build()));
    EXPECT_EQ(fused->plan().ops_size(), variant == 0 ? 1 : 2);
    Tensor in = randomTensor({4, 3, 8}, rng);
    std::vector<Tensor> want = llvm::cantFail(unfused->run({in}));
    std::vector<Tensor> got = llvm::cantFail(fused->run({in}));
    for (size_t k = 0; k < want.size(); ++k)
      EXPECT_TRUE(allClose(got[k], want[k], 1e-5f, 1e-5f)) << k;
  }
}

// A transformer's MLP: MatMul + bias, then Gelu (or Relu), as one MatMul
// with the activation as oneDNN's post-op, on 3-D activations and on a
// batched product of two activations; an activation whose input is read
// elsewhere stays apart.
TEST(Executor, FusesActivationsIntoMatMuls) {
  std::mt19937 rng(15);
  Tensor w = randomTensor({8, 5}, rng), bias = randomTensor({5}, rng);
  for (const char *act : {"Gelu", "Relu"})
    for (int variant = 0; variant < 3; ++variant) {
      SCOPED_TRACE(std::string(act) + " " + std::to_string(variant));
      PlanBuilder b;
      int x = b.input("x", {-1, 3, 8});
      int mm;
      if (variant == 2) // scores of x against itself: [-1, 3, 3]
        mm = b.op("MatMul",
                  {x, b.op("Transpose", {x}, {-1, 8, 3},
                           Attrs().ints("perm", {0, 2, 1}))},
                  {-1, 3, 3});
      else
        mm = b.op("Add",
                  {b.op("MatMul", {x, b.weight("w", w)}, {-1, 3, 5}),
                   b.weight("b", bias)},
                  {-1, 3, 5});
      Shape out = variant == 2 ? Shape{-1, 3, 3} : Shape{-1, 3, 5};
      b.output("y", b.op(act, {mm}, out));
      if (variant == 1)
        b.output("product", mm);
      ExecutorOptions plain;
      plain.fuse = false;
      auto unfused = llvm::cantFail(Executor::create(b.build(), plain));
      auto fused = llvm::cantFail(Executor::create(b.build()));
      const plan::Plan &p = fused->plan();
      EXPECT_EQ(p.ops(p.ops_size() - 1).type(), variant == 1 ? act : "MatMul");
      Tensor in = randomTensor({4, 3, 8}, rng, -2.f, 2.f);
      std::vector<Tensor> want = llvm::cantFail(unfused->run({in}));
      std::vector<Tensor> got = llvm::cantFail(fused->run({in}));
      for (size_t k = 0; k < want.size(); ++k)
        EXPECT_TRUE(allClose(got[k], want[k], 1e-5f, 1e-5f)) << k;
    }
}

// x * Sigmoid(x) and x * HardSigmoid(x) become Swish and HardSwish, folded
// into the Conv before them; a gate read elsewhere stays as it is.
TEST(Executor, FusesSelfGatedActivations) {
  std::mt19937 rng(6);
  Tensor w = randomTensor({4, 4, 3, 3}, rng);
  for (const char *gate : {"Sigmoid", "HardSigmoid"})
    for (bool gateRead : {false, true}) {
      SCOPED_TRACE(std::string(gate) + (gateRead ? ", read elsewhere" : ""));
      PlanBuilder b;
      int x = b.input("x", {-1, 4, 5, 5});
      int c = b.op("Conv", {x, b.weight("w", w)}, {-1, 4, 5, 5},
                   Attrs().ints("pads", {1, 1, 1, 1}));
      Attrs attrs;
      if (std::string(gate) == "HardSigmoid")
        attrs.f("alpha", 1.f / 6).f("beta", 0.5f);
      int g = b.op(gate, {c}, {-1, 4, 5, 5}, attrs);
      int y = b.op("Mul", {g, c}, {-1, 4, 5, 5});
      // The same on an input, which no Conv produces.
      int g2 = b.op(gate, {x}, {-1, 4, 5, 5}, attrs);
      b.output("y", y);
      b.output("z", b.op("Mul", {x, g2}, {-1, 4, 5, 5}));
      if (gateRead)
        b.output("gate", g);
      ExecutorOptions plain;
      plain.fuse = false;
      auto unfused = llvm::cantFail(Executor::create(b.build(), plain));
      auto fused = llvm::cantFail(Executor::create(b.build()));
      EXPECT_EQ(fused->plan().ops_size(), gateRead ? 4 : 2);
      Tensor in = randomTensor({2, 4, 5, 5}, rng, -4.f, 4.f);
      std::vector<Tensor> want = llvm::cantFail(unfused->run({in}));
      std::vector<Tensor> got = llvm::cantFail(fused->run({in}));
      for (size_t k = 0; k < want.size(); ++k)
        EXPECT_TRUE(allClose(got[k], want[k], 1e-5f, 1e-5f)) << k;
    }
}

/// Squeeze-excitation as torchvision exports it after a Conv of `channels`
/// outputs: GlobalAveragePool, 1x1 Conv, Relu (or SiLU as x * Sigmoid(x)
/// when `silu`), 1x1 Conv, HardSigmoid (or Sigmoid when `sigmoid`), Mul.
/// Variant 1 makes the pooled value a graph output too; variant 2
/// multiplies the gate into another tensor than the pooled one; variant 3
/// projects the product to 8 channels by a 1x1 Conv and adds a residual
/// (the block's end, which fuseProjections joins to the SqueezeExcite).
static plan::Plan squeezeExcitePlan(int64_t channels, bool silu, bool sigmoid,
                                    int variant) {
  std::mt19937 rng(31);
  const int64_t r = 4;
  PlanBuilder b;
  Shape full = {-1, channels, 6, 6}, pooled = {-1, channels, 1, 1},
        mid = {-1, r, 1, 1};
  int in = b.input("x", {-1, 3, 6, 6});
  int x =
      b.op("Conv", {in, b.weight("w0", randomTensor({channels, 3, 3, 3}, rng))},
           full, Attrs().ints("pads", {1, 1, 1, 1}));
  // Variant 3's residual, defined before the block as a network's is.
  Shape narrow = {-1, 8, 6, 6};
  int residual =
      variant == 3
          ? b.op("Conv", {in, b.weight("wr", randomTensor({8, 3, 1, 1}, rng))},
                 narrow)
          : -1;
  int p = b.op("GlobalAveragePool", {x}, pooled);
  int h = b.op("Conv",
               {p, b.weight("w1", randomTensor({r, channels, 1, 1}, rng)),
                b.weight("b1", randomTensor({r}, rng))},
               mid);
  h = silu ? b.op("Mul", {h, b.op("Sigmoid", {h}, mid)}, mid)
           : b.op("Relu", {h}, mid);
  int g = b.op("Conv",
               {h, b.weight("w2", randomTensor({channels, r, 1, 1}, rng)),
                b.weight("b2", randomTensor({channels}, rng))},
               pooled);
  g = sigmoid ? b.op("Sigmoid", {g}, pooled)
              : b.op("HardSigmoid", {g}, pooled,
                     Attrs().f("alpha", 1.f / 6).f("beta", 0.5f));
  int scaled = variant == 2 ? b.op("Tanh", {x}, full) : x;
  int y = b.op("Mul", {scaled, g}, full);
  if (variant == 3) {
    y = b.op("Conv",
             {y, b.weight("wp", randomTensor({8, channels, 1, 1}, rng)),
              b.weight("bp", randomTensor({8}, rng))},
             narrow);
    y = b.op("Relu", {b.op("Add", {y, residual}, narrow)}, narrow);
  }
  b.output("y", y);
  if (variant == 1)
    b.output("pooled", p);
  return b.build();
}

// The block runs as one SqueezeExcite op in the Conv's layout (20 or 32
// channels: padded and whole channel blocks, or channels-last), with
// the same outputs; a pooled value read elsewhere, or a gate applied to
// another tensor than the pooled one, keeps the ops apart. A projection
// after it, with its residual and activation, joins it (8 inputs).
TEST(Executor, FusesSqueezeExcitation) {
  std::mt19937 rng(32);
  for (int64_t channels : {20, 32})
    for (bool silu : {false, true})
      for (int variant = 0; variant < 4; ++variant) {
        bool sigmoid = silu;
        SCOPED_TRACE(std::to_string(channels) + " channels, variant " +
                     std::to_string(variant) + (silu ? ", SiLU" : ""));
        ExecutorOptions plain;
        plain.fuse = false;
        plan::Plan plan = squeezeExcitePlan(channels, silu, sigmoid, variant);
        auto unfused = llvm::cantFail(Executor::create(plan, plain));
        auto fused = llvm::cantFail(Executor::create(plan));
        int blocks = 0;
        for (const plan::Op &op : fused->plan().ops())
          if (op.type() == "SqueezeExcite") {
            ++blocks;
            EXPECT_EQ(op.inputs_size(), variant == 3 ? 8 : 5);
          }
        EXPECT_EQ(blocks, variant == 0 || variant == 3 ? 1 : 0);
        for (int64_t batch : {1, 3}) {
          Tensor in = randomTensor({batch, 3, 6, 6}, rng, -2.f, 2.f);
          std::vector<Tensor> want = llvm::cantFail(unfused->run({in}));
          std::vector<Tensor> got = llvm::cantFail(fused->run({in}));
          for (size_t k = 0; k < want.size(); ++k)
            EXPECT_TRUE(allClose(got[k], want[k], 1e-5f, 1e-5f)) << k;
        }
      }
}

/// Builds `b`'s plan with and without the fusions and expects `count` ops
/// of `type` in the fused one and the same outputs from both (within
/// `tolerance`) on each of `runs` (one input list a run, in order).
void expectFusion(PlanBuilder &b, llvm::StringRef type, int count,
                  llvm::ArrayRef<std::vector<Tensor>> runs,
                  float tolerance = 1e-5f) {
  ExecutorOptions plain;
  plain.fuse = false;
  auto unfusedOr = Executor::create(b.build(), plain);
  ASSERT_TRUE(bool(unfusedOr)) << llvm::toString(unfusedOr.takeError());
  auto fusedOr = Executor::create(b.build());
  ASSERT_TRUE(bool(fusedOr)) << llvm::toString(fusedOr.takeError());
  auto unfused = std::move(*unfusedOr), fused = std::move(*fusedOr);
  EXPECT_EQ(
      llvm::count_if(fused->plan().ops(),
                     [&](const plan::Op &op) { return op.type() == type; }),
      count);
  for (const std::vector<Tensor> &in : runs) {
    auto wantOr = unfused->run(in), gotOr = fused->run(in);
    ASSERT_TRUE(bool(wantOr)) << llvm::toString(wantOr.takeError());
    ASSERT_TRUE(bool(gotOr)) << llvm::toString(gotOr.takeError());
    std::vector<Tensor> &want = *wantOr, &got = *gotOr;
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k)
      EXPECT_TRUE(allClose(got[k], want[k], tolerance, tolerance)) << k;
  }
}

// DenseNet's pre-activation batch norm (and its Relu) on a channel Concat
// goes into the Concat, which applies it as it copies: Conv outputs in
// whatever layout the Convs chose beside a plain input, at batch 1 (where,
// in the channel-blocked layouts the Convs chose when this was written,
// they compute in the Concat's output from the second run and the norm is
// applied there in place) and batch 3, with and without the Relu;
// 20-channel parts (no whole channel blocks: oneDNN's concat, then the
// norm); and a Concat read elsewhere, which keeps its batch norm.
TEST(Executor, FusesBatchNormsIntoConcats) {
  std::mt19937 rng(25);
  enum Case { Relu, NoRelu, OddChannels, ReadElsewhere };
  for (Case c : {Relu, NoRelu, OddChannels, ReadElsewhere}) {
    SCOPED_TRACE(c);
    int64_t part = c == OddChannels ? 20 : 32, total = 16 + 2 * part;
    PlanBuilder b;
    int x = b.input("x", {-1, 16, 6, 6});
    int c1 =
        b.op("Conv", {x, b.weight("w1", randomTensor({part, 16, 3, 3}, rng))},
             {-1, part, 6, 6}, Attrs().ints("pads", {1, 1, 1, 1}));
    int c2 =
        b.op("Conv", {x, b.weight("w2", randomTensor({part, 16, 1, 1}, rng))},
             {-1, part, 6, 6});
    int cat =
        b.op("Concat", {x, c1, c2}, {-1, total, 6, 6}, Attrs().i("axis", 1));
    int bn = b.op("BatchNormalization",
                  {cat, b.weight("g", randomTensor({total}, rng, 0.5f, 1.5f)),
                   b.weight("b", randomTensor({total}, rng)),
                   b.weight("m", randomTensor({total}, rng)),
                   b.weight("v", randomTensor({total}, rng, 0.5f, 2.f))},
                  {-1, total, 6, 6}, Attrs().f("epsilon", 1e-5f));
    b.output("y", c == NoRelu ? bn : b.op("Relu", {bn}, {-1, total, 6, 6}));
    if (c == ReadElsewhere)
      b.output("features", cat);
    std::vector<std::vector<Tensor>> runs;
    for (int64_t batch : {1, 1, 1, 3})
      runs.push_back({randomTensor({batch, 16, 6, 6}, rng, -2.f, 2.f)});
    // Autotuning may pick Winograd for the 3x3 Conv (by timing, so on a
    // busy machine), whose error reached 1.4e-5 on an element near zero.
    expectFusion(b, "BatchNormalization", c == ReadElsewhere ? 1 : 0, runs,
                 1e-4f);
  }
}

/// A 1-D i64 tensor of `v`.
static Tensor longs(std::vector<int64_t> v) {
  Tensor t(DType::I64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

/// ShuffleNet's concat and channel shuffle as exported, of input `x`
/// ([N, C/2, H, W]) and a 1x1 Conv of it: Concat, Reshape to
/// [N, 2, C/2, H, W], Transpose by `perm`, Reshape back to [N, C, H, W].
/// Returns the last Reshape's output; the Concat's in `cat` if given.
static int channelShuffle(PlanBuilder &b, std::mt19937 &rng, int x, int64_t C,
                          int64_t H, int64_t W, std::vector<int64_t> perm,
                          int *cat = nullptr) {
  int conv =
      b.op("Conv", {x, b.weight("w", randomTensor({C / 2, C / 2, 1, 1}, rng))},
           {-1, C / 2, H, W});
  int joined = b.op("Concat", {x, conv}, {-1, C, H, W}, Attrs().i("axis", 1));
  if (cat)
    *cat = joined;
  Shape grouped = {-1, 2, C / 2, H, W}, swapped(5);
  for (size_t a = 0; a < 5; ++a)
    swapped[a] = grouped[perm[a]];
  int split =
      b.op("Reshape", {joined, b.weight("to5", longs(grouped))}, grouped);
  int t = b.op("Transpose", {split}, swapped, Attrs().ints("perm", perm));
  return b.op("Reshape", {t, b.weight("to4", longs({-1, C, H, W}))},
              {-1, C, H, W});
}

// ShuffleNet's concat and two-group channel shuffle (Concat, Reshape to 5-D,
// Transpose, Reshape back) become one ConcatShuffle; with another perm, or
// the concat read elsewhere, the ops stay.
TEST(Executor, FusesChannelShuffles) {
  std::mt19937 rng(27);
  const int64_t C = 24, H = 5, W = 4;
  enum Case { Shuffle, OtherPerm, ConcatRead };
  for (Case c : {Shuffle, OtherPerm, ConcatRead}) {
    SCOPED_TRACE(c);
    PlanBuilder b;
    int x = b.input("x", {-1, C / 2, H, W}), cat;
    int y = channelShuffle(b, rng, x, C, H, W,
                           c == OtherPerm ? std::vector<int64_t>{0, 2, 1, 4, 3}
                                          : std::vector<int64_t>{0, 2, 1, 3, 4},
                           &cat);
    b.output("y", b.op("Relu", {y}, {-1, C, H, W}));
    if (c == ConcatRead)
      b.output("concat", cat);
    std::vector<std::vector<Tensor>> runs;
    for (int64_t batch : {1, 3})
      runs.push_back({randomTensor({batch, C / 2, H, W}, rng, -2.f, 2.f)});
    expectFusion(b, "ConcatShuffle", c == Shuffle ? 1 : 0, runs, 0.f);
  }
}

// The two channel halves the next ShuffleNet block slices the shuffled
// tensor into become the ConcatShuffle's two outputs (the Slices go), with
// the bounds in each of ONNX's forms; other ranges, a Slice of another
// axis, and a shuffled tensor read elsewhere too keep the Slices.
TEST(Executor, FusesShuffleChunks) {
  std::mt19937 rng(28);
  const int64_t C = 24, H = 5, W = 4;
  enum Case {
    Halves,
    HalvesFromEnd,
    HalvesAsAttributes,
    Thirds,
    OtherAxis,
    ReadElsewhere
  };
  for (Case c : {Halves, HalvesFromEnd, HalvesAsAttributes, Thirds, OtherAxis,
                 ReadElsewhere}) {
    SCOPED_TRACE(c);
    PlanBuilder b;
    int x = b.input("x", {-1, C / 2, H, W});
    int y = channelShuffle(b, rng, x, C, H, W, {0, 2, 1, 3, 4});
    // Bounds [from, to) of the second slice's axis; the first takes the
    // rest of that axis before `from`.
    int64_t axis = c == OtherAxis ? 2 : 1, n = c == OtherAxis ? H : C;
    int64_t from = c == Thirds ? C / 3 : n / 2;
    auto sliced = [&](int64_t count) {
      Shape shape = {-1, C, H, W};
      shape[axis] = count;
      return shape;
    };
    // Bounds as weights (inputs 1 to 4), or as attributes (opset 1's
    // form, and constant folding's for computed ones).
    auto slice = [&](std::string name, std::vector<int64_t> bounds,
                     int64_t count) {
      if (c == HalvesAsAttributes)
        return b.op("Slice", {y}, sliced(count),
                    Attrs()
                        .ints("starts", {bounds[0]})
                        .ints("ends", {bounds[1]})
                        .ints("axes", {bounds[2]}));
      std::vector<int> inputs = {y};
      for (auto [k, v] : llvm::enumerate(bounds))
        inputs.push_back(b.weight(name + std::to_string(k), longs({v})));
      return b.op("Slice", inputs, sliced(count));
    };
    int lo = slice("lo", {0, from, axis}, from);
    // From the end: a negative start, an end past the axis, and a step.
    int hi = c == HalvesFromEnd
                 ? slice("hi", {-(n - from), INT64_MAX, -3, 1}, n - from)
                 : slice("hi", {from, n, axis}, n - from);
    b.output("lo", lo);
    b.output("hi", b.op("Relu", {hi}, sliced(n - from)));
    if (c == ReadElsewhere)
      b.output("shuffled", y);
    std::vector<std::vector<Tensor>> runs;
    for (int64_t batch : {1, 3})
      runs.push_back({randomTensor({batch, C / 2, H, W}, rng, -2.f, 2.f)});
    bool fuses = c == Halves || c == HalvesFromEnd || c == HalvesAsAttributes;
    expectFusion(b, "Slice", fuses ? 0 : 2, runs, 0.f);
  }
}

// A residual Add and the LayerNormalization of its sum become one
// SkipLayerNormalization: post-norm (the sum read only by the norm, axis
// given as the last), pre-norm (the sum read on by the next residual Add:
// a second output), without a bias. Addends of different declared shapes,
// or a reader of the sum before the norm, keep the ops apart.
TEST(Executor, FusesSkipLayerNorms) {
  std::mt19937 rng(23);
  const int64_t B = 3, T = 4, C = 40;
  Tensor gamma = randomTensor({C}, rng, 0.5f, 1.5f),
         beta = randomTensor({C}, rng);
  enum Case { PostNorm, PreNorm, NoBias, Broadcast, ReadBefore };
  for (Case c : {PostNorm, PreNorm, NoBias, Broadcast, ReadBefore}) {
    SCOPED_TRACE(c);
    PlanBuilder b;
    int x = b.input("x", {-1, T, C});
    int other = c == Broadcast ? b.weight("pos", randomTensor({1, T, C}, rng))
                               : b.op("Relu", {x}, {-1, T, C});
    int early = -1;
    if (c == ReadBefore)
      early = b.op("Sigmoid", {x}, {-1, T, C});
    int sum = b.op("Add", {x, other}, {-1, T, C});
    if (c == ReadBefore)
      b.output("before", b.op("Mul", {early, sum}, {-1, T, C}));
    std::vector<int> norm = {sum, b.weight("gamma", gamma)};
    if (c != NoBias)
      norm.push_back(b.weight("beta", beta));
    int y = b.op("LayerNormalization", norm, {-1, T, C},
                 Attrs().i("axis", 2).f("epsilon", 1e-5f));
    b.output("y", y);
    if (c == PreNorm)
      b.output("residual", b.op("Add", {sum, y}, {-1, T, C}));
    bool fuses = c == PostNorm || c == PreNorm || c == NoBias;
    expectFusion(b, "SkipLayerNormalization", fuses ? 1 : 0,
                 {{randomTensor({B, T, C}, rng, -3.f, 3.f)}});
  }
}

// Attention as PyTorch exports it becomes one op that reads Q, K and V
// through their transposes and writes the result transposed: a GPT-style
// block ([B, T, H, D] heads, scale on the scores, a causal mask by Where),
// nn.MultiheadAttention's ([T, B*H, D], Q divided before the product), and
// plain 3-D operands with K^T given and a padding mask. A Softmax read
// elsewhere, or a transpose that moves the head dimension off the last
// axis, keeps the ops apart.
TEST(Executor, FusesAttention) {
  std::mt19937 rng(21);
  const int64_t B = 2, T = 5, H = 3, D = 4;
  Tensor causal(DType::Bool, {T, T});
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j)
      causal.data<uint8_t>()[i * T + j] = j > i;
  Tensor inf(DType::F32, {});
  inf.data<float>()[0] = -INFINITY;
  Tensor scale(DType::F32, {});
  scale.data<float>()[0] = 0.5f;
  enum Case { Gpt, Mha, Plain, SharedKey, SoftmaxRead, HeadMoved };
  for (Case c : {Gpt, Mha, Plain, SharedKey, SoftmaxRead, HeadMoved}) {
    SCOPED_TRACE(c);
    PlanBuilder b;
    std::vector<Tensor> in;
    int y;
    if (c == Mha) {
      int q = b.input("q", {T, B * H, D}), k = b.input("k", {T, B * H, D}),
          v = b.input("v", {T, B * H, D});
      int qt = b.op("Transpose", {q}, {B * H, T, D},
                    Attrs().ints("perm", {1, 0, 2}));
      int qs = b.op("Div", {qt, b.weight("two", scale)}, {B * H, T, D});
      int kt = b.op("Transpose", {k}, {B * H, D, T},
                    Attrs().ints("perm", {1, 2, 0}));
      int vt = b.op("Transpose", {v}, {B * H, T, D},
                    Attrs().ints("perm", {1, 0, 2}));
      int s = b.op("MatMul", {qs, kt}, {B * H, T, T});
      int p = b.op("Softmax", {s}, {B * H, T, T}, Attrs().i("axis", -1));
      int o = b.op("MatMul", {p, vt}, {B * H, T, D});
      y = b.op("Transpose", {o}, {T, B * H, D},
               Attrs().ints("perm", {1, 0, 2}));
      for (int i = 0; i < 3; ++i)
        in.push_back(randomTensor({T, B * H, D}, rng, -2.f, 2.f));
    } else if (c == Plain || c == SharedKey) {
      // SharedKey: one K^T for the whole batch (broadcast), which the
      // Attention kernels do not take.
      int64_t kb = c == SharedKey ? 1 : B;
      int q = b.input("q", {B, T, D}), kt = b.input("kt", {kb, D, T + 2}),
          v = b.input("v", {B, T + 2, D + 1});
      // A padding mask, [B, 1, S], that keeps the scores where it is true.
      Tensor keep(DType::Bool, {B, 1, T + 2});
      for (int64_t i = 0; i < keep.numElements(); ++i)
        keep.data<uint8_t>()[i] = i % 3 != 1;
      Tensor low(DType::F32, {1});
      low.data<float>()[0] = -1e4f;
      int s = b.op("MatMul", {q, kt}, {B, T, T + 2});
      int masked =
          b.op("Where", {b.weight("keep", keep), s, b.weight("low", low)},
               {B, T, T + 2});
      int p = b.op("Softmax", {masked}, {B, T, T + 2});
      y = b.op("MatMul", {p, v}, {B, T, D + 1});
      in = {randomTensor({B, T, D}, rng, -2.f, 2.f),
            randomTensor({kb, D, T + 2}, rng, -2.f, 2.f),
            randomTensor({B, T + 2, D + 1}, rng, -2.f, 2.f)};
    } else {
      // HeadMoved: q is [B, H, D, T], its D not last.
      Shape qShape = c == HeadMoved ? Shape{B, H, D, T} : Shape{B, T, H, D};
      int q = b.input("q", qShape), k = b.input("k", {B, T, H, D}),
          v = b.input("v", {B, T, H, D});
      int qt =
          b.op("Transpose", {q}, {B, H, T, D},
               Attrs().ints("perm", c == HeadMoved
                                        ? std::vector<int64_t>{0, 1, 3, 2}
                                        : std::vector<int64_t>{0, 2, 1, 3}));
      int kt = b.op("Transpose", {k}, {B, H, D, T},
                    Attrs().ints("perm", {0, 2, 3, 1}));
      int vt = b.op("Transpose", {v}, {B, H, T, D},
                    Attrs().ints("perm", {0, 2, 1, 3}));
      int s = b.op("MatMul", {qt, kt}, {B, H, T, T});
      int scaled = b.op("Mul", {s, b.weight("scale", scale)}, {B, H, T, T});
      int masked = b.op(
          "Where", {b.weight("mask", causal), b.weight("inf", inf), scaled},
          {B, H, T, T});
      int p = b.op("Softmax", {masked}, {B, H, T, T}, Attrs().i("axis", 3));
      if (c == SoftmaxRead)
        b.output("probabilities", p);
      int o = b.op("MatMul", {p, vt}, {B, H, T, D});
      y = b.op("Transpose", {o}, {B, T, H, D},
               Attrs().ints("perm", {0, 2, 1, 3}));
      in = {randomTensor(qShape, rng, -2.f, 2.f),
            randomTensor({B, T, H, D}, rng, -2.f, 2.f),
            randomTensor({B, T, H, D}, rng, -2.f, 2.f)};
    }
    b.output("y", y);
    expectFusion(b, "Attention", c == Gpt || c == Mha || c == Plain ? 1 : 0,
                 {in});
  }
}

// Swin's window attention: q, k and v three Gathers of one transposed
// tensor, a relative-position bias added to the scores and, in shifted
// windows, a shift mask added with the scores seen per window, an
// inference Dropout on the probabilities. One Attention reads the
// untransposed tensor, and the Transpose goes; read elsewhere too, it
// stays. Heads of 37 tokens of 20 dimensions (several vectors a row, the
// last partial) and of 70 tokens (past the small-head products: sgemm)
// too. A bias that varies along the (dynamic) batch keeps the ops apart.
TEST(Executor, FusesWindowAttention) {
  std::mt19937 rng(22);
  const int64_t W = 4, H = 2; // windows, heads
  auto index = [](int64_t i) {
    Tensor t(DType::I64, {});
    t.data<int64_t>()[0] = i;
    return t;
  };
  Tensor scale(DType::F32, {});
  scale.data<float>()[0] = 0.5f;
  enum Case { Plain, Shifted, Wide, Long, QkvReadElsewhere, BiasAlongBatch };
  for (Case c :
       {Plain, Shifted, Wide, Long, QkvReadElsewhere, BiasAlongBatch}) {
    SCOPED_TRACE(c);
    // Tokens and dimensions of a head.
    int64_t N = c == Wide ? 37 : c == Long ? 70 : 5;
    int64_t D = c == Wide ? 20 : c == Long ? 8 : 3;
    bool shifted = c == Shifted || c == Wide || c == Long;
    PlanBuilder b;
    int x = b.input("x", {-1, N, 3, H, D});
    int qkv = b.op("Transpose", {x}, {3, -1, H, N, D},
                   Attrs().ints("perm", {2, 0, 3, 1, 4}));
    int q = b.op("Gather", {qkv, b.weight("i0", index(0))}, {-1, H, N, D});
    int k = b.op("Gather", {qkv, b.weight("i1", index(1))}, {-1, H, N, D});
    int v = b.op("Gather", {qkv, b.weight("i2", index(-1))}, {-1, H, N, D});
    int qs = b.op("Mul", {q, b.weight("scale", scale)}, {-1, H, N, D});
    int kt = b.op("Transpose", {k}, {-1, H, D, N},
                  Attrs().ints("perm", {0, 1, 3, 2}));
    int s = b.op("MatMul", {qs, kt}, {-1, H, N, N});
    Shape biasShape = c == BiasAlongBatch ? Shape{W, H, N, N} : Shape{H, N, N};
    s = b.op("Add", {s, b.weight("bias", randomTensor(biasShape, rng))},
             {-1, H, N, N});
    if (shifted) {
      int windows = b.op("Reshape", {s}, {-1, W, H, N, N},
                         Attrs().ints("shape", {-1, W, H, N, N}));
      Tensor mask = randomTensor({1, W, 1, N, N}, rng, -100.f, 0.f);
      int masked =
          b.op("Add", {b.weight("mask", mask), windows}, {-1, W, H, N, N});
      s = b.op("Reshape", {masked}, {-1, H, N, N},
               Attrs().ints("shape", {-1, H, N, N}));
    }
    int p = b.op("Softmax", {s}, {-1, H, N, N}, Attrs().i("axis", -1));
    int dropped = b.op("Dropout", {p}, {-1, H, N, N});
    int o = b.op("MatMul", {dropped, v}, {-1, H, N, D});
    b.output("y", b.op("Transpose", {o}, {-1, N, H, D},
                       Attrs().ints("perm", {0, 2, 1, 3})));
    if (c == QkvReadElsewhere)
      b.output("qkv", qkv);
    std::vector<std::vector<Tensor>> runs;
    // Two batches, but one where the bias fixes it.
    for (int64_t batch : {W, c == BiasAlongBatch ? W : 3 * W})
      runs.push_back({randomTensor({batch, N, 3, H, D}, rng, -2.f, 2.f)});
    expectFusion(b, "Attention", c == BiasAlongBatch ? 0 : 1, runs);
    auto fused = Executor::create(b.build());
    ASSERT_TRUE(bool(fused)) << llvm::toString(fused.takeError());
    EXPECT_EQ(llvm::count_if(
                  (*fused)->plan().ops(),
                  [](const plan::Op &op) { return op.type() == "Transpose"; }),
              c == QkvReadElsewhere ? 1
              : c == BiasAlongBatch ? 3
                                    : 0);
  }
}

// torch.roll as PyTorch exports it, two Slices and a Concat per axis,
// becomes one Roll: along two axes (bounds as attributes, from the end, as
// Swin's cyclic shift has them; and as weights), one Roll for both;
// along one. Slices that are not the two ends swapped (the halves in
// order, a gap) or read elsewhere stay.
TEST(Executor, FusesRolls) {
  std::mt19937 rng(24);
  const int64_t H = 6, W = 5, C = 4;
  auto ints = [](std::vector<int64_t> v) {
    return Tensor::fromInts({static_cast<int64_t>(v.size())}, v);
  };
  enum Case { TwoAxes, OneAxis, InOrder, Gap, SliceReadElsewhere };
  for (Case c : {TwoAxes, OneAxis, InOrder, Gap, SliceReadElsewhere}) {
    SCOPED_TRACE(c);
    PlanBuilder b;
    int x = b.input("x", {-1, H, W, C});
    // Along H as Swin's shift has it: [-2, end) then [0, -2) (InOrder: the
    // other way round; Gap: [0, 3)).
    Attrs head = Attrs()
                     .ints("starts", {c == InOrder ? 0 : -2})
                     .ints("ends", {c == InOrder ? -2 : INT64_MAX})
                     .ints("axes", {1});
    Attrs tail = Attrs()
                     .ints("starts", {c == InOrder ? -2 : 0})
                     .ints("ends", {c == InOrder ? INT64_MAX
                                    : c == Gap   ? 3
                                                 : -2})
                     .ints("axes", {1});
    int64_t first = c == InOrder ? H - 2 : 2, second = c == Gap       ? 3
                                                       : c == InOrder ? 2
                                                                      : H - 2;
    int s1 = b.op("Slice", {x}, {-1, first, W, C}, head);
    int s2 = b.op("Slice", {x}, {-1, second, W, C}, tail);
    int y = b.op("Concat", {s1, s2}, {-1, first + second, W, C},
                 Attrs().i("axis", 1));
    if (c == SliceReadElsewhere)
      b.output("s1", s1);
    if (c == TwoAxes) {
      // Along W by 1, bounds as weights: [1, 5) then [0, 1).
      int s3 = b.op("Slice",
                    {y, b.weight("st3", ints({1})), b.weight("en3", ints({W})),
                     b.weight("ax3", ints({2}))},
                    {-1, H, W - 1, C});
      int s4 = b.op("Slice",
                    {y, b.weight("st4", ints({0})), b.weight("en4", ints({1})),
                     b.weight("ax4", ints({-2}))},
                    {-1, H, 1, C});
      y = b.op("Concat", {s3, s4}, {-1, H, W, C}, Attrs().i("axis", -2));
    }
    b.output("y", y);
    std::vector<std::vector<Tensor>> runs = {{randomTensor({1, H, W, C}, rng)},
                                             {randomTensor({3, H, W, C}, rng)}};
    expectFusion(b, "Roll", c == TwoAxes || c == OneAxis ? 1 : 0, runs, 0.f);
  }
  // The two rolls give torch.roll's output, here by (-2, -1) over (H, W).
  PlanBuilder b;
  int x = b.input("x", {1, H, W, C});
  b.output("y", b.op("Roll", {x}, {1, H, W, C},
                     Attrs().ints("offsets", {0, 2, -4, 0})));
  auto roll = Executor::create(b.build());
  ASSERT_TRUE(bool(roll)) << llvm::toString(roll.takeError());
  Tensor in = randomTensor({1, H, W, C}, rng);
  Tensor out = llvm::cantFail((*roll)->run({in}))[0];
  for (int64_t h = 0; h < H; ++h)
    for (int64_t w = 0; w < W; ++w)
      for (int64_t k = 0; k < C; ++k)
        EXPECT_EQ(out.data<float>()[(h * W + w) * C + k],
                  in.data<float>()[(((h + 2) % H) * W + (w + 1) % W) * C + k]);
}

/// x -> Pad(pads, value) -> `next` (AveragePool 3x3 or Conv 3x3, with
/// `nextAttrs`): the fused plan's op count and whether its output matches
/// the unfused executor's.
static void checkPadFolding(std::vector<int64_t> pads, float value,
                            const std::string &next, Attrs nextAttrs,
                            int expectedOps) {
  SCOPED_TRACE(next + " after Pad " + shapeToString(pads));
  std::mt19937 rng(23);
  PlanBuilder b;
  int x = b.input("x", {-1, 4, 7, 7});
  Shape padded = {-1, 4 + pads[1] + pads[5], 7 + pads[2] + pads[6],
                  7 + pads[3] + pads[7]};
  int p = b.op("Pad",
               {x, b.weight("pads", Tensor::fromInts({8}, pads)),
                b.weight("value", Tensor::fromFloats({1}, {value}))},
               padded, Attrs().s("mode", "constant"));
  std::vector<int> inputs = {p};
  if (next == "Conv")
    inputs.push_back(b.weight("w", randomTensor({4, padded[1], 3, 3}, rng)));
  Shape out = {-1, next == "Conv" ? 4 : padded[1], -1, -1};
  b.output("y",
           b.op(next, inputs, out, nextAttrs.ints("kernel_shape", {3, 3})));
  ExecutorOptions plain;
  plain.fuse = false;
  auto unfused = Executor::create(b.build(), plain);
  auto fused = Executor::create(b.build());
  ASSERT_TRUE(static_cast<bool>(unfused)) << errorOf(unfused.takeError());
  ASSERT_TRUE(static_cast<bool>(fused)) << errorOf(fused.takeError());
  EXPECT_EQ((*fused)->plan().ops_size(), expectedOps);
  Tensor in = randomTensor({2, 4, 7, 7}, rng);
  auto want = (*unfused)->run({in});
  ASSERT_TRUE(static_cast<bool>(want)) << errorOf(want.takeError());
  auto got = (*fused)->run({in});
  ASSERT_TRUE(static_cast<bool>(got)) << errorOf(got.takeError());
  EXPECT_TRUE(allClose((*got)[0], (*want)[0], 1e-5f, 1e-6f));
}

TEST(Executor, FoldsZeroPadsIntoPoolsAndConvs) {
  std::vector<int64_t> spatial = {0, 0, 1, 2, 0, 0, 1, 0};
  checkPadFolding(spatial, 0, "AveragePool", Attrs(), 1);
  checkPadFolding(spatial, 0, "Conv", Attrs(), 1);
  // The pool's own pads, counted: they add up.
  checkPadFolding(spatial, 0, "AveragePool",
                  Attrs().ints("pads", {1, 1, 1, 1}).i("count_include_pad", 1),
                  1);
}

TEST(Executor, KeepsPadsThatCannotFold) {
  std::vector<int64_t> spatial = {0, 0, 1, 1, 0, 0, 1, 1};
  // Not zeros; on the channels; a ceil-mode pool; a pool excluding its own
  // pads from the average.
  checkPadFolding(spatial, 0.5f, "AveragePool", Attrs(), 2);
  checkPadFolding({0, 1, 1, 1, 0, 0, 1, 1}, 0, "AveragePool", Attrs(), 2);
  checkPadFolding(spatial, 0, "AveragePool", Attrs().i("ceil_mode", 1), 2);
  checkPadFolding(spatial, 0, "AveragePool", Attrs().ints("pads", {1, 1, 1, 1}),
                  2);
}

/// A BatchNormalization of `in` ([N, 8, 6, 6]) with random scale, bias,
/// mean and variance named `n` + s, b, m, v.
static int batchNorm8(PlanBuilder &b, int in, const std::string &n,
                      std::mt19937 &rng) {
  auto channel = [&](float lo, float hi) {
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(8);
    for (float &f : v)
      f = u(rng);
    return Tensor::fromFloats({8}, v);
  };
  return b.op("BatchNormalization",
              {in, b.weight(n + "s", channel(0.5f, 1.5f)),
               b.weight(n + "b", channel(-1, 1)),
               b.weight(n + "m", channel(-1, 1)),
               b.weight(n + "v", channel(0.5f, 2))},
              {-1, 8, 6, 6});
}

TEST(Executor, RunsBatchNormsWithAFusedRelu) {
  // x -> BatchNorm -> Relu -> Conv -> BatchNorm -> Relu: after
  // fuseTrainableActivations (what the trainers run) the first batch norm
  // keeps its Relu, the second folds into the Conv and hands it its Relu.
  std::mt19937 rng(21);
  PlanBuilder b;
  int x = b.input("x", {-1, 8, 6, 6});
  auto bn = [&](int in, const std::string &n) {
    return batchNorm8(b, in, n, rng);
  };
  int a = b.op("Relu", {bn(x, "bn0")}, {-1, 8, 6, 6});
  int c = b.op("Conv", {a, b.weight("w", randomTensor({8, 8, 3, 3}, rng))},
               {-1, 8, 6, 6}, Attrs().ints("pads", {1, 1, 1, 1}));
  b.output("y", b.op("Relu", {bn(c, "bn1")}, {-1, 8, 6, 6}));
  plan::Plan plain = b.build(), fused = plain;
  ASSERT_EQ(fuseTrainableActivations(fused), 2);
  Tensor in = randomTensor({2, 8, 6, 6}, rng);
  ExecutorOptions unfused;
  unfused.fuse = false;
  auto plainExec = Executor::create(plain, unfused),
       fusedExec = Executor::create(fused),
       // The inference rewrites alone: fuseActivations gives the first
       // batch norm its Relu too.
      inferenceExec = Executor::create(plain);
  ASSERT_TRUE(static_cast<bool>(plainExec)) << errorOf(plainExec.takeError());
  ASSERT_TRUE(static_cast<bool>(fusedExec)) << errorOf(fusedExec.takeError());
  ASSERT_TRUE(static_cast<bool>(inferenceExec))
      << errorOf(inferenceExec.takeError());
  EXPECT_EQ((*fusedExec)->plan().ops_size(), 2);
  const plan::Plan &inferred = (*inferenceExec)->plan();
  ASSERT_EQ(inferred.ops_size(), 2);
  EXPECT_EQ(inferred.ops(0).type(), "BatchNormalization");
  auto want = (*plainExec)->run({in});
  ASSERT_TRUE(static_cast<bool>(want));
  for (auto *exec : {&*fusedExec, &*inferenceExec}) {
    auto got = (*exec)->run({in});
    ASSERT_TRUE(static_cast<bool>(got));
    EXPECT_TRUE(allClose((*got)[0], (*want)[0], 1e-5f, 1e-6f));
  }
}

TEST(Executor, RunsAddsWithAFusedRelu) {
  // x -> Conv -> BatchNorm -> Add(x) -> Relu, a ResNet block's end: after
  // fuseTrainableActivations the Add holds the Relu, and the inference
  // rewrites fold the batch norm into the Conv, the Add into the Conv's
  // sum, and the Add's Relu into the Conv too. x + x -> Relu keeps an Add
  // with a Relu; an Add that a second op reads keeps its Relu apart.
  std::mt19937 rng(23);
  PlanBuilder b;
  Shape shape = {-1, 8, 6, 6};
  int x = b.input("x", shape);
  int c = b.op("Conv", {x, b.weight("w", randomTensor({8, 8, 3, 3}, rng))},
               shape, Attrs().ints("pads", {1, 1, 1, 1}));
  int bn = batchNorm8(b, c, "bn", rng);
  b.output("block", b.op("Relu", {b.op("Add", {bn, x}, shape)}, shape));
  b.output("sum", b.op("Relu", {b.op("Add", {x, x}, shape)}, shape));
  int shared = b.op("Add", {x, x}, shape);
  b.output("shared", b.op("Relu", {shared}, shape));
  b.output("also", shared);
  plan::Plan plain = b.build(), fused = plain;
  ASSERT_EQ(fuseTrainableActivations(fused), 2);
  ExecutorOptions unfused;
  unfused.fuse = false;
  auto plainExec = Executor::create(plain, unfused),
       fusedExec = Executor::create(fused);
  ASSERT_TRUE(static_cast<bool>(plainExec)) << errorOf(plainExec.takeError());
  ASSERT_TRUE(static_cast<bool>(fusedExec)) << errorOf(fusedExec.takeError());
  std::vector<std::string> types;
  for (const plan::Op &op : (*fusedExec)->plan().ops())
    types.push_back(op.type());
  EXPECT_EQ(llvm::count(types, "Relu"), 1);
  EXPECT_EQ(llvm::count(types, "Add"), 2);
  Tensor in = randomTensor({2, 8, 6, 6}, rng);
  auto want = (*plainExec)->run({in});
  auto got = (*fusedExec)->run({in});
  ASSERT_TRUE(static_cast<bool>(want));
  ASSERT_TRUE(static_cast<bool>(got));
  for (size_t i = 0; i < want->size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    EXPECT_TRUE(allClose((*got)[i], (*want)[i], 1e-5f, 1e-6f));
  }
}

// moveReluMasksToMaxPools marks a MaxPool over Relu Convs, directly or
// through a Concat, when nothing else reads what lies between; the kernels'
// side is GradCheckTest's MovedReluMask.
TEST(Fusion, MovesReluMasksToMaxPoolsOverReluConvs) {
  std::mt19937 rng(5);
  PlanBuilder b;
  int x = b.input("x", {1, 8, 8, 8});
  Attrs window = Attrs().ints("kernel_shape", {2, 2}).ints("strides", {2, 2});
  auto conv = [&](int in, const std::string &name) {
    return b.op("Conv", {in, b.weight(name, randomTensor({8, 8, 1, 1}, rng))},
                {1, 8, 8, 8});
  };
  auto relu = [&](int in) { return b.op("Relu", {in}, {1, 8, 8, 8}); };
  auto pool = [&](int in, int64_t channels) {
    return b.op("MaxPool", {in}, {1, channels, 4, 4}, window);
  };
  auto concat = [&](std::vector<int> in) {
    return b.op("Concat", in, {1, 8 * int64_t(in.size()), 8, 8},
                Attrs().i("axis", 1));
  };
  b.output("direct", pool(relu(conv(x, "a")), 8));
  b.output("joined",
           pool(concat({relu(conv(x, "b")), relu(conv(x, "c"))}), 16));
  b.output("no_relu", pool(concat({relu(conv(x, "d")), conv(x, "e")}), 16));
  int shared = relu(conv(x, "f"));
  b.output("shared", pool(shared, 8));
  b.output("also", shared);
  plan::Plan p = b.build();
  ASSERT_EQ(fuseTrainableActivations(p), 5);
  EXPECT_EQ(moveReluMasksToMaxPools(p), 2);
  std::vector<std::string> marked;
  for (const plan::Op &op : p.ops())
    for (const plan::Attribute &a : op.attributes())
      if (a.name() == "relu_grad_masked" || a.name() == "grad_mask_relu")
        marked.push_back(op.type() + " " + a.name());
  EXPECT_EQ(marked, (std::vector<std::string>{
                        "Conv relu_grad_masked", "MaxPool grad_mask_relu",
                        "Conv relu_grad_masked", "Conv relu_grad_masked",
                        "MaxPool grad_mask_relu"}));
}

namespace {
/// x -> (Conv 1x1 -> Relu, Conv 3x3 -> Relu) -> Concat -> MaxPool -> Conv
/// 1x1 with `squeeze` outputs -> Relu: a SqueezeNet Fire module and the
/// next one's squeeze. With `shared`, the Concat is a graph output too.
plan::Plan fireModule(int64_t squeeze, bool shared, int64_t group = 1) {
  std::mt19937 rng(17);
  PlanBuilder b;
  Attrs pads = Attrs().ints("pads", {1, 1, 1, 1});
  int x = b.input("x", {-1, 8, 8, 8});
  int e1 = b.op("Conv", {x, b.weight("e1", randomTensor({8, 8, 1, 1}, rng))},
                {-1, 8, 8, 8});
  int e3 = b.op("Conv", {x, b.weight("e3", randomTensor({16, 8, 3, 3}, rng))},
                {-1, 16, 8, 8}, pads);
  int joined = b.op(
      "Concat",
      {b.op("Relu", {e1}, {-1, 8, 8, 8}), b.op("Relu", {e3}, {-1, 16, 8, 8})},
      {-1, 24, 8, 8}, Attrs().i("axis", 1));
  int pooled =
      b.op("MaxPool", {joined}, {-1, 24, 4, 4},
           Attrs().ints("kernel_shape", {2, 2}).ints("strides", {2, 2}));
  int s = b.op("Conv",
               {pooled,
                b.weight("s", randomTensor({squeeze, 24 / group, 1, 1}, rng)),
                b.weight("s_b", randomTensor({squeeze}, rng))},
               {-1, squeeze, 4, 4}, Attrs().i("group", group));
  b.output("y", b.op("Relu", {s}, {-1, squeeze, 4, 4}));
  if (shared)
    b.output("joined", joined);
  return b.build();
}
} // namespace

// splitConcatConvs: the squeeze Conv reads the two parts through a MaxPool
// each, over Slices of its weights, the second summing the first; the
// outputs are those of the plan as written.
TEST(Fusion, SplitsConcatsBeforeSqueezeConvs) {
  plan::Plan original = fireModule(4, false), split = original;
  ASSERT_EQ(splitConcatConvs(split), 1);
  std::vector<std::string> types;
  for (const plan::Op &op : split.ops())
    types.push_back(op.type());
  EXPECT_EQ(types, (std::vector<std::string>{
                       "Conv", "Conv", "Relu", "Relu", "MaxPool", "Slice",
                       "Conv", "MaxPool", "Slice", "Conv", "Relu"}));
  const plan::Op &second = split.ops(9);
  ASSERT_EQ(second.inputs_size(), 4);
  EXPECT_EQ(second.inputs(2), -1); // the bias went to the first part
  EXPECT_EQ(second.inputs(3), split.ops(6).outputs(0));
  EXPECT_EQ(split.values(split.ops(8).outputs(0)).dims(1), 16);

  std::mt19937 rng(4);
  Tensor in = randomTensor({3, 8, 8, 8}, rng);
  auto want = Executor::create(original), got = Executor::create(split);
  ASSERT_TRUE(static_cast<bool>(want)) << errorOf(want.takeError());
  ASSERT_TRUE(static_cast<bool>(got)) << errorOf(got.takeError());
  auto a = (*want)->run({in}), c = (*got)->run({in});
  ASSERT_TRUE(a && c);
  EXPECT_TRUE(allClose((*c)[0], (*a)[0], 1e-5f, 1e-5f));
}

// The inference rewrites split it too, and the Slices of the weights are
// computed when the executor is made: no Concat or Slice is left to run,
// and the outputs at batch 1 and 3 are those of the unfused plan.
TEST(Fusion, InferenceSplitsConcatsAndSlicesTheWeightsOnce) {
  plan::Plan p = fireModule(4, false);
  ExecutorOptions unfused;
  unfused.fuse = false;
  auto want = Executor::create(p, unfused), got = Executor::create(p);
  ASSERT_TRUE(static_cast<bool>(want)) << errorOf(want.takeError());
  ASSERT_TRUE(static_cast<bool>(got)) << errorOf(got.takeError());
  for (const plan::Op &op : (*got)->plan().ops())
    EXPECT_TRUE(op.type() != "Concat" && op.type() != "Slice") << op.name();
  std::mt19937 rng(6);
  for (int64_t batch : {1, 3}) {
    Tensor in = randomTensor({batch, 8, 8, 8}, rng);
    auto a = (*want)->run({in}), c = (*got)->run({in});
    ASSERT_TRUE(a && c);
    EXPECT_TRUE(allClose((*c)[0], (*a)[0], 1e-5f, 1e-5f)) << batch;
  }
}

// Left as they are: a Conv whose output is larger than the Concat's (the
// sums would cost more than the copy), a Concat something else reads, a
// grouped Conv.
TEST(Fusion, KeepsConcatsThatDoNotPayOrCannotSplit) {
  for (auto [squeeze, shared, group] :
       {std::tuple{int64_t(120), false, int64_t(1)},
        {int64_t(4), true, 1},
        {int64_t(4), false, 2}}) {
    plan::Plan p = fireModule(squeeze, shared, group);
    EXPECT_EQ(splitConcatConvs(p), 0) << squeeze << " " << shared;
  }
}

//===----------------------------------------------------------------------===//
// Pointwise + depthwise convolutions (MobileNet blocks)
//===----------------------------------------------------------------------===//

namespace {
/// x -> Conv 1x1 (16 -> 32) -> Clip(0, 6) -> depthwise Conv `kernel` x
/// `kernel` -> Clip, at depthwise stride `stride`, with or without the
/// depthwise bias; with `swish`, SiLU (x * Sigmoid(x), EfficientNet's) in
/// place of each Clip, on `size` x `size` images; with `project`, the
/// block's input is a 3x3 Conv of x (in a blocked layout, a value the
/// executor may hand over to be overwritten) and a 1x1 Conv back to 16
/// channels follows, plus that input at stride 1 (the whole block).
struct MobileNetBlock {
  MobileNetBlock(int64_t stride, bool dwBias, bool swish = false,
                 int64_t size = 9, int64_t kernel = 3, bool project = false)
      : stride(stride), swish(swish),
        dwW(randomTensor({32, 1, kernel, kernel}, rng)) {
    int64_t pad = kernel / 2;
    Attrs clip = Attrs().f("min", 0).f("max", 6);
    auto activate = [&](int v, Shape shape) {
      if (!swish)
        return b.op("Clip", {v}, shape, clip);
      return b.op("Mul", {v, b.op("Sigmoid", {v}, shape)}, shape);
    };
    int x = b.input("x", {-1, 16, size, size});
    if (project) {
      stemW = randomTensor({16, 16, 3, 3}, rng);
      x = b.op("Conv", {x, b.weight("stem", stemW)}, {-1, 16, size, size},
               Attrs().ints("pads", {1, 1, 1, 1}));
    }
    int pwOut = b.op("Conv", {x, b.weight("pw", w), b.weight("pw_b", bias)},
                     {-1, 32, size, size});
    int mid = activate(pwOut, {-1, 32, size, size});
    std::vector<int> dwInputs = {mid, b.weight("dw", dwW)};
    if (dwBias)
      dwInputs.push_back(b.weight("dw_b", dwB));
    int64_t out = (size - 1) / stride + 1;
    int dwOut = b.op("Conv", dwInputs, {-1, 32, out, out},
                     Attrs()
                         .i("group", 32)
                         .ints("strides", {stride, stride})
                         .ints("pads", {pad, pad, pad, pad}));
    int y = activate(dwOut, {-1, 32, out, out});
    if (project) {
      projW = randomTensor({16, 32, 1, 1}, rng);
      projB = randomTensor({16}, rng);
      y = b.op("Conv", {y, b.weight("proj", projW), b.weight("proj_b", projB)},
               {-1, 16, out, out});
      if (stride == 1)
        y = b.op("Add", {y, x}, {-1, 16, out, out});
    }
    b.output("y", y);
    if (!dwBias)
      dwB = Tensor();
  }
  Tensor reference(const Tensor &in) const {
    std::function<float(float)> act = [](float v) {
      return std::min(std::max(v, 0.f), 6.f);
    };
    if (swish)
      act = [](float v) { return v / (1.f + std::exp(-v)); };
    ConvParams pw{{1, 1}, {1, 1}, {0, 0, 0, 0}, 1};
    Tensor x = projW.isNull() ? in
                              : refConv(in, stemW, nullptr,
                                        {{1, 1}, {1, 1}, {1, 1, 1, 1}, 1});
    Tensor mid = refUnary(refConv(x, w, &bias, pw), act);
    int64_t pad = dwW.dim(2) / 2;
    ConvParams dw{{stride, stride}, {1, 1}, {pad, pad, pad, pad}, 32};
    Tensor y =
        refUnary(refConv(mid, dwW, dwB.isNull() ? nullptr : &dwB, dw), act);
    if (projW.isNull())
      return y;
    y = refConv(y, projW, &projB, pw);
    if (stride == 1)
      for (int64_t i = 0; i < y.numElements(); ++i)
        y.data<float>()[i] += x.data<float>()[i];
    return y;
  }
  std::mt19937 rng{11};
  int64_t stride;
  bool swish;
  Tensor w = randomTensor({32, 16, 1, 1}, rng), bias = randomTensor({32}, rng),
         dwW, dwB = randomTensor({32}, rng), projW, projB, stemW;
  PlanBuilder b;
};
} // namespace

// The pair fuses with ReLU6 and with SiLU (Swish from fuseSelfGates, then
// into the Convs), with 3x3, 5x5 and 7x7 windows, and gives the reference's
// outputs whichever way autotuning runs it: fused (oneDNN's or our own
// kernel), with the depthwise Swish as a pass after the fused convolution
// (SwishPass.h), or the two convolutions apart.
TEST(Executor, FusesDepthwiseConvIntoPointwiseConv) {
  for (int64_t kernel : {3, 5, 7})
    for (bool swish : {false, true})
      for (int64_t size : {9, 40})
        for (int64_t stride : {1, 2})
          for (bool dwBias : {true, false})
            for (bool autotune : {false, true}) {
              if (kernel != 3 && (size != 40 || dwBias))
                continue;
              SCOPED_TRACE(testing::Message()
                           << kernel << "x" << kernel << ", "
                           << (swish ? "SiLU" : "ReLU6") << ", size " << size
                           << ", stride " << stride << ", bias " << dwBias
                           << ", autotune " << autotune);
              MobileNetBlock block(stride, dwBias, swish, size, kernel);
              ExecutorOptions options;
              options.autotune = autotune;
              auto exec = Executor::create(block.b.build(), options);
              ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());
              const plan::Plan &fused = (*exec)->plan();
              ASSERT_EQ(fused.ops_size(), 1);
              EXPECT_EQ(fused.ops(0).inputs_size(), 6);
              for (int64_t batch : {1, 3}) {
                Tensor x =
                    randomTensor({batch, 16, size, size}, block.rng, -2, 2);
                auto out = (*exec)->run({x});
                ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
                EXPECT_TRUE(
                    allClose((*out)[0], block.reference(x), 1e-4f, 1e-5f));
              }
            }
}

// The block's projection (and residual, at stride 1) joins the pair: one op
// of 9 inputs giving the reference's outputs, fused by our own kernel or
// run as the pair and the projection's Conv, also when autotuning times
// both on a residual the projection's Conv may sum into in place.
TEST(Executor, FusesProjectionIntoDepthwiseConvPair) {
  for (int64_t kernel : {3, 5})
    for (int64_t stride : {1, 2})
      for (bool swish : {false, true})
        for (bool autotune : {false, true}) {
          SCOPED_TRACE(testing::Message()
                       << kernel << "x" << kernel << ", stride " << stride
                       << (swish ? ", SiLU" : ", ReLU6") << ", autotune "
                       << autotune);
          MobileNetBlock block(stride, true, swish, 40, kernel,
                               /*project=*/true);
          ExecutorOptions options;
          options.autotune = autotune;
          auto exec = Executor::create(block.b.build(), options);
          ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());
          const plan::Plan &fused = (*exec)->plan();
          ASSERT_EQ(fused.ops_size(), 2);
          EXPECT_EQ(fused.ops(1).inputs_size(), 9);
          for (int64_t batch : {1, 3}) {
            Tensor x = randomTensor({batch, 16, 40, 40}, block.rng, -2, 2);
            auto out = (*exec)->run({x});
            ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
            // Four convolutions deep (the first maybe Winograd's): their
            // rounding grows; a changed residual is off by far more.
            EXPECT_TRUE(allClose((*out)[0], block.reference(x), 1e-3f, 1e-3f));
          }
        }
}

// A projection whose input is also a graph output stays apart (its
// residual Add still joins it).
TEST(Executor, KeepsProjectionApartWhenItCannotFuse) {
  MobileNetBlock block(1, true, false, 9, 3, /*project=*/true);
  plan::Plan p = block.b.build();
  ASSERT_EQ(p.ops(4).type(), "Clip");
  plan::Binding *extra = p.add_outputs();
  extra->set_name("wide");
  extra->set_value(p.ops(4).outputs(0));
  auto exec = Executor::create(p);
  ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());
  const plan::Plan &fused = (*exec)->plan();
  ASSERT_EQ(fused.ops_size(), 3);
  EXPECT_EQ(fused.ops(1).inputs_size(), 6);
  EXPECT_EQ(fused.ops(2).inputs_size(), 4);
}

TEST(Executor, KeepsDepthwiseConvApartWhenItCannotFuse) {
  // A depthwise Conv whose input is also a graph output stays apart.
  MobileNetBlock block(1, true);
  plan::Plan p = block.b.build();
  plan::Binding *extra = p.add_outputs();
  extra->set_name("mid");
  extra->set_value(p.ops(1).outputs(0));
  auto exec = Executor::create(p);
  ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());
  EXPECT_EQ((*exec)->plan().ops_size(), 2);
}

// At batch 1 a Concat offers its producers their parts of its output for the
// next run: pools (plain here, like their input) compute there and the
// Concat copies only the rest. A value that joins twice, a graph input,
// values other ops read after the Concat and Convs in a layout that is not
// contiguous per input (channels-last, oneDNN's choice without autotuning
// on AVX-512) keep their values; so does a batch of 2 (no offers).
TEST(Executor, ComputesConcatInputsInPlaceAtBatchOne) {
  std::mt19937 rng(11);
  Tensor w3 = randomTensor({32, 16, 3, 3}, rng);
  PlanBuilder b;
  int x = b.input("x", {-1, 16, 10, 10}), z = b.input("z", {-1, 16, 10, 10});
  Attrs window =
      Attrs().ints("kernel_shape", {3, 3}).ints("pads", {1, 1, 1, 1});
  int p = b.op("MaxPool", {x}, {-1, 16, 10, 10}, window);
  int q = b.op("AveragePool", {x}, {-1, 16, 10, 10}, window);
  int y3 = b.op("Conv", {x, b.weight("w3", w3)}, {-1, 32, 10, 10},
                Attrs().ints("pads", {1, 1, 1, 1}));
  b.output("joined",
           b.op("Concat", {p, z, q}, {-1, 48, 10, 10}, Attrs().i("axis", 1)));
  b.output("twice",
           b.op("Concat", {q, q}, {-1, 32, 10, 10}, Attrs().i("axis", 1)));
  b.output("after", b.op("Relu", {p}, {-1, 16, 10, 10}));
  b.output("convs",
           b.op("Concat", {y3, p}, {-1, 48, 10, 10}, Attrs().i("axis", 1)));
  ExecutorOptions fixedLayouts;
  fixedLayouts.autotune = false;
  auto exec = Executor::create(b.build(), fixedLayouts);
  ASSERT_TRUE(static_cast<bool>(exec)) << errorOf(exec.takeError());

  auto check = [&](int64_t batch) {
    Tensor xs = randomTensor({batch, 16, 10, 10}, rng),
           zs = randomTensor({batch, 16, 10, 10}, rng);
    auto out = (*exec)->run(std::vector<Tensor>{xs, zs});
    ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
    Tensor rp = refPool2d(xs, {{3, 3}, {1, 1}, {1, 1, 1, 1}, true});
    Tensor rq = refPool2d(xs, {{3, 3}, {1, 1}, {1, 1, 1, 1}, false});
    Tensor r3 = refConv(xs, w3, nullptr, {{1, 1}, {1, 1}, {1, 1, 1, 1}, 1});
    EXPECT_TRUE(allClose((*out)[0], refConcat({rp, zs, rq}, 1)));
    EXPECT_TRUE(allClose((*out)[1], refConcat({rq, rq}, 1)));
    EXPECT_TRUE(allClose((*out)[2], refUnary(rp, relu)));
    EXPECT_TRUE(allClose((*out)[3], refConcat({r3, rp}, 1)));
  };
  // p and q join in place; so does the Conv where oneDNN's own choice of
  // its layout is in channel blocks (8 with AVX2), contiguous per item.
  int64_t perRun =
      dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core ? 2 : 3;
  check(1);
  EXPECT_EQ((*exec)->counter("joined_in_place"), 0); // nothing offered yet
  check(1);
  check(1);
  EXPECT_EQ((*exec)->counter("joined_in_place"), 2 * perRun);
  check(2);
  check(1);
  EXPECT_EQ((*exec)->counter("joined_in_place"), 2 * perRun); // offers for 2
  check(1);
  EXPECT_EQ((*exec)->counter("joined_in_place"), 3 * perRun);
}
