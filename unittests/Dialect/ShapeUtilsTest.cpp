//===- ShapeUtilsTest.cpp - shape arithmetic of the hps verifiers ---------===//

#include "ShapeUtils.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::hps;

static constexpr int64_t kDyn = ShapedType::kDynamic;

TEST(ShapeUtils, BroadcastFollowsNumpy) {
  EXPECT_EQ(*broadcastShapes({2, 3, 4}, {4}), Shape({2, 3, 4}));
  EXPECT_EQ(*broadcastShapes({3, 1}, {1, 4}), Shape({3, 4}));
  EXPECT_EQ(*broadcastShapes({}, {5}), Shape({5}));
  EXPECT_FALSE(broadcastShapes({2, 3}, {4}).has_value());
}

TEST(ShapeUtils, BroadcastKeepsDynamicDimensions) {
  EXPECT_EQ(*broadcastShapes({kDyn, 3}, {1, 3}), Shape({kDyn, 3}));
  // A known size other than 1 decides the result.
  EXPECT_EQ(*broadcastShapes({kDyn, 3}, {5, 1}), Shape({5, 3}));
}

TEST(ShapeUtils, WindowOutputSize) {
  // AlexNet conv1: 224 + 2*2 pad, kernel 11, stride 4 -> 55.
  EXPECT_EQ(*windowOutputSize(224, 11, 4, 1, 2, 2, false), 55);
  // Dilation 2 turns kernel 3 into a window of 5.
  EXPECT_EQ(*windowOutputSize(7, 3, 1, 2, 0, 0, false), 3);
  // ceil_mode rounds the last partial window up.
  EXPECT_EQ(*windowOutputSize(10, 3, 2, 1, 1, 1, false), 5);
  EXPECT_EQ(*windowOutputSize(10, 3, 2, 1, 1, 1, true), 6);
  EXPECT_EQ(*windowOutputSize(kDyn, 3, 1, 1, 0, 0, false), kDyn);
  EXPECT_FALSE(windowOutputSize(2, 5, 1, 1, 0, 0, false).has_value());
}

TEST(ShapeUtils, NormalizeAxis) {
  EXPECT_EQ(*normalizeAxis(-1, 4), 3);
  EXPECT_EQ(*normalizeAxis(0, 4), 0);
  EXPECT_FALSE(normalizeAxis(4, 4).has_value());
  EXPECT_FALSE(normalizeAxis(-5, 4).has_value());
}

TEST(ShapeUtils, FormatShape) {
  EXPECT_EQ(formatShape({1, kDyn, 224}), "[1, ?, 224]");
  EXPECT_EQ(formatShape({}), "[]");
}
