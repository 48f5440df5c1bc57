//===- ImportONNX.cpp - ONNX model to hps dialect -------------------------===//
//
// The steps, each with its own one-line error: read the file, parse the
// ModelProto, check the opset, list unsupported operators, run
// onnx::checker, run ONNX shape inference, then convert node by node.
//
//===----------------------------------------------------------------------===//

#include "heterps/Target/ONNX/ImportONNX.h"
#include "GraphImporter.h"

#include "heterps/Dialect/HPS/HPS.h"
#include "heterps/Runtime/ExternalData.h"
#include "heterps/Support/PrintableLine.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

#include <exception>
#include <optional>
#include <set>

using namespace mlir;
using namespace mlir::hps;
using namespace mlir::hps::onnx_import;

char UnsupportedOperatorError::ID = 0;

/// Every importer error: one printable line, whatever the model's names
/// hold.
static llvm::Error makeError(const llvm::Twine &message) {
  return heterps::printableError(message);
}

/// First line of an exception text, trimmed: libonnx appends context on
/// further lines, and our errors are one line.
static std::string firstLine(llvm::StringRef text) {
  return text.split('\n').first.trim().str();
}

static bool isDefaultDomain(llvm::StringRef domain) {
  return domain.empty() || domain == "ai.onnx";
}

/// "tensor(STRING)", "sequence", ... for messages about unsupported types.
static std::string describeType(const onnx::TypeProto &type) {
  if (type.has_tensor_type())
    return "tensor(" + dataTypeName(type.tensor_type().elem_type()) + ")";
  if (type.has_sequence_type())
    return "sequence";
  if (type.has_optional_type())
    return "optional";
  if (type.has_map_type())
    return "map";
  if (type.has_sparse_tensor_type())
    return "sparse tensor";
  return "unknown";
}

bool mlir::hps::isONNXFilename(llvm::StringRef path) {
  return llvm::sys::path::extension(path).equals_insensitive(".onnx");
}

/// Opset of the default domain, if the model imports it.
static std::optional<int64_t> defaultOpset(const onnx::ModelProto &model) {
  for (const auto &entry : model.opset_import())
    if (isDefaultDomain(entry.domain()))
      return entry.version();
  return std::nullopt;
}

static std::string nodeLabel(const onnx::NodeProto &node, int index) {
  if (!node.name().empty())
    return "'" + node.name() + "'";
  if (node.output_size() > 0 && !node.output(0).empty())
    return "#" + std::to_string(index) + " (output '" + node.output(0) + "')";
  return "#" + std::to_string(index);
}

static std::string domainName(llvm::StringRef domain) {
  return isDefaultDomain(domain) ? "ai.onnx" : domain.str();
}

/// Every node whose operator has no converter; one error naming the first.
static llvm::Error checkSupported(const onnx::ModelProto &model,
                                  llvm::StringRef path, int64_t opset) {
  std::vector<std::string> unsupported;
  std::string first;
  int index = 0;
  for (const auto &node : model.graph().node()) {
    bool ok = isDefaultDomain(node.domain()) && lookupConverter(node.op_type());
    if (!ok) {
      std::string key = domainName(node.domain()) + "::" + node.op_type();
      if (!llvm::is_contained(unsupported, key))
        unsupported.push_back(key);
      if (first.empty()) {
        int64_t nodeOpset = opset;
        if (!isDefaultDomain(node.domain()))
          for (const auto &entry : model.opset_import())
            if (entry.domain() == node.domain())
              nodeOpset = entry.version();
        first =
            (path + ": node " + nodeLabel(node, index) + " (" + node.op_type() +
             ", domain '" + domainName(node.domain()) + "', opset " +
             llvm::Twine(nodeOpset) + "): unsupported operator")
                .str();
      }
    }
    ++index;
  }
  if (unsupported.empty())
    return llvm::Error::success();
  if (unsupported.size() > 1)
    first += " (" + llvm::Twine(unsupported.size() - 1).str() +
             " more unsupported operator type" +
             (unsupported.size() > 2 ? "s" : "") + " in the model)";
  return llvm::make_error<UnsupportedOperatorError>(
      heterps::printableLine(first), unsupported);
}

/// External data files must exist beside the model and be long enough.
/// Checked before the ONNX checker, whose message for a missing file is less
/// direct.
static llvm::Error checkExternalData(const onnx::ModelProto &model,
                                     llvm::StringRef path,
                                     llvm::StringRef modelDir) {
  for (const auto &tensor : model.graph().initializer()) {
    if (tensor.data_location() != onnx::TensorProto::EXTERNAL)
      continue;
    auto ref = heterps::runtime::resolveExternalData(tensor, modelDir);
    if (!ref)
      return makeError(path + ": initializer '" + tensor.name() +
                       "': " + llvm::toString(ref.takeError()));
  }
  return llvm::Error::success();
}

