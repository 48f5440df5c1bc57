//===- GraphImporter.h - internals of the ONNX importer ---------*- C++ -*-===//
//
// GraphImporter walks the ONNX graph in order and keeps, per ONNX value name,
// either an MLIR Value or a compile-time ConstTensor (initializers, Constant
// nodes and folded shape computations). NodeImporter is the view one node
// converter gets: typed access to attributes and inputs, and one place to
// report an error.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_TARGET_ONNX_GRAPHIMPORTER_H
#define HETERPS_LIB_TARGET_ONNX_GRAPHIMPORTER_H

#include "heterps/Target/ONNX/ImportONNX.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include "onnx/onnx_pb.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::hps::onnx_import {

/// An element of a compile-time integer tensor: a known value, or a dynamic
/// dimension that ONNX shape inference named (`dim_param`, e.g. "batch").
struct SymInt {
  int64_t value = 0;
  std::string symbol;
  bool isKnown() const { return symbol.empty(); }
};

/// A small tensor known at import time.
struct ConstTensor {
  int32_t elemType = onnx::TensorProto::UNDEFINED;
  llvm::SmallVector<int64_t> shape;
  llvm::SmallVector<SymInt> ints;   // integer and bool element types
  llvm::SmallVector<double> floats; // floating-point element types

  bool isFloat() const;
  int64_t numElements() const;
  bool allKnown() const;
};

/// Element type of an ONNX tensor data type, or a null Type if unsupported.
Type convertElementType(int32_t onnxType, MLIRContext *context);
/// Name of an ONNX data type ("FLOAT", "INT64", ...).
std::string dataTypeName(int32_t onnxType);
/// Reads an initializer (or Constant value) with at most `limit` elements.
/// External data is read relative to `modelDir`. Returns an error text.
llvm::Expected<ConstTensor> readTensor(const onnx::TensorProto &tensor,
                                       llvm::StringRef modelDir, int64_t limit);
/// An error text unless the raw data that `tensor` holds in the model (not
/// external data) is its element count times its element size.
llvm::Error checkRawDataSize(const onnx::TensorProto &tensor);
/// Builds the dense attribute of a (fully known) constant tensor.
DenseElementsAttr toDenseAttr(const ConstTensor &tensor, MLIRContext *context);

class GraphImporter;

/// A node input whose value the importer computed (see foldComputedInputs).
struct FoldedInput {
  int node;
  int input;
  ConstTensor value;
};

/// The TensorProto of a fully known integer or float constant.
onnx::TensorProto toTensorProto(const ConstTensor &tensor);

/// What a node converter sees of the node it converts.
class NodeImporter {
public:
  NodeImporter(GraphImporter &graph, const onnx::NodeProto &node, int opset,
               Location loc);

  const onnx::NodeProto &node;
  const int opset;
  const Location loc;
  OpBuilder &builder();
  MLIRContext *context();

  /// Records `message` as this node's error and returns failure.
  LogicalResult fail(const llvm::Twine &message);
  /// Like fail(), for a valid model using a feature hps does not support
  /// (reported as UnsupportedOperatorError, e.g. MaxPool's Indices output).
  LogicalResult unsupported(const llvm::Twine &feature);

  // Inputs. `i` counts ONNX inputs; an empty name is a missing input.
  bool hasInput(unsigned i) const;
  FailureOr<Value> input(unsigned i);
  /// Inputs 0 to count - 1, each required.
  FailureOr<SmallVector<Value>> inputs(unsigned count);
  /// The input as a compile-time tensor, or null when it is computed.
  const ConstTensor *constInput(unsigned i);
  /// A compile-time integer list input; fails with a message naming `what`.
  FailureOr<llvm::SmallVector<int64_t>> constInts(unsigned i,
                                                  llvm::StringRef what);
  /// A compile-time scalar (or one-element) float input.
  FailureOr<double> constScalar(unsigned i, llvm::StringRef what);
  /// Shape of a ranked input, or nullopt.
  std::optional<llvm::SmallVector<int64_t>> inputShape(unsigned i);
  /// Element type of input i (from its value or inferred type).
  Type inputElementType(unsigned i);

  // Attributes, with ONNX defaults.
  bool hasAttr(llvm::StringRef name) const;
  int64_t attrInt(llvm::StringRef name, int64_t dflt) const;
  float attrFloat(llvm::StringRef name, float dflt) const;
  std::string attrString(llvm::StringRef name, llvm::StringRef dflt) const;
  std::optional<llvm::SmallVector<int64_t>>
  attrInts(llvm::StringRef name) const;
  std::optional<llvm::SmallVector<float>>
  attrFloats(llvm::StringRef name) const;
  const onnx::TensorProto *attrTensor(llvm::StringRef name) const;

  // Outputs.
  unsigned numOutputs() const { return node.output_size(); }
  /// True when output i is named and read by a node or a graph output.
  bool outputUsed(unsigned i) const;
  /// Inferred type of output i; `fallback` element type when unknown.
  Type outputType(unsigned i, Type fallbackElement);
  /// The dim_param names of output/input values, for symbolic shapes.
  std::optional<llvm::SmallVector<SymInt>> symbolicShape(llvm::StringRef name);
  void setOutput(unsigned i, Value value);
  void setConstOutput(unsigned i, ConstTensor tensor);
  /// Makes output i another name of input `inputIndex` when that input is an
  /// initializer or constant (e.g. Identity on a weight); false otherwise.
  bool aliasOutput(unsigned i, unsigned inputIndex);
  /// Makes output i refer to `tensor` like an initializer (large Constant
  /// nodes become `hps.weight` references named after the output).
  void registerLargeConstant(unsigned i, const onnx::TensorProto &tensor);
  llvm::StringRef modelDir() const;
  int64_t inlineLimit() const;

