//===- LowerToRuntime.cpp - the model as an executable plan --------------===//
//
// The runtime links no MLIR: this pass is where the IR ends. Every SSA value
// becomes a plan value, every layer a plan op named by its ONNX op type with
// its attributes as the dialect spells them; the kernels are chosen by the
// runtime's backends when they load the plan.
//
//===----------------------------------------------------------------------===//

#include "heterps/Transforms/LowerToRuntime.h"
#include "PlanIR.h"
#include "heterps/Dialect/HPS/HPS.h"
#include "heterps/Runtime/Plan.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

#include "google/protobuf/text_format.h"

namespace mlir::hps {
#define GEN_PASS_DEF_LOWERTORUNTIME
#include "heterps/Transforms/Passes.h.inc"
} // namespace mlir::hps

using namespace mlir;
using namespace mlir::hps;
namespace plan = heterps::runtime::plan;

namespace {

/// The ONNX operator an hps op stands for: its mnemonic in CamelCase, except
/// where ONNX spells it otherwise.
std::string onnxOpType(Operation *op) {
  static const llvm::StringMap<std::string> exceptions = {
      {"matmul", "MatMul"},
      {"prelu", "PRelu"},
      {"lrn", "LRN"},
      {"batch_norm", "BatchNormalization"},
      {"layer_norm", "LayerNormalization"},
      {"scatter_nd", "ScatterND"},
      {"lstm", "LSTM"},
      {"gru", "GRU"},
      {"rnn", "RNN"},
      // Bounds computed at run time: inputs of the same ONNX op.
      {"dynamic_reshape", "Reshape"},
      {"dynamic_slice", "Slice"},
      {"dynamic_pad", "Pad"},
      {"dynamic_resize", "Resize"}};
  StringRef mnemonic = op->getName().stripDialect();
  if (auto it = exceptions.find(mnemonic); it != exceptions.end())
    return it->second;
  std::string type;
  for (StringRef word : llvm::split(mnemonic, '_')) {
    type += llvm::toUpper(word.front());
    type += word.drop_front().str();
  }
  return type;
}

class PlanWriter {
public:
  explicit PlanWriter(func::FuncOp func) : func(func) { result.set_version(1); }