/// Raw data of the size each tensor's shape says, in initializers and in
/// tensor attributes (Constant values) of every graph: ONNX 1.12's shape
/// inference propagates such values and copied a short buffer by the shape
/// (a fuzz finding: a 7-byte int64 scalar read from address 0).
static llvm::Error checkRawDataSizes(const onnx::GraphProto &graph,
                                     llvm::StringRef path) {
  auto check = [&](const onnx::TensorProto &t,
                   const llvm::Twine &what) -> llvm::Error {
    if (llvm::Error err = checkRawDataSize(t))
      return makeError(path + ": " + what + ": " +
                       llvm::toString(std::move(err)));
    return llvm::Error::success();
  };
  for (const auto &t : graph.initializer())
    if (llvm::Error err = check(t, "tensor '" + t.name() + "'"))
      return err;
  for (const auto &node : graph.node())
    for (const auto &attr : node.attribute()) {
      std::string what = "node '" + node.name() + "' (" + node.op_type() +
                         ") attribute '" + attr.name() + "'";
      if (attr.has_t())
        if (llvm::Error err = check(attr.t(), what))
          return err;
      for (const auto &t : attr.tensors())
        if (llvm::Error err = check(t, what))
          return err;
      if (attr.has_g())
        if (llvm::Error err = checkRawDataSizes(attr.g(), path))
          return err;
      for (const auto &g : attr.graphs())
        if (llvm::Error err = checkRawDataSizes(g, path))
          return err;
    }
  return llvm::Error::success();
}

/// The ranks of the graph's values as far as inputs, initializers and ops
/// that keep their first input's rank tell, for checkConvRanks.
static llvm::StringMap<int> knownRanks(const onnx::GraphProto &graph) {
  llvm::StringMap<int> rank;
  for (const auto &v : graph.input())
    if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
      rank[v.name()] = v.type().tensor_type().shape().dim_size();
  for (const auto &t : graph.initializer())
    rank[t.name()] = t.dims_size();
  static const llvm::StringSet<> keepsRank = {"Relu",
                                              "LeakyRelu",
                                              "Elu",
                                              "Sigmoid",
                                              "Tanh",
                                              "Clip",
                                              "Abs",
                                              "Neg",
                                              "Exp",
                                              "Log",
                                              "Sqrt",
                                              "Dropout",
                                              "Identity",
                                              "Softmax",
                                              "LRN",
                                              "BatchNormalization",
                                              "Conv",
                                              "ConvTranspose",
                                              "MaxPool",
                                              "AveragePool",
                                              "GlobalAveragePool",
                                              "GlobalMaxPool",
                                              "Pad",
                                              "InstanceNormalization"};
  for (const auto &node : graph.node())
    if (keepsRank.contains(node.op_type()) && node.input_size() > 0 &&
        node.output_size() > 0 && rank.count(node.input(0)))
      rank[node.output(0)] = rank.lookup(node.input(0));
  return rank;
}

/// A Conv or ConvTranspose weight must have rank 3 or more and its input's
/// rank: ONNX 1.12's shape inference indexes the weight's dimensions by the
/// input's spatial axes without checking (a crash on a 1-D weight).
static llvm::Error checkConvRanks(const onnx::ModelProto &model,
                                  llvm::StringRef path) {
  llvm::StringMap<int> rank = knownRanks(model.graph());
  int index = 0;
  for (const auto &node : model.graph().node()) {
    ++index;
    if ((node.op_type() != "Conv" && node.op_type() != "ConvTranspose") ||
        node.input_size() < 2 || !rank.count(node.input(1)))
      continue;
    int w = rank.lookup(node.input(1));
    auto x = rank.find(node.input(0));
    if (w >= 3 && (x == rank.end() || x->second == w))
      continue;
    std::string why =
        w < 3 ? "not 3 or more"
              : "its input " + std::to_string(x->second) + "; they must match";
    return makeError(path + ": node " + nodeLabel(node, index - 1) + " (" +
                     node.op_type() + "): its weight has rank " +
                     llvm::Twine(w) + ", " + why);
  }
  return llvm::Error::success();
}

/// What ONNX 1.12's shape inference assumes without checking: Conv ranks
/// (checkConvRanks), and positive attributes it divides by (strides, group,
/// blocksize) or sizes a window with (a division by zero otherwise).
static llvm::Error checkBeforeShapeInference(const onnx::ModelProto &model,
                                             llvm::StringRef path) {
  if (llvm::Error e = checkConvRanks(model, path))
    return e;
  int index = 0;
  for (const auto &node : model.graph().node()) {
    for (const auto &attr : node.attribute()) {
      llvm::StringRef name = attr.name();
      bool list =
          name == "strides" || name == "dilations" || name == "kernel_shape";
      if (!list && name != "group" && name != "blocksize")
        continue;
      bool positive =
          list ? llvm::all_of(attr.ints(), [](int64_t v) { return v > 0; })
               : attr.i() > 0;
      if (positive)
        continue;
      std::string got =
          list ? "[" +
                     llvm::join(llvm::map_range(attr.ints(),
                                                [](int64_t v) {
                                                  return std::to_string(v);
                                                }),
                                ", ") +
                     "]"
               : std::to_string(attr.i());
      return makeError(path + ": node " + nodeLabel(node, index) + " (" +
                       node.op_type() + "): attribute '" + name +
                       "' must be positive, got " + got);
    }
    ++index;
  }
  return llvm::Error::success();
}