  /// Creates an hps op at the current position with this node's location.
  template <typename OpTy, typename... Args> OpTy create(Args &&...args) {
    return builder().create<OpTy>(loc, std::forward<Args>(args)...);
  }

private:
  const onnx::AttributeProto *findAttr(llvm::StringRef name) const;
  GraphImporter &graph;
};

/// Converts one node into hps ops (or a compile-time constant).
using NodeConverter = LogicalResult (*)(NodeImporter &);
/// The converter for an op type of the default domain, or null.
NodeConverter lookupConverter(llvm::StringRef opType);
/// Converters of the ops of run-time shapes, index tensors and masks
/// (DynamicConverters.cpp); lookupConverter searches them too.
const llvm::StringMap<NodeConverter> &dynamicShapeConverters();
/// Slice and Pad whose bounds are computed at run time.
LogicalResult convertDynamicSlice(NodeImporter &node);
LogicalResult convertDynamicPad(NodeImporter &node);
/// Clip whose bounds are computed at run time (Decompositions.cpp).
LogicalResult convertClipOfTensors(NodeImporter &node);
/// BatchNormalization with training_mode=1 (Decompositions.cpp).
LogicalResult convertBatchNormTraining(NodeImporter &node);
/// Einsum of one or two operands (Decompositions.cpp).
LogicalResult convertEinsum(NodeImporter &node);
/// DepthToSpace and SpaceToDepth (Decompositions.cpp).
LogicalResult convertDepthToSpace(NodeImporter &node);
/// InstanceNormalization (Decompositions.cpp).
LogicalResult convertInstanceNorm(NodeImporter &node);
/// LSTM, GRU and RNN unrolled over their steps (RecurrentConverters.cpp).
LogicalResult convertLSTM(NodeImporter &node);
LogicalResult convertGRU(NodeImporter &node);
LogicalResult convertRNN(NodeImporter &node);
/// Resize and Upsample (ResizeConverter.cpp).
LogicalResult convertResize(NodeImporter &node);
/// The target of a Reshape from its folded shape input: dynamic dimensions
/// that stay in place become 0. Fails (with the node's error set) otherwise.
FailureOr<llvm::SmallVector<int64_t>>
resolveReshapeTarget(NodeImporter &node, const ConstTensor &shape);
/// Target data type of a Cast node, in any opset.
int32_t castTarget(const NodeImporter &node);
/// Tries to evaluate the node at import time (shape arithmetic on constants).
/// Returns success with `folded` set when it did.
LogicalResult tryFold(NodeImporter &node, bool &folded);

class GraphImporter {
public:
  GraphImporter(const onnx::ModelProto &model, llvm::StringRef path,
                MLIRContext *context, const ONNXImportOptions &options);

  /// Converts the (checked, shape-inferred) model.
  llvm::Expected<OwningOpRef<ModuleOp>> run();

  /// Folds shape computations without building IR and returns the node
  /// inputs that are computed in the graph but known now (integer tensors;
  /// a Reshape target with its dynamic dimensions written as 0). The
  /// importer writes these back as initializers so that ONNX shape inference
  /// can see through them.
  std::vector<FoldedInput> foldComputedInputs();

private:
  friend class NodeImporter;

  llvm::Error nodeError(const onnx::NodeProto &node, int index,
                        const llvm::Twine &message) const;
  llvm::Error error(const llvm::Twine &message) const;
  Type typeOf(const onnx::TypeProto &type);
  FailureOr<Value> materialize(llvm::StringRef name, std::string &err);
  /// Converts the node that computes the symbolic value `name` into ops
  /// that compute it at run time.
  LogicalResult convertAtRunTime(llvm::StringRef name, int node,
                                 std::string &err);
  Location locationOf(const onnx::NodeProto &node);
  const ConstTensor *constant(llvm::StringRef name, std::string &err);

  const onnx::ModelProto &model;
  std::string path;
  std::string modelDir;
  MLIRContext *context;
  ONNXImportOptions options;
  OpBuilder builder;
  int opset = 0;

  llvm::StringMap<Value> values;
  llvm::StringMap<ConstTensor> constants;
  llvm::StringMap<const onnx::TensorProto *> initializers;
  llvm::StringMap<const onnx::TypeProto *> inferredTypes;
  llvm::StringMap<std::string> aliases;
  /// Folded values that depend on a dynamic dimension -> the index of the
  /// node that computes them, converted only when a tensor is needed.
  llvm::StringMap<int> symbolicProducers;
  llvm::StringSet<> consumed;
  std::string nodeErrorText;
  std::string unsupportedFeature; // set by NodeImporter::unsupported
};

} // namespace mlir::hps::onnx_import

#endif // HETERPS_LIB_TARGET_ONNX_GRAPHIMPORTER_H
