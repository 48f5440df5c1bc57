//===- BatchLoaderTest.cpp - shuffled, prefetched mini-batches ------------===//

#include "heterps/Runtime/Data/BatchLoader.h"

#include "gtest/gtest.h"

#include <set>

using namespace heterps::runtime;
using namespace heterps::runtime::data;

namespace {

/// Sample i has inputs {i, -i} and target i.
Dataset numbered(int64_t n) {
  std::vector<float> x;
  std::vector<int64_t> y;
  for (int64_t i = 0; i < n; ++i) {
    x.push_back(static_cast<float>(i));
    x.push_back(-static_cast<float>(i));
    y.push_back(i);
  }
  return {Tensor::fromFloats({n, 2}, x), Tensor::fromInts({n}, y), "numbered"};
}

/// The targets of every batch of `epoch`, in order.
std::vector<std::vector<int64_t>> epochTargets(BatchLoader &loader,
                                               int64_t epoch,
                                               int64_t first = 0) {
  std::vector<std::vector<int64_t>> batches;
  loader.startEpoch(epoch, first);
  while (std::optional<Batch> b = loader.next()) {
    const int64_t *y = b->targets.data<int64_t>();
    batches.emplace_back(y, y + b->targets.dim(0));
    // Inputs travel with their targets.
    for (int64_t i = 0; i < b->targets.dim(0); ++i)
      EXPECT_EQ(b->inputs.data<float>()[2 * i], static_cast<float>(y[i]));
  }
  return batches;
}

TEST(BatchLoader, EverySampleOncePerEpoch) {
  Dataset data = numbered(103);
  BatchLoader loader(data, {/*batchSize=*/10});
  EXPECT_EQ(loader.numBatches(), 11);
  auto batches = epochTargets(loader, 0);
  ASSERT_EQ(batches.size(), 11u);
  EXPECT_EQ(batches.back().size(), 3u); // the partial last batch
  std::set<int64_t> seen;
  for (const auto &b : batches)
    seen.insert(b.begin(), b.end());
  EXPECT_EQ(seen.size(), 103u);
}

TEST(BatchLoader, SeededPerEpochAndIndependentOfPrefetch) {
  Dataset data = numbered(64);
  BatchLoaderOptions options;
  options.batchSize = 8;
  BatchLoader a(data, options), b(data, options);
  options.prefetch = 0;
  BatchLoader direct(data, options);
  auto e0 = epochTargets(a, 0), e1 = epochTargets(a, 1);
  EXPECT_NE(e0, e1);                    // a new order each epoch
  EXPECT_EQ(epochTargets(b, 1), e1);    // the same order for the same epoch
  EXPECT_EQ(epochTargets(direct, 0), e0); // prefetching changes nothing
  options.seed = 2;
  BatchLoader other(data, options);
  EXPECT_NE(epochTargets(other, 0), e0);
  // Resuming mid-epoch gives the rest of the same epoch.
  auto rest = epochTargets(a, 1, 5);
  EXPECT_EQ(rest, std::vector<std::vector<int64_t>>(e1.begin() + 5, e1.end()));
}

TEST(BatchLoader, OrderMatchesThePythonPort) {
  // benchmarks/training/mt19937_64.py reproduces the order so that PyTorch
  // reference runs see the same batches; its epoch_order(10, 1, 0).
  Dataset data = numbered(10);
  BatchLoader loader(data, {/*batchSize=*/4});
  EXPECT_EQ(loader.order(0),
            (std::vector<int64_t>{6, 4, 0, 5, 3, 8, 2, 1, 9, 7}));
}

TEST(BatchLoader, UnshuffledAndDropLast) {
  Dataset data = numbered(10);
  BatchLoaderOptions options;
  options.batchSize = 4;
  options.shuffle = false;
  options.dropLast = true;
  BatchLoader loader(data, options);
  EXPECT_EQ(epochTargets(loader, 3),
            (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST(BatchLoader, AbandoningAnEpochMidwayIsSafe) {
  Dataset data = numbered(1000);
  BatchLoaderOptions options;
  options.batchSize = 7;
  BatchLoader loader(data, options);
  for (int epoch = 0; epoch < 20; ++epoch) {
    loader.startEpoch(epoch);
    loader.next();
  } // the worker is stopped by the next startEpoch and the destructor
  SUCCEED();
}

} // namespace