/// Removes nodes none of whose outputs is read (shape computations left
/// behind once their Reshape reads a constant instead).
static void removeDeadNodes(onnx::GraphProto &graph) {
  bool removed = true;
  while (removed) {
    llvm::StringSet<> read;
    for (const auto &node : graph.node())
      for (const auto &name : node.input())
        read.insert(name);
    for (const auto &output : graph.output())
      read.insert(output.name());
    removed = false;
    auto *nodes = graph.mutable_node();
    for (int i = nodes->size() - 1; i >= 0; --i) {
      const auto &outs = nodes->Get(i).output();
      if (llvm::none_of(
              outs, [&](const std::string &o) { return read.contains(o); })) {
        nodes->DeleteSubrange(i, 1);
        removed = true;
      }
    }
  }
}

/// Gives the graph inputs' dimensions named in `sizes` those sizes.
static llvm::Error fixDimSizes(onnx::ModelProto &model, llvm::StringRef path,
                               const std::map<std::string, int64_t> &sizes) {
  std::set<std::string> named, used;
  for (auto &input : *model.mutable_graph()->mutable_input()) {
    if (!input.type().has_tensor_type() ||
        !input.type().tensor_type().has_shape())
      continue;
    for (auto &dim : *input.mutable_type()
                          ->mutable_tensor_type()
                          ->mutable_shape()
                          ->mutable_dim()) {
      if (!dim.has_dim_param())
        continue;
      named.insert(dim.dim_param());
      auto it = sizes.find(dim.dim_param());
      if (it == sizes.end())
        continue;
      used.insert(it->first);
      dim.set_dim_value(it->second);
    }
  }
  for (const auto &[name, size] : sizes) {
    if (size <= 0)
      return makeError(path + ": dimension '" + name + "' given size " +
                       llvm::Twine(size) + "; sizes must be positive");
    if (!used.count(name))
      return makeError(
          path + ": no input dimension is named '" + name + "' (named ones: " +
          (named.empty() ? std::string("none") : llvm::join(named, ", ")) +
          ")");
  }
  return llvm::Error::success();
}

/// ONNX shape inference, repeated while import-time folding resolves more
/// computed shape inputs. Exporters compute Reshape targets, Slice bounds,
/// ... with Shape ops; ONNX 1.12 does not see through most of them, and every
/// shape after such a node stays unknown until the folded value is written
/// back into the model as an initializer.
static llvm::Error inferShapes(onnx::ModelProto &model, llvm::StringRef path,
                               MLIRContext *context,
                               const ONNXImportOptions &options) {
  constexpr int kMaxRounds = 256;
  for (int round = 0; round < kMaxRounds; ++round) {
    try {
      onnx::ShapeInferenceOptions inference(/*check_type=*/true,
                                            /*error_mode=*/1,
                                            /*enable_data_propagation=*/true);
      onnx::shape_inference::InferShapes(
          model, onnx::OpSchemaRegistry::Instance(), inference);
    } catch (const std::exception &strictError) {
      // Strict inference stops at the first node it cannot type, including
      // nodes that are fine but that ONNX 1.12's inference functions reject
      // (e.g. an int64 Constant of opset 1). Retry keeping what it can
      // infer: the hps verifiers then check every shape that is known, and
      // a real inconsistency is reported by the node that has it.
      try {
        onnx::ShapeInferenceOptions lenient(/*check_type=*/false,
                                            /*error_mode=*/0,
                                            /*enable_data_propagation=*/true);
        onnx::shape_inference::InferShapes(
            model, onnx::OpSchemaRegistry::Instance(), lenient);
      } catch (const std::exception &) {
        return makeError(path + ": ONNX shape inference failed: " +
                         firstLine(strictError.what()));
      }
    }
    std::vector<FoldedInput> folds =
        GraphImporter(model, path, context, options).foldComputedInputs();
    if (folds.empty())
      return llvm::Error::success();
    onnx::GraphProto *graph = model.mutable_graph();
    for (const FoldedInput &fold : folds) {
      onnx::NodeProto *node = graph->mutable_node(fold.node);
      onnx::TensorProto *init = graph->add_initializer();
      *init = toTensorProto(fold.value);
      init->set_name(node->input(fold.input) + "__hps_folded_" +
                     std::to_string(fold.node) + "_" +
                     std::to_string(fold.input));
      node->set_input(fold.input, init->name());
    }
    removeDeadNodes(*graph);
  }
  return llvm::Error::success();
}

