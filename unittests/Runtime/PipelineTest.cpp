//===- PipelineTest.cpp - stages over a stream of batches -----------------===//

#include "PlanBuilder.h"

#include "heterps/Runtime/Pipeline.h"

#include "gtest/gtest.h"

#include <random>

using namespace heterps::runtime;
using namespace heterps::runtime::testutil;

namespace {

Tensor random(Shape shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(numElements(shape)));
  for (float &x : v)
    x = u(rng);
  return Tensor::fromFloats(shape, v);
}

/// x -> Gemm -> Relu -> Gemm -> (+ x2) -> Sigmoid, with stages as given per
/// op; the graph input x2 is only read by the last ops, and the hidden
/// activation h is also a graph output, so values must travel past stages.
plan::Plan makePlan(std::vector<int> stageOfOp) {
  PlanBuilder b;
  int x = b.input("x", {-1, 8});
  int x2 = b.input("x2", {-1, 4});
  int g1 = b.op("Gemm", {x, b.weight("w1", random({8, 16}, 1)),
                         b.weight("b1", random({16}, 2))},
                {-1, 16});
  b.place("cpu", stageOfOp[0]);
  int h = b.op("Relu", {g1}, {-1, 16});
  b.place("cpu", stageOfOp[1]);
  int g2 = b.op("Gemm", {h, b.weight("w2", random({16, 4}, 3))}, {-1, 4});
  b.place("cpu", stageOfOp[2]);
  int sum = b.op("Add", {g2, x2}, {-1, 4});
  b.place("cpu", stageOfOp[3]);
  int y = b.op("Sigmoid", {sum}, {-1, 4});
  b.place("cpu", stageOfOp[4]);
  b.output("y", y);
  b.output("h", h);
  return b.build();
}

std::vector<std::vector<Tensor>> makeStream(int n) {
  std::vector<std::vector<Tensor>> stream;
  for (int i = 0; i < n; ++i)
    stream.push_back({random({1 + i % 3, 8}, 10 + i), random({1 + i % 3, 4}, 50 + i)});
  return stream;
}

void expectSame(const Tensor &a, const Tensor &b) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numElements(); ++i)
    ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]);
}

TEST(Pipeline, StagesAndReplicasGiveTheSequentialResults) {
  auto sequential = Executor::create(makePlan({0, 0, 0, 0, 0}));
  ASSERT_TRUE(bool(sequential)) << llvm::toString(sequential.takeError());
  std::vector<std::vector<Tensor>> stream = makeStream(23);
  for (std::vector<int> stages :
       {std::vector<int>{0, 0, 0, 0, 0}, {0, 1, 1, 2, 2}, {0, 0, 1, 1, 1}}) {
    for (std::vector<int> replicas : {std::vector<int>{}, {2, 3, 1}}) {
      PipelineOptions options;
      std::vector<std::pair<int, int>> ranges = stageRanges(makePlan(stages));
      if (!replicas.empty())
        replicas.resize(ranges.size(), 2);
      options.replicas = replicas;
      options.queueCapacity = 1;
      auto pipeline = PipelineExecutor::create(makePlan(stages), options);
      ASSERT_TRUE(bool(pipeline)) << llvm::toString(pipeline.takeError());
      EXPECT_EQ((*pipeline)->numStages(), static_cast<int>(ranges.size()));
      auto results = (*pipeline)->run(stream);
      ASSERT_TRUE(bool(results)) << llvm::toString(results.takeError());
      ASSERT_EQ(results->size(), stream.size());
      for (size_t i = 0; i < stream.size(); ++i) {
        auto expected = (*sequential)->run(stream[i]);
        ASSERT_TRUE(bool(expected));
        ASSERT_EQ((*results)[i].size(), 2u);
        expectSame((*results)[i][0], (*expected)[0]);
        expectSame((*results)[i][1], (*expected)[1]);
      }
      int64_t batches = 0;
      for (const StageStats &s : (*pipeline)->stats())
        batches += s.batches;
      EXPECT_EQ(batches, static_cast<int64_t>(ranges.size() * stream.size()));
    }
  }
}

TEST(Pipeline, AnErrorMidStreamStopsEveryStage) {
  auto pipeline = PipelineExecutor::create(makePlan({0, 1, 1, 2, 2}),
                                           {{}, 1, {2, 1, 2}});
  ASSERT_TRUE(bool(pipeline)) << llvm::toString(pipeline.takeError());
  std::vector<std::vector<Tensor>> stream = makeStream(40);
  stream[17][1] = random({2, 5}, 99); // x2 of the wrong width
  auto results = (*pipeline)->run(stream);
  ASSERT_FALSE(bool(results));
  std::string message = llvm::toString(results.takeError());
  EXPECT_NE(message.find("batch 17, stage 2:"), std::string::npos) << message;
  // The pipeline still works afterwards.
  auto again = (*pipeline)->run(makeStream(5));
  EXPECT_TRUE(bool(again)) << llvm::toString(again.takeError());
}

TEST(Pipeline, BadArguments) {
  auto wrongReplicas =
      PipelineExecutor::create(makePlan({0, 1, 1, 2, 2}), {{}, 2, {1, 1}});
  ASSERT_FALSE(bool(wrongReplicas));
  EXPECT_EQ(llvm::toString(wrongReplicas.takeError()),
            "replicas given for 2 stages, but the plan has 3");
  auto pipeline = PipelineExecutor::create(makePlan({0, 0, 0, 0, 0}));
  ASSERT_TRUE(bool(pipeline));
  auto results = (*pipeline)->run({{random({1, 8}, 1)}});
  ASSERT_FALSE(bool(results));
  EXPECT_EQ(llvm::toString(results.takeError()),
            "batch 0 has 1 inputs, the plan takes 2");
}

} // namespace
