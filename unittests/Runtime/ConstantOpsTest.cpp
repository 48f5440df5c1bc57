//===- ConstantOpsTest.cpp - ops of weights alone, computed once ---------===//

#include "PlanBuilder.h"
#include "Reference.h"

#include "../../lib/Runtime/ConstantOps.h"
#include "heterps/Runtime/Backends/CPU/CPUBackend.h"
#include "heterps/Runtime/Executor.h"
#include "heterps/Runtime/Weights.h"

#include "gtest/gtest.h"

using namespace heterps::runtime;
using namespace heterps::runtime::testutil;

namespace {

/// The number of ops of `e`'s plan of type `type`.
int count(const Executor &e, llvm::StringRef type) {
  int n = 0;
  for (const plan::Op &op : e.plan().ops())
    n += op.type() == type;
  return n;
}

/// y = x + (a + b) * scale: the sum and the product are computed from
/// weights alone.
struct ScaledSum {
  explicit ScaledSum(std::mt19937 &rng) {
    x = b.input("x", {-1, 3});
    Tensor scale(DType::F32, {});
    scale.data<float>()[0] = 0.25f;
    sum = b.op("Add",
               {b.weight("a", randomTensor({3}, rng)),
                b.weight("b", randomTensor({3}, rng))},
               {3});
    int product = b.op("Mul", {sum, b.weight("scale", scale)}, {3});
    b.output("y", b.op("Add", {x, product}, {-1, 3}));
  }
  PlanBuilder b;
  int x, sum;
};

ExecutorOptions unfolded() {
  ExecutorOptions o;
  o.foldConstants = false;
  return o;
}

} // namespace

// The sum and product of weights run once: the executor keeps only the
// Add that reads the input, and its outputs equal the unfolded executor's.
TEST(ConstantOps, FoldsOpsOfWeightsAlone) {
  std::mt19937 rng(41);
  ScaledSum g(rng);
  auto folded = llvm::cantFail(Executor::create(g.b.build()));
  auto plain = llvm::cantFail(Executor::create(g.b.build(), unfolded()));
  EXPECT_EQ(folded->plan().ops_size(), 1);
  EXPECT_EQ(plain->plan().ops_size(), 3);
  for (int64_t batch : {1, 4}) {
    Tensor in = randomTensor({batch, 3}, rng, -2.f, 2.f);
    std::vector<Tensor> want = llvm::cantFail(plain->run({in}));
    std::vector<Tensor> got = llvm::cantFail(folded->run({in}));
    EXPECT_TRUE(allClose(got[0], want[0], 0.f, 0.f));
  }
}

// An op whose output the graph returns keeps running (a graph output is
// computed by a run, not stored), and so do the ops that read it.
TEST(ConstantOps, KeepsOpsThatMakeGraphOutputs) {
  std::mt19937 rng(42);
  ScaledSum g(rng);
  g.b.output("sum", g.sum);
  auto folded = llvm::cantFail(Executor::create(g.b.build()));
  EXPECT_EQ(folded->plan().ops_size(), 3);
  std::vector<Tensor> out =
      llvm::cantFail(folded->run({randomTensor({2, 3}, rng)}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].shape(), Shape({3}));
}

// An op of weights that fails (shapes that do not broadcast) is left in
// the plan, so that running it fails with the kernel's message rather
// than the executor failing to be made, or the op vanishing.
TEST(ConstantOps, LeavesFailingOpsToTheRun) {
  std::mt19937 rng(43);
  PlanBuilder b;
  int x = b.input("x", {-1, 3});
  int bad = b.op("Add",
                 {b.weight("a", randomTensor({3}, rng)),
                  b.weight("b", randomTensor({4}, rng))},
                 {3});
  b.output("y", b.op("Add", {x, bad}, {-1, 3}));
  auto folded = llvm::cantFail(Executor::create(b.build()));
  EXPECT_EQ(count(*folded, "Add"), 2);
  llvm::Expected<std::vector<Tensor>> out =
      folded->run({randomTensor({2, 3}, rng)});
  ASSERT_FALSE(out);
  std::string message = llvm::toString(out.takeError());
  EXPECT_NE(message.find("Add"), std::string::npos) << message;
}

// A Shape of a weight folds to an i64 weight; the Reshape it feeds then
// reads a constant target, as a hand-written one would.
TEST(ConstantOps, FoldsIntegerOps) {
  std::mt19937 rng(44);
  PlanBuilder b;
  int x = b.input("x", {-1, 2, 3});
  int like = b.weight("like", randomTensor({6}, rng));
  int shape = b.op("Shape", {like}, {1}, Attrs(), DType::I64);
  Tensor batch(DType::I64, {1});
  batch.data<int64_t>()[0] = -1;
  int target = b.op("Concat", {b.weight("batch", batch), shape}, {2},
                    Attrs().i("axis", 0), DType::I64);
  b.output("y", b.op("Reshape", {x, target}, {-1, 6}));
  auto folded = llvm::cantFail(Executor::create(b.build()));
  auto plain = llvm::cantFail(Executor::create(b.build(), unfolded()));
  EXPECT_EQ(count(*folded, "Shape") + count(*folded, "Concat"), 0);
  EXPECT_EQ(count(*plain, "Shape") + count(*plain, "Concat"), 2);
  Tensor in = randomTensor({3, 2, 3}, rng);
  std::vector<Tensor> want = llvm::cantFail(plain->run({in}));
  std::vector<Tensor> got = llvm::cantFail(folded->run({in}));
  EXPECT_TRUE(allClose(got[0], want[0], 0.f, 0.f));
}

// An output over the size limit is not kept: its op stays to run, and the
// weights it reads stay with it. Under the limit it folds and the weights
// that only it read go.
TEST(ConstantOps, LeavesLargeOutputsToTheRun) {
  std::mt19937 rng(45);
  ScaledSum g(rng);
  plan::Plan plan = g.b.build();
  CPUBackend host(BackendOptions{0, /*autotune=*/false});
  WeightMap weights = llvm::cantFail(loadWeights(plan));
  size_t before = weights.size();
  // Each folded output is 3 floats, 12 bytes.
  plan::Plan tight = plan;
  EXPECT_EQ(foldConstantOps(tight, weights, host, /*maxBytes=*/11), 0);
  EXPECT_EQ(tight.ops_size(), 3);
  EXPECT_EQ(weights.size(), before);
  EXPECT_EQ(foldConstantOps(plan, weights, host, /*maxBytes=*/12), 2);
  EXPECT_EQ(plan.ops_size(), 1);
  // a, b and the scale went; the product came.
  EXPECT_EQ(weights.size(), 1u);
  EXPECT_TRUE(weights.count(plan.ops(0).inputs(1)));
}