llvm::Expected<OwningOpRef<ModuleOp>>
mlir::hps::importONNXBuffer(llvm::StringRef bytes, llvm::StringRef path,
                            MLIRContext *context,
                            const ONNXImportOptions &options) {
  if (bytes.empty())
    return makeError(path + ": empty file, not an ONNX model");
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    return makeError(path + ": larger than 2 GiB; store the weights as "
                            "ONNX external data");
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return makeError(path + ": not an ONNX model (the protobuf does not parse; "
                            "truncated or not a ModelProto)");
  if (!model.has_graph() || model.ir_version() <= 0)
    return makeError(path + ": not an ONNX model (no " +
                     (model.has_graph() ? "ir_version" : "graph") + ")");

  std::optional<int64_t> opset = defaultOpset(model);
  if (llvm::Error err = checkSupported(model, path, opset.value_or(-1)))
    return std::move(err);
  if (!opset || *opset < kMinOnnxOpset || *opset > kMaxOnnxOpset) {
    std::string version = opset ? std::to_string(*opset) : "missing";
    return llvm::make_error<UnsupportedOperatorError>(
        (path + ": default-domain opset " + version +
         " is not supported (supported: " + llvm::Twine(kMinOnnxOpset) +
         " to " + llvm::Twine(kMaxOnnxOpset) + ")")
            .str(),
        std::vector<std::string>{"opset " + version});
  }
  if (llvm::Error err = checkBeforeShapeInference(model, path))
    return std::move(err);

  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (llvm::Error err = checkExternalData(model, path, dir))
    return std::move(err);
  if (llvm::Error err = checkRawDataSizes(model.graph(), path))
    return std::move(err);

  try {
    // The in-memory checker of ONNX 1.12 looks for external data relative to
    // the working directory; the file-based one looks next to the model.
    bool external = llvm::any_of(model.graph().initializer(), [](auto &t) {
      return t.data_location() == onnx::TensorProto::EXTERNAL;
    });
    if (external)
      onnx::checker::check_model(path.str());
    else
      onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    return makeError(path + ": invalid ONNX model: " + firstLine(e.what()));
  }
  if (llvm::Error err = fixDimSizes(model, path, options.dimSizes))
    return std::move(err);
  if (llvm::Error err = inferShapes(model, path, context, options))
    return std::move(err);

  GraphImporter importer(model, path, context, options);
  return importer.run();
}

llvm::Expected<OwningOpRef<ModuleOp>>
mlir::hps::importONNXFile(llvm::StringRef path, MLIRContext *context,
                          const ONNXImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError(path + ": cannot open: " + buffer.getError().message());
  return importONNXBuffer((*buffer)->getBuffer(), path, context, options);
}

//===----------------------------------------------------------------------===//
// GraphImporter
//===----------------------------------------------------------------------===//

GraphImporter::GraphImporter(const onnx::ModelProto &model,
                             llvm::StringRef path, MLIRContext *context,
                             const ONNXImportOptions &options)
    : model(model), path(path.str()), context(context), options(options),
      builder(context) {
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  modelDir = dir.str().str();
  // importONNXBuffer has checked the opset by now.
  opset = static_cast<int>(defaultOpset(model).value_or(-1));
  const onnx::GraphProto &graph = model.graph();
  for (const auto &t : graph.initializer())
    initializers[t.name()] = &t;
  for (const auto &v : graph.input())
    inferredTypes[v.name()] = &v.type();
  for (const auto &v : graph.value_info())
    inferredTypes[v.name()] = &v.type();
  for (const auto &v : graph.output())
    inferredTypes[v.name()] = &v.type();
  for (const auto &node : graph.node())
    for (const auto &name : node.input())
      consumed.insert(name);
  for (const auto &v : graph.output())
    consumed.insert(v.name());
}

llvm::Error GraphImporter::error(const llvm::Twine &message) const {
  return makeError(path + ": " + message);
}

llvm::Error GraphImporter::nodeError(const onnx::NodeProto &node, int index,
                                     const llvm::Twine &message) const {
  return error("node " + nodeLabel(node, index) + " (" + node.op_type() +
               ", domain '" + domainName(node.domain()) + "', opset " +
               llvm::Twine(opset) + "): " + message);
}

