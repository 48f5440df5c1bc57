//===- ImportONNXTest.cpp - importer on models built in memory ------------===//

#include "heterps/Target/ONNX/ImportONNX.h"
#include "heterps/InitAll.h"

#include "mlir/IR/MLIRContext.h"

#include "onnx/onnx_pb.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::hps;

namespace {

class ImportONNXTest : public ::testing::Test {
protected:
  ImportONNXTest() {
    DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    model.set_ir_version(7);
    auto *opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(13);
    model.mutable_graph()->set_name("g");
  }

  /// Adds a float graph input or output with the given dims (-1: dynamic).
  static void setTensorType(onnx::ValueInfoProto *info, const std::string &name,
                            std::vector<int64_t> dims) {
    info->set_name(name);
    auto *tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    auto *shape = tensor->mutable_shape();
    for (int64_t d : dims) {
      auto *dim = shape->add_dim();
      if (d < 0)
        dim->set_dim_param("N");
      else
        dim->set_dim_value(d);
    }
  }

  onnx::NodeProto *addNode(const std::string &opType, const std::string &name,
                           std::vector<std::string> inputs,
                           std::vector<std::string> outputs) {
    auto *node = model.mutable_graph()->add_node();
    node->set_op_type(opType);
    node->set_name(name);
    for (auto &i : inputs)
      node->add_input(i);
    for (auto &o : outputs)
      node->add_output(o);
    return node;
  }

  void addWeight(const std::string &name, std::vector<int64_t> dims) {
    auto *t = model.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    for (int64_t i = 0; i < n; ++i)
      t->add_float_data(0.5f);
  }

  llvm::Expected<OwningOpRef<ModuleOp>> import() {
    std::string bytes;
    model.SerializeToString(&bytes);
    return importONNXBuffer(bytes, "test.onnx", &context);
  }

  /// The error text of a failed import (empty if it succeeded).
  std::string importError() {
    auto result = import();
    if (result)
      return "";
    return llvm::toString(result.takeError());
  }

  MLIRContext context;
  onnx::ModelProto model;
};

TEST_F(ImportONNXTest, GemmReluWithDynamicBatch) {
  setTensorType(model.mutable_graph()->add_input(), "x", {-1, 4});
  addWeight("w", {3, 4});
  addWeight("b", {3});
  auto *gemm = addNode("Gemm", "fc1", {"x", "w", "b"}, {"h"});
  auto *attr = gemm->add_attribute();
  attr->set_name("transB");
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(1);
  addNode("Relu", "relu1", {"h"}, {"y"});
  setTensorType(model.mutable_graph()->add_output(), "y", {-1, 3});

  auto module = import();
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());
  auto func = (*module)->lookupSymbol<func::FuncOp>("main");
  ASSERT_TRUE(func);
  EXPECT_EQ(func.getFunctionType().getInput(0),
            RankedTensorType::get({ShapedType::kDynamic, 4},
                                  Float32Type::get(&context)));
  SmallVector<Operation *> ops;
  func.walk([&](LayerOpInterface op) { ops.push_back(op); });
  ASSERT_EQ(ops.size(), 4u); // two weights, gemm, relu
  auto g = dyn_cast<GemmOp>(ops[2]);
  ASSERT_TRUE(g);
  EXPECT_TRUE(g.getTransB());
  EXPECT_EQ(cast<NameLoc>(g->getLoc()).getName(), "fc1");
  EXPECT_EQ(g.getB().getDefiningOp<WeightOp>().getName(), "w");
  EXPECT_TRUE(isa<ReluOp>(ops[3]));
}

TEST_F(ImportONNXTest, UnsupportedOperatorsAreListed) {
  setTensorType(model.mutable_graph()->add_input(), "x", {2, 3});
  addNode("Hardmax", "hm", {"x"}, {"a"});
  addNode("Relu", "r", {"a"}, {"b"});
  addNode("Unique", "uq", {"b"}, {"y"});
  setTensorType(model.mutable_graph()->add_output(), "y", {2, 3});

  auto module = import();
  ASSERT_FALSE(bool(module));
  std::vector<std::string> operators;
  std::string message;
  llvm::handleAllErrors(module.takeError(),
                        [&](const UnsupportedOperatorError &e) {
                          operators = e.getOperators();
                          message = e.message();
                        });
  EXPECT_EQ(operators,
            (std::vector<std::string>{"ai.onnx::Hardmax", "ai.onnx::Unique"}));
  EXPECT_EQ(message, "test.onnx: node 'hm' (Hardmax, domain 'ai.onnx', "
                     "opset 13): unsupported operator (1 more unsupported "
                     "operator type in the model)");
}

TEST_F(ImportONNXTest, ErrorsAreOneLine) {
  model.clear_graph();
  EXPECT_EQ(importError(), "test.onnx: not an ONNX model (no graph)");
  EXPECT_EQ(
      llvm::toString(
          importONNXBuffer("\x08\x07\x12", "t.onnx", &context).takeError()),
      "t.onnx: not an ONNX model (the protobuf does not parse; "
      "truncated or not a ModelProto)");
  EXPECT_EQ(
      llvm::toString(importONNXBuffer("", "t.onnx", &context).takeError()),
      "t.onnx: empty file, not an ONNX model");
  EXPECT_EQ(llvm::toString(
                importONNXFile("/nonexistent/m.onnx", &context).takeError()),
            "/nonexistent/m.onnx: cannot open: No such file or directory");
}

TEST_F(ImportONNXTest, CheckerFailureIsReported) {
  setTensorType(model.mutable_graph()->add_input(), "x", {2, 3});
  addNode("Relu", "r", {"x", "extra"}, {"y"}); // Relu takes one input.
  setTensorType(model.mutable_graph()->add_output(), "y", {2, 3});
  std::string error = importError();
  EXPECT_EQ(error.rfind("test.onnx: invalid ONNX model: ", 0), 0u) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST_F(ImportONNXTest, ComputedShapeInputBecomesADynamicReshape) {
  setTensorType(model.mutable_graph()->add_input(), "x", {2, 3});
  auto *shape = model.mutable_graph()->add_input();
  shape->set_name("s");
  auto *t = shape->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::INT64);
  t->mutable_shape()->add_dim()->set_dim_value(2);
  addNode("Reshape", "rs", {"x", "s"}, {"y"});
  setTensorType(model.mutable_graph()->add_output(), "y", {3, 2});
  auto module = import();
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());
  auto func = (*module)->lookupSymbol<func::FuncOp>("main");
  ASSERT_TRUE(func);
  SmallVector<DynamicReshapeOp> reshapes(func.getOps<DynamicReshapeOp>());
  ASSERT_EQ(reshapes.size(), 1u);
  EXPECT_EQ(reshapes[0].getShape(), func.getArgument(1));
}

} // namespace