  FailureOr<plan::Plan> write(ModuleOp module) {
    if (auto source =
            module->getAttrOfType<StringAttr>(HPSDialect::kSourceAttrName))
      result.set_model_path(source.str());
    // The kind of each device type picks the backend that runs its ops.
    if (module->hasAttr(HPSDialect::kClusterAttrName)) {
      FailureOr<heterps::planner::ClusterSpec> spec =
          loadRecordedSpec(module, "hps-lower-to-runtime");
      if (failed(spec))
        return failure();
      for (const heterps::planner::DeviceType &t : spec->deviceTypes) {
        plan::DeviceType *type = result.add_device_types();
        type->set_name(t.name);
        type->set_kind(t.kind);
      }
    }
    for (BlockArgument arg : func.getArguments()) {
      auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                    HPSDialect::kNameAttrName);
      std::string n =
          name ? name.str() : "input_" + std::to_string(arg.getArgNumber());
      FailureOr<int> id = addValue(arg, n, func.getLoc());
      if (failed(id))
        return failure();
      plan::Binding *b = result.add_inputs();
      b->set_name(n);
      b->set_value(*id);
      if (auto dims = func.getArgAttrOfType<ArrayAttr>(
              arg.getArgNumber(), HPSDialect::kDimNamesAttrName))
        for (Attribute d : dims)
          b->add_dim_names(cast<StringAttr>(d).str());
    }
    for (Operation &op : func.getBody().front())
      if (failed(lower(&op)))
        return failure();
    // hps-provision's replicas per stage: the processes a distributed run
    // starts, the threads a pipelined one does.
    if (auto replicas = module->getAttrOfType<DenseI64ArrayAttr>(
            HPSDialect::kReplicasAttrName)) {
      for (int64_t k : replicas.asArrayRef()) {
        plan::Stage *stage = result.add_stages();
        stage->set_replicas(static_cast<int32_t>(k));
      }
      for (const plan::Op &op : result.ops())
        if (op.stage() >= 0 && op.stage() < result.stages_size() &&
            result.stages(op.stage()).device().empty())
          result.mutable_stages(op.stage())->set_device(op.device());
    }
    return std::move(result);
  }

private:
  LogicalResult lower(Operation *op) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        auto name =
            func.getResultAttrOfType<StringAttr>(i, HPSDialect::kNameAttrName);
        plan::Binding *b = result.add_outputs();
        b->set_name(name ? name.str() : "output_" + std::to_string(i));
        b->set_value(ids.lookup(v));
      }
      return success();
    }
    if (auto weight = dyn_cast<WeightOp>(op)) {
      FailureOr<int> id =
          addValue(weight.getOutput(), weight.getName().str(), op->getLoc());
      if (failed(id))
        return failure();
      plan::Weight *w = result.add_weights();
      w->set_value(*id);
      w->set_initializer(weight.getName().str());
      return success();
    }
    if (auto constant = dyn_cast<ConstantOp>(op))
      return lowerConstant(constant);
    if (op->getDialect() == nullptr ||
        op->getDialect()->getNamespace() != HPSDialect::getDialectNamespace())
      return op->emitOpError("cannot be written to a runtime plan");

    plan::Op *planOp = result.add_ops();
    planOp->set_name(layerName(op));
    planOp->set_type(onnxOpType(op));
    for (Value operand : op->getOperands())
      planOp->add_inputs(ids.lookup(operand));
    for (auto [i, r] : llvm::enumerate(op->getResults())) {
      FailureOr<int> id =
          addValue(r, layerName(op) + ":" + std::to_string(i), op->getLoc());
      if (failed(id))
        return failure();
      planOp->add_outputs(*id);
    }
    if (auto device =
            op->getAttrOfType<DeviceAttr>(HPSDialect::kDeviceAttrName))
      planOp->set_device(device.getName().str());
    if (auto stage = op->getAttrOfType<IntegerAttr>(HPSDialect::kStageAttrName))
      planOp->set_stage(stage.getInt());
    for (NamedAttribute attr : op->getAttrs()) {
      // Planning annotations (hps.device, hps.costs, ...) are not operands
      // of the kernel.
      if (attr.getName().getValue().starts_with("hps."))
        continue;
      if (failed(lowerAttribute(op, attr, planOp->add_attributes())))
        return failure();
    }
    return success();
  }

  LogicalResult lowerAttribute(Operation *op, NamedAttribute attr,
                               plan::Attribute *out) {
    out->set_name(attr.getName().str());
    Attribute value = attr.getValue();
    if (auto i = dyn_cast<IntegerAttr>(value)) {
      out->set_i(i.getType().isInteger(1) ? i.getValue().getZExtValue()
                                          : i.getInt());
    } else if (auto f = dyn_cast<FloatAttr>(value)) {
      out->set_f(static_cast<float>(f.getValueAsDouble()));
    } else if (auto s = dyn_cast<StringAttr>(value)) {
      out->set_s(s.str());
    } else if (auto ints = dyn_cast<DenseI64ArrayAttr>(value)) {
      for (int64_t v : ints.asArrayRef())
        out->mutable_ints()->add_values(v);
      out->mutable_ints(); // present even when empty
    } else if (auto floats = dyn_cast<DenseF32ArrayAttr>(value)) {
      for (float v : floats.asArrayRef())
        out->mutable_floats()->add_values(v);
      out->mutable_floats();
    } else {
      return op->emitOpError("attribute '")
             << attr.getName().getValue()
             << "' cannot be written to a runtime plan";
    }
    return success();
  }

  LogicalResult lowerConstant(ConstantOp constant) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!dense)
      return constant.emitOpError(
          "with a non-dense value cannot be written to a runtime plan");
    FailureOr<int> id =
        addValue(constant.getOutput(), layerName(constant), constant.getLoc());
    if (failed(id))
      return failure();
    // Little-endian element bytes, splats expanded.
    std::string bytes;
    auto append = [&](const auto &values) {
      for (auto v : values)
        bytes.append(reinterpret_cast<const char *>(&v), sizeof(v));
    };
    if (dense.getElementType().isF32())
      append(dense.getValues<float>());
    else if (dense.getElementType().isInteger(1))
      for (bool b : dense.getValues<bool>())
        bytes.push_back(b ? 1 : 0);
    else
      append(dense.getValues<int64_t>());
    plan::Weight *w = result.add_weights();
    w->set_value(*id);
    w->set_raw_data(std::move(bytes));
    return success();
  }

  /// A new plan value for `v` (f32, i64 or i1, ranked; -1 for dynamic dims).
  FailureOr<int> addValue(Value v, const std::string &name, Location loc) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    plan::DataType dtype = plan::DATA_TYPE_UNDEFINED;
    if (type && type.getElementType().isF32())
      dtype = plan::FLOAT;
    else if (type && type.getElementType().isInteger(64))
      dtype = plan::INT64;
    else if (type && type.getElementType().isInteger(1))
      dtype = plan::BOOL;
    if (dtype == plan::DATA_TYPE_UNDEFINED)
      return emitError(loc) << "hps-lower-to-runtime: value '" << name
                            << "' has type " << v.getType()
                            << ", which runtime plans do not support (ranked "
                               "f32, i64 and i1 tensors only)";
    plan::Value *value = result.add_values();
    value->set_name(name);
    value->set_dtype(dtype);
    for (int64_t d : type.getShape())
      value->add_dims(ShapedType::isDynamic(d) ? -1 : d);
    int id = result.values_size() - 1;
    ids[v] = id;
    return id;
  }

  func::FuncOp func;
  plan::Plan result;
  llvm::DenseMap<Value, int> ids;
};

struct LowerToRuntimePass
    : public mlir::hps::impl::LowerToRuntimeBase<LowerToRuntimePass> {
  using LowerToRuntimeBase::LowerToRuntimeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<plan::Plan> written = lowerToRuntimePlan(module);
    if (failed(written))
      return signalPassFailure();
    if (output == "-") {
      std::string text;
      google::protobuf::TextFormat::PrintToString(*written, &text);
      llvm::outs() << text;
    } else if (llvm::Error err = heterps::runtime::savePlan(*written, output)) {
      emitError(module.getLoc())
          << "hps-lower-to-runtime: " << llvm::toString(std::move(err));
      return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }
};

} // namespace

FailureOr<plan::Plan> mlir::hps::lowerToRuntimePlan(ModuleOp module) {
  FailureOr<func::FuncOp> func =
      getModelFunction(module, "hps-lower-to-runtime");
  if (failed(func))
    return failure();
  FailureOr<plan::Plan> written = PlanWriter(*func).write(module);
  if (failed(written))
    return failure();
  // The plan must load: a failure here is a bug of this pass.
  if (llvm::Error err = heterps::runtime::verifyPlan(*written, "the plan"))
    return emitError(module.getLoc())
           << "hps-lower-to-runtime: " << llvm::toString(std::move(err));
  return written;
}