Type GraphImporter::typeOf(const onnx::TypeProto &type) {
  if (!type.has_tensor_type())
    return Type();
  const auto &tensor = type.tensor_type();
  Type elem = convertElementType(tensor.elem_type(), context);
  if (!elem)
    return Type();
  if (!tensor.has_shape())
    return UnrankedTensorType::get(elem);
  SmallVector<int64_t> dims;
  for (const auto &dim : tensor.shape().dim())
    dims.push_back(dim.has_dim_value() ? dim.dim_value()
                                       : ShapedType::kDynamic);
  return RankedTensorType::get(dims, elem);
}

const ConstTensor *GraphImporter::constant(llvm::StringRef name,
                                           std::string &err) {
  if (auto alias = aliases.find(name); alias != aliases.end())
    return constant(alias->second, err);
  auto it = constants.find(name);
  if (it != constants.end())
    return &it->second;
  auto init = initializers.find(name);
  if (init == initializers.end())
    return nullptr;
  llvm::Expected<ConstTensor> tensor =
      readTensor(*init->second, modelDir, options.inlineConstantLimit);
  if (!tensor) {
    // Too large to evaluate: it stays a weight reference.
    llvm::consumeError(tensor.takeError());
    return nullptr;
  }
  return &(constants[name] = std::move(*tensor));
}

FailureOr<Value> GraphImporter::materialize(llvm::StringRef name,
                                            std::string &err) {
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  if (auto alias = aliases.find(name); alias != aliases.end())
    return materialize(alias->second, err);
  Value result;
  auto init = initializers.find(name);
  const ConstTensor *folded = nullptr;
  bool isFloatInit = init != initializers.end() &&
                     isa_and_nonnull<FloatType>(convertElementType(
                         init->second->data_type(), context));
  if (init != initializers.end() && (isFloatInit || !constant(name, err))) {
    // Parameters (and large integer tables) are referenced, never inlined.
    const onnx::TensorProto &t = *init->second;
    Type elem = convertElementType(t.data_type(), context);
    if (!elem) {
      err = "initializer '" + name.str() + "' has unsupported element type " +
            dataTypeName(t.data_type());
      return failure();
    }
    SmallVector<int64_t> dims(t.dims().begin(), t.dims().end());
    result = builder.create<WeightOp>(NameLoc::get(builder.getStringAttr(name)),
                                      RankedTensorType::get(dims, elem), name);
  } else if ((folded = constant(name, err))) {
    if (!folded->allKnown()) {
      auto producer = symbolicProducers.find(name);
      if (producer == symbolicProducers.end()) {
        err = "value '" + name.str() +
              "' depends on a dynamic dimension and cannot be a constant";
        return failure();
      }
      if (failed(convertAtRunTime(name, producer->second, err)))
        return failure();
      return values[name];
    }
    if (!convertElementType(folded->elemType, context)) {
      err = "constant '" + name.str() + "' has unsupported element type " +
            dataTypeName(folded->elemType);
      return failure();
    }
    result =
        builder.create<ConstantOp>(NameLoc::get(builder.getStringAttr(name)),
                                   toDenseAttr(*folded, context));
  } else {
    err = "input '" + name.str() + "' is not defined before its use";
    return failure();
  }
  values[name] = result;
  return result;
}

