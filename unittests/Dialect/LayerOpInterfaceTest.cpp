//===- LayerOpInterfaceTest.cpp - FLOPs, bytes and kinds of hps layers ----===//

#include "heterps/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::hps;

namespace {

class LayerOpInterfaceTest : public ::testing::Test {
protected:
  LayerOpInterfaceTest() {
    DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Parses `body` as the body of a function and returns its layers in order.
  SmallVector<LayerOpInterface> parse(StringRef signature, StringRef body) {
    std::string text =
        ("func.func @f" + signature + " {\n" + body + "\n}").str();
    module = parseSourceString<ModuleOp>(text, &context);
    EXPECT_TRUE(module) << text;
    SmallVector<LayerOpInterface> layers;
    if (module)
      module->walk([&](LayerOpInterface op) {
        if (op.getLayerKind() != LayerKind::constant)
          layers.push_back(op);
      });
    return layers;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(LayerOpInterfaceTest, ConvCountsMultiplyAddsAndBias) {
  auto layers = parse("(%x: tensor<2x3x8x8xf32>) -> tensor<2x4x4x4xf32>",
                      R"(%w = hps.weight "w" : tensor<4x3x3x3xf32>
         %b = hps.weight "b" : tensor<4xf32>
         %y = hps.conv %x, %w, %b {strides = array<i64: 2, 2>,
             dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
             group = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>,
             tensor<4xf32>) -> tensor<2x4x4x4xf32>
         return %y : tensor<2x4x4x4xf32>)");
  ASSERT_EQ(layers.size(), 1u);
  // 128 outputs, each a 27-element dot product, plus one bias add each.
  EXPECT_EQ(layers[0].getFlops(), 2 * 128 * 27 + 128);
  EXPECT_EQ(layers[0].getParamBytes(), (108 + 4) * 4);
  EXPECT_EQ(layers[0].getActivationBytes(), (384 + 128) * 4);
  EXPECT_EQ(layers[0].getLayerKind(), LayerKind::conv);
}

TEST_F(LayerOpInterfaceTest, GroupedConvUsesPerGroupChannels) {
  auto layers = parse("(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>",
                      R"(%w = hps.weight "w" : tensor<8x1x3x3xf32>
         %y = hps.conv %x, %w {strides = array<i64: 1, 1>,
             dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
             group = 8 : i64} : (tensor<1x8x4x4xf32>, tensor<8x1x3x3xf32>)
             -> tensor<1x8x4x4xf32>
         return %y : tensor<1x8x4x4xf32>)");
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_EQ(layers[0].getFlops(), 2 * 128 * 9);
}

TEST_F(LayerOpInterfaceTest, DynamicBatchCountsAsOne) {
  auto layers = parse("(%x: tensor<?x16xf32>) -> tensor<?x8xf32>",
                      R"(%w = hps.weight "w" : tensor<8x16xf32>
         %b = hps.weight "b" : tensor<8xf32>
         %y = hps.gemm %x, %w, %b {alpha = 1.0 : f32, beta = 1.0 : f32,
             trans_a = false, trans_b = true} : (tensor<?x16xf32>,
             tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
         return %y : tensor<?x8xf32>)");
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_EQ(layers[0].getFlops(), 2 * 8 * 16 + 2 * 8);
  EXPECT_EQ(layers[0].getLayerKind(), LayerKind::fc);
}

TEST_F(LayerOpInterfaceTest, MatMulKindDependsOnWeights) {
  auto layers = parse("(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> "
                      "(tensor<2x3x5xf32>, tensor<2x3x6xf32>)",
                      R"(%w = hps.weight "w" : tensor<4x6xf32>
         %0 = hps.matmul %a, %b : (tensor<2x3x4xf32>, tensor<2x4x5xf32>)
             -> tensor<2x3x5xf32>
         %1 = hps.matmul %a, %w : (tensor<2x3x4xf32>, tensor<4x6xf32>)
             -> tensor<2x3x6xf32>
         return %0, %1 : tensor<2x3x5xf32>, tensor<2x3x6xf32>)");
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].getLayerKind(), LayerKind::matmul);
  EXPECT_EQ(layers[0].getFlops(), 2 * 30 * 4);
  EXPECT_EQ(layers[0].getParamBytes(), 0);
  EXPECT_EQ(layers[1].getLayerKind(), LayerKind::fc);
  EXPECT_EQ(layers[1].getParamBytes(), 24 * 4);
}

TEST_F(LayerOpInterfaceTest, GatherFromWeightIsEmbedding) {
  auto layers = parse("(%ids: tensor<4x5xi64>, %x: tensor<10x3xf32>) -> "
                      "(tensor<4x5x16xf32>, tensor<10x2xf32>)",
                      R"(%t = hps.weight "table" : tensor<1000x16xf32>
         %i = hps.constant dense<[0, 2]> : tensor<2xi64>
         %0 = hps.gather %t, %ids {axis = 0 : i64} : (tensor<1000x16xf32>,
             tensor<4x5xi64>) -> tensor<4x5x16xf32>
         %1 = hps.gather %x, %i {axis = 1 : i64} : (tensor<10x3xf32>,
             tensor<2xi64>) -> tensor<10x2xf32>
         return %0, %1 : tensor<4x5x16xf32>, tensor<10x2xf32>)");
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].getLayerKind(), LayerKind::embedding);
  EXPECT_EQ(layers[0].getFlops(), 0);
  EXPECT_EQ(layers[0].getParamBytes(), 1000 * 16 * 4);
  EXPECT_EQ(layers[1].getLayerKind(), LayerKind::shape);
}

TEST_F(LayerOpInterfaceTest, PoolingAndDataMovement) {
  auto layers = parse("(%x: tensor<1x2x4x4xf32>) -> tensor<1x8xf32>",
                      R"(%0 = hps.max_pool %x {kernel_shape = array<i64: 2, 2>,
             strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>,
             pads = array<i64: 0, 0, 0, 0>, ceil_mode = false}
             : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
         %1 = hps.flatten %0 {axis = 1 : i64} : (tensor<1x2x2x2xf32>)
             -> tensor<1x8xf32>
         return %1 : tensor<1x8xf32>)");
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].getFlops(), 8 * 4);
  EXPECT_EQ(layers[0].getLayerKind(), LayerKind::pool);
  EXPECT_EQ(layers[1].getFlops(), 0);
  EXPECT_EQ(layers[1].getLayerKind(), LayerKind::shape);
}

} // namespace