llvm::Expected<OwningOpRef<ModuleOp>> GraphImporter::run() {
  const onnx::GraphProto &graph = model.graph();
  llvm::SmallString<256> absolute(path);
  llvm::sys::fs::make_absolute(absolute);
  // Diagnostics about the whole model (e.g. from planning passes) point at
  // the model file.
  OwningOpRef<ModuleOp> module =
      ModuleOp::create(FileLineColLoc::get(context, absolute, 0, 0));
  module->getOperation()->setAttr(HPSDialect::kSourceAttrName,
                                  builder.getStringAttr(absolute));
  module->getOperation()->setAttr(HPSDialect::kOpsetAttrName,
                                  builder.getI64IntegerAttr(opset));

  // Graph inputs that are not initializers become function arguments.
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  for (const auto &input : graph.input()) {
    if (initializers.count(input.name()))
      continue;
    Type type = typeOf(input.type());
    if (!type) {
      std::string kind = describeType(input.type());
      return llvm::make_error<UnsupportedOperatorError>(
          path + ": graph input '" + input.name() + "' of type " + kind +
              " is not supported",
          std::vector<std::string>{"graph input of type " + kind});
    }
    argTypes.push_back(type);
    argNames.push_back(input.name());
  }

  builder.setInsertionPointToEnd(module->getBody());
  auto func = builder.create<func::FuncOp>(
      NameLoc::get(
          builder.getStringAttr(graph.name().empty() ? "main" : graph.name())),
      "main", builder.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  // Named dynamic dimensions ("batch", "seq") that several input
  // dimensions share: the runtime checks that they agree.
  auto dimParams = [&](llvm::StringRef input) {
    SmallVector<std::string> names;
    if (auto it = inferredTypes.find(input);
        it != inferredTypes.end() && it->second->has_tensor_type() &&
        it->second->tensor_type().has_shape())
      for (const auto &dim : it->second->tensor_type().shape().dim())
        names.push_back(dim.has_dim_param() ? dim.dim_param() : "");
    return names;
  };
  llvm::StringMap<int> uses;
  for (const std::string &name : argNames)
    for (const std::string &d : dimParams(name))
      if (!d.empty())
        ++uses[d];
  for (auto [i, name] : llvm::enumerate(argNames)) {
    values[name] = entry->getArgument(i);
    entry->getArgument(i).setLoc(NameLoc::get(builder.getStringAttr(name)));
    func.setArgAttr(i, HPSDialect::kNameAttrName, builder.getStringAttr(name));
    SmallVector<std::string> dims = dimParams(name);
    auto type = dyn_cast<RankedTensorType>(argTypes[i]);
    bool shared = llvm::any_of(
        dims, [&](const std::string &d) { return !d.empty() && uses[d] > 1; });
    if (shared && type && type.getRank() == static_cast<int64_t>(dims.size()))
      func.setArgAttr(i, HPSDialect::kDimNamesAttrName,
                      builder.getStrArrayAttr(
                          SmallVector<StringRef>(dims.begin(), dims.end())));
  }
  builder.setInsertionPointToEnd(entry);

  int index = 0;
  for (const auto &node : graph.node()) {
    NodeImporter ctx(*this, node, opset, locationOf(node));
    nodeErrorText.clear();
    unsupportedFeature.clear();
    bool folded = false;
    LogicalResult converted = tryFold(ctx, folded);
    if (succeeded(converted) && folded)
      for (const std::string &out : node.output())
        if (auto it = constants.find(out);
            it != constants.end() && !it->second.allKnown())
          symbolicProducers[out] = index;
    if (succeeded(converted) && !folded)
      converted = lookupConverter(node.op_type())(ctx);
    if (failed(converted)) {
      llvm::Error err = nodeError(node, index, nodeErrorText);
      if (unsupportedFeature.empty())
        return std::move(err);
      return llvm::make_error<UnsupportedOperatorError>(
          llvm::toString(std::move(err)),
          std::vector<std::string>{"ai.onnx::" + node.op_type() + " (" +
                                   unsupportedFeature + ")"});
    }
    ++index;
  }

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const auto &output : graph.output()) {
    std::string err;
    FailureOr<Value> value = materialize(output.name(), err);
    if (failed(value))
      return error("graph output '" + output.name() + "': " + err);
    results.push_back(*value);
    resultTypes.push_back(value->getType());
  }
  builder.create<func::ReturnOp>(func.getLoc(), results);
  func.setFunctionType(builder.getFunctionType(argTypes, resultTypes));
  for (auto [i, output] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, HPSDialect::kNameAttrName,
                       builder.getStringAttr(output.name()));

  // The verifier's message goes to the context's diagnostic handler; turn
  // it into the importer's one-line error.
  std::string diagnostics;
  {
    ScopedDiagnosticHandler handler(context, [&](Diagnostic &diag) {
      if (diagnostics.empty()) {
        llvm::raw_string_ostream os(diagnostics);
        if (auto name = dyn_cast<NameLoc>(diag.getLocation()))
          os << "node '" << name.getName().getValue() << "': ";
        os << diag.str();
      }
      return success();
    });
    if (failed(verify(*module)))
      return error("imported IR does not verify: " + diagnostics);
  }
  return std::move(module);
}

Location GraphImporter::locationOf(const onnx::NodeProto &node) {
  return NameLoc::get(builder.getStringAttr(
      !node.name().empty()                            ? node.name()
      : node.output_size() && !node.output(0).empty() ? node.output(0)
                                                      : node.op_type()));
}

LogicalResult GraphImporter::convertAtRunTime(llvm::StringRef name, int index,
                                              std::string &err) {
  const onnx::NodeProto &node = model.graph().node(index);
  NodeImporter ctx(*this, node, opset, locationOf(node));
  std::string outerError = std::move(nodeErrorText);
  nodeErrorText.clear();
  NodeConverter convert = lookupConverter(node.op_type());
  bool ok = convert && succeeded(convert(ctx)) && values.count(name);
  if (!ok)
    err = "value '" + name.str() + "' depends on a dynamic dimension and " +
          "computing it at run time failed: node " + nodeLabel(node, index) +
          " (" + node.op_type() + "): " +
          (nodeErrorText.empty() ? std::string("no run-time form")
                                 : nodeErrorText);
  nodeErrorText = std::move(outerError);
  return success(ok);
}

std::vector<FoldedInput> GraphImporter::foldComputedInputs() {
  std::vector<FoldedInput> folds;
  llvm::StringSet<> fromConstantNodes;
  int index = 0;
  for (const auto &node : model.graph().node()) {
    NodeImporter ctx(*this, node, opset, builder.getUnknownLoc());
    bool folded = false;
    if (failed(tryFold(ctx, folded)) || folded) {
      if (node.op_type() == "Constant")
        for (const auto &out : node.output())
          fromConstantNodes.insert(out);
      ++index;
      continue;
    }
    for (int i = 0; i < node.input_size(); ++i) {
      const std::string &name = node.input(i);
      if (name.empty() || initializers.count(name) ||
          fromConstantNodes.contains(name))
        continue;
      const ConstTensor *value = ctx.constInput(i);
      if (!value || value->isFloat())
        continue; // Only integer shape arithmetic is written back.
      if (node.op_type() == "Reshape" && i == 1) {
        FailureOr<SmallVector<int64_t>> target =
            resolveReshapeTarget(ctx, *value);
        if (failed(target))
          continue;
        ConstTensor resolved = *value;
        for (auto [slot, d] : llvm::zip(resolved.ints, *target))
          slot = {d, {}};
        folds.push_back({index, i, std::move(resolved)});
      } else if (value->allKnown()) {
        folds.push_back({index, i, *value});
      }
    }
    ++index;
  }
  return folds;
}

//===----------------------------------------------------------------------===//
// NodeImporter
//===----------------------------------------------------------------------===//

NodeImporter::NodeImporter(GraphImporter &graph, const onnx::NodeProto &node,
                           int opset, Location loc)
    : node(node), opset(opset), loc(loc), graph(graph) {}

OpBuilder &NodeImporter::builder() { return graph.builder; }
MLIRContext *NodeImporter::context() { return graph.context; }

LogicalResult NodeImporter::fail(const llvm::Twine &message) {
  graph.nodeErrorText = message.str();
  return failure();
}

LogicalResult NodeImporter::unsupported(const llvm::Twine &feature) {
  graph.unsupportedFeature = feature.str();
  return fail(feature + " is not supported");
}

bool NodeImporter::hasInput(unsigned i) const {
  return static_cast<int>(i) < node.input_size() && !node.input(i).empty();
}

FailureOr<Value> NodeImporter::input(unsigned i) {
  if (!hasInput(i)) {
    return fail("missing input " + llvm::Twine(i));
  }
  std::string err;
  FailureOr<Value> value = graph.materialize(node.input(i), err);
  if (failed(value))
    return fail(err);
  return value;
}

FailureOr<SmallVector<Value>> NodeImporter::inputs(unsigned count) {
  SmallVector<Value> values;
  for (unsigned i = 0; i < count; ++i) {
    FailureOr<Value> v = input(i);
    if (failed(v))
      return failure();
    values.push_back(*v);
  }
  return values;
}

const ConstTensor *NodeImporter::constInput(unsigned i) {
  if (!hasInput(i))
    return nullptr;
  std::string err;
  return graph.constant(node.input(i), err);
}

FailureOr<SmallVector<int64_t>> NodeImporter::constInts(unsigned i,
                                                        llvm::StringRef what) {
  const ConstTensor *t = constInput(i);
  if (!t || t->isFloat() || !t->allKnown()) {
    return unsupported("a non-constant '" + what + "' input");
  }
  SmallVector<int64_t> values;
  for (const SymInt &v : t->ints)
    values.push_back(v.value);
  return values;
}

FailureOr<double> NodeImporter::constScalar(unsigned i, llvm::StringRef what) {
  const ConstTensor *t = constInput(i);
  if (!t || t->numElements() != 1 || !t->allKnown()) {
    return unsupported("a non-constant '" + what + "' input");
  }
  return t->isFloat() ? t->floats[0] : static_cast<double>(t->ints[0].value);
}

std::optional<SmallVector<int64_t>> NodeImporter::inputShape(unsigned i) {
  if (!hasInput(i))
    return std::nullopt;
  Type type;
  auto v = graph.values.find(node.input(i));
  if (v != graph.values.end()) {
    type = v->second.getType();
  } else if (auto init = graph.initializers.find(node.input(i));
             init != graph.initializers.end()) {
    return SmallVector<int64_t>(init->second->dims().begin(),
                                init->second->dims().end());
  } else if (auto c = graph.constants.find(node.input(i));
             c != graph.constants.end()) {
    return c->second.shape;
  } else if (auto t = graph.inferredTypes.find(node.input(i));
             t != graph.inferredTypes.end()) {
    type = graph.typeOf(*t->second);
  }
  if (auto ranked = dyn_cast_or_null<RankedTensorType>(type))
    return SmallVector<int64_t>(ranked.getShape());
  return std::nullopt;
}

Type NodeImporter::inputElementType(unsigned i) {
  if (!hasInput(i))
    return Type();
  if (auto v = graph.values.find(node.input(i)); v != graph.values.end())
    return cast<ShapedType>(v->second.getType()).getElementType();
  if (auto init = graph.initializers.find(node.input(i));
      init != graph.initializers.end())
    return convertElementType(init->second->data_type(), context());
  if (auto c = graph.constants.find(node.input(i)); c != graph.constants.end())
    return convertElementType(c->second.elemType, context());
  return Type();
}

const onnx::AttributeProto *NodeImporter::findAttr(llvm::StringRef name) const {
  for (const auto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

bool NodeImporter::hasAttr(llvm::StringRef name) const {
  return findAttr(name) != nullptr;
}

int64_t NodeImporter::attrInt(llvm::StringRef name, int64_t dflt) const {
  const auto *attr = findAttr(name);
  return attr ? attr->i() : dflt;
}

float NodeImporter::attrFloat(llvm::StringRef name, float dflt) const {
  const auto *attr = findAttr(name);
  return attr ? attr->f() : dflt;
}

std::string NodeImporter::attrString(llvm::StringRef name,
                                     llvm::StringRef dflt) const {
  const auto *attr = findAttr(name);
  return attr ? attr->s() : dflt.str();
}

std::optional<SmallVector<int64_t>>
NodeImporter::attrInts(llvm::StringRef name) const {
  const auto *attr = findAttr(name);
  if (!attr)
    return std::nullopt;
  return SmallVector<int64_t>(attr->ints().begin(), attr->ints().end());
}

std::optional<SmallVector<float>>
NodeImporter::attrFloats(llvm::StringRef name) const {
  const auto *attr = findAttr(name);
  if (!attr)
    return std::nullopt;
  return SmallVector<float>(attr->floats().begin(), attr->floats().end());
}

const onnx::TensorProto *NodeImporter::attrTensor(llvm::StringRef name) const {
  const auto *attr = findAttr(name);
  return attr && attr->has_t() ? &attr->t() : nullptr;
}

bool NodeImporter::outputUsed(unsigned i) const {
  return static_cast<int>(i) < node.output_size() && !node.output(i).empty() &&
         graph.consumed.contains(node.output(i));
}

Type NodeImporter::outputType(unsigned i, Type fallbackElement) {
  if (static_cast<int>(i) < node.output_size())
    if (auto t = graph.inferredTypes.find(node.output(i));
        t != graph.inferredTypes.end())
      if (Type type = graph.typeOf(*t->second))
        return type;
  return UnrankedTensorType::get(fallbackElement);
}

std::optional<SmallVector<SymInt>>
NodeImporter::symbolicShape(llvm::StringRef name) {
  auto t = graph.inferredTypes.find(name);
  if (t == graph.inferredTypes.end() || !t->second->has_tensor_type() ||
      !t->second->tensor_type().has_shape())
    return std::nullopt;
  SmallVector<SymInt> dims;
  for (const auto &dim : t->second->tensor_type().shape().dim()) {
    if (dim.has_dim_value())
      dims.push_back({dim.dim_value(), {}});
    else if (dim.has_dim_param() && !dim.dim_param().empty())
      dims.push_back({0, dim.dim_param()});
    else
      return std::nullopt; // An anonymous dynamic dimension.
  }
  return dims;
}

void NodeImporter::setOutput(unsigned i, Value value) {
  if (static_cast<int>(i) < node.output_size() && !node.output(i).empty())
    graph.values[node.output(i)] = value;
}

bool NodeImporter::aliasOutput(unsigned i, unsigned inputIndex) {
  if (!hasInput(inputIndex) || static_cast<int>(i) >= node.output_size())
    return false;
  llvm::StringRef in = node.input(inputIndex);
  if (graph.aliases.count(in))
    in = graph.aliases[in];
  if (!graph.initializers.count(in) && !graph.constants.count(in))
    return false;
  graph.aliases[node.output(i)] = in.str();
  return true;
}

void NodeImporter::registerLargeConstant(unsigned i,
                                         const onnx::TensorProto &tensor) {
  if (static_cast<int>(i) < node.output_size() && !node.output(i).empty())
    graph.initializers[node.output(i)] = &tensor;
}

llvm::StringRef NodeImporter::modelDir() const { return graph.modelDir; }
int64_t NodeImporter::inlineLimit() const {
  return graph.options.inlineConstantLimit;
}

void NodeImporter::setConstOutput(unsigned i, ConstTensor tensor) {
  if (static_cast<int>(i) < node.output_size() && !node.output(i).empty())
    graph.constants[node.output(i)] = std::move(tensor);
}

llvm::Error mlir::hps::addDimSize(ONNXImportOptions &options,
                                  llvm::StringRef setting) {
  auto [name, size] = setting.split('=');
  int64_t n = 0;
  if (name.empty() || size.getAsInteger(10, n) || n <= 0)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--onnx-dim expects NAME=SIZE with a positive SIZE, got '" + setting +
            "'");
  options.dimSizes[name.str()] = n;
  return llvm::Error::success();
}
