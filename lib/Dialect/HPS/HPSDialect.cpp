//===- HPSDialect.cpp - hps dialect, attributes and attribute checks ------===//

#include "heterps/Dialect/HPS/HPS.h"

#include "mlir/IR/BuiltinOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdlib>

using namespace mlir;
using namespace mlir::hps;

#include "heterps/Dialect/HPS/HPSDialect.cpp.inc"
#include "heterps/Dialect/HPS/HPSEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "heterps/Dialect/HPS/HPSAttrs.cpp.inc"

void HPSDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "heterps/Dialect/HPS/HPSOps.cpp.inc"
      >();
  registerAttributes();
}

void HPSDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "heterps/Dialect/HPS/HPSAttrs.cpp.inc"
      >();
}

LogicalResult DeviceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StringRef name) {
  auto valid = [](char c) {
    return llvm::isAlnum(static_cast<unsigned char>(c)) || c == '_' ||
           c == '-' || c == '.';
  };
  if (name.empty() || !llvm::all_of(name, valid))
    return emitError() << "device type name must be a non-empty identifier of "
                          "letters, digits, '_', '-' and '.', got '"
                       << name << "'";
  return success();
}

FailureOr<APFloat> mlir::hps::detail::parseF64(AsmParser &parser) {
  // A float or an integer literal (`b0 = 32` reads as 32.0), either sign.
  SMLoc loc = parser.getCurrentLocation();
  Attribute attr;
  if (parser.parseAttribute(attr))
    return failure();
  if (auto f = dyn_cast<FloatAttr>(attr))
    return APFloat(f.getValueAsDouble());
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return APFloat(static_cast<double>(i.getInt()));
  return parser.emitError(loc, "expected a number");
}

void mlir::hps::detail::printF64(AsmPrinter &printer, const APFloat &value) {
  // The shortest decimal form that reads back to the same double.
  double v = value.convertToDouble();
  std::string text;
  for (int precision = 6; precision <= 17; ++precision) {
    text = llvm::formatv("{0}", llvm::format("%.*g", precision, v)).str();
    if (std::strtod(text.c_str(), nullptr) == v)
      break;
  }
  // Keep it a float literal, which MLIR writes with a point: "4e-05" would
  // read back as the integer 4 and a stray "e-05".
  if (std::isfinite(v) && text.find('.') == std::string::npos) {
    size_t exponent = text.find('e');
    text.insert(exponent == std::string::npos ? text.size() : exponent, ".0");
  }
  printer << text;
}

LogicalResult CostAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               APFloat octValue, APFloat odtValue,
                               APFloat alphaValue, APFloat betaValue,
                               APFloat b0Value) {
  double oct = octValue.convertToDouble(), odt = odtValue.convertToDouble();
  double alpha = alphaValue.convertToDouble();
  double beta = betaValue.convertToDouble(), b0 = b0Value.convertToDouble();
  if (!(oct >= 0) || !(odt >= 0))
    return emitError() << "'oct' and 'odt' must be non-negative";
  if (!(alpha >= 0 && alpha <= 1) || !(beta >= 0 && beta <= 1))
    return emitError() << "'alpha' and 'beta' must be in [0, 1]";
  if (!(b0 > 0))
    return emitError() << "'b0' must be positive";
  return success();
}

LogicalResult DeviceTypeAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, StringRef name,
    StringRef kind, APFloat price, int64_t maxCount, APFloat gflops,
    APFloat memoryBandwidth, APFloat networkBandwidth, APFloat alphaValue) {
  if (name.empty())
    return emitError() << "device type 'name' must not be empty";
  if (kind != "cpu" && kind != "cuda")
    return emitError() << "device type '" << name
                       << "': 'kind' must be cpu or cuda, got '" << kind << "'";
  auto finite = [](APFloat v) { return std::isfinite(v.convertToDouble()); };
  if (!(price.convertToDouble() >= 0) || !finite(price))
    return emitError() << "device type '" << name
                       << "': 'price_per_hour' must be a non-negative number";
  if (maxCount < 1)
    return emitError() << "device type '" << name
                       << "': 'max_count' must be at least 1";
  auto positive = [&](APFloat v) {
    return v.convertToDouble() > 0 && finite(v);
  };
  if (!positive(gflops) || !positive(memoryBandwidth) ||
      !positive(networkBandwidth))
    return emitError() << "device type '" << name
                       << "': 'gflops', 'memory_bandwidth_gbs' and "
                          "'network_bandwidth_gbs' must be positive";
  double alpha = alphaValue.convertToDouble();
  if (!(alpha >= 0 && alpha <= 1))
    return emitError() << "device type '" << name
                       << "': 'alpha' must be in [0, 1]";
  return success();
}

LogicalResult ClusterAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  ArrayAttr deviceTypes, int64_t batchSize,
                                  int64_t samplesPerEpoch, int64_t epochs,
                                  APFloat throughputLimit, StringRef step) {
  if (!deviceTypes || deviceTypes.empty())
    return emitError() << "'device_types' must list at least one device type";
  llvm::StringSet<> names;
  for (Attribute a : deviceTypes) {
    auto type = llvm::dyn_cast<DeviceTypeAttr>(a);
    if (!type)
      return emitError() << "'device_types' must hold #hps.device_type "
                            "attributes";
    if (!names.insert(type.getName()).second)
      return emitError() << "device type '" << type.getName()
                         << "' is listed twice";
  }
  if (batchSize < 1 || samplesPerEpoch < 1 || epochs < 1)
    return emitError() << "'batch_size', 'samples_per_epoch' and 'epochs' "
                          "must be at least 1";
  double limit = throughputLimit.convertToDouble();
  if (!(limit >= 0) || !std::isfinite(limit))
    return emitError() << "'throughput_limit' must be a non-negative number";
  if (step != "training" && step != "inference")
    return emitError() << "'step' must be training or inference, not '" << step
                       << "'";
  return success();
}

/// The closest op before `op` in its block that carries a stage index.
static Operation *previousStagedOp(Operation *op) {
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode())
    if (prev->getAttrOfType<IntegerAttr>(HPSDialect::kStageAttrName))
      return prev;
  return nullptr;
}

LogicalResult HPSDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kDeviceAttrName) {
    if (!isa<DeviceAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kDeviceAttrName << "' must be a #hps.device attribute";
    return success();
  }
  if (name == kStageAttrName) {
    auto stage = dyn_cast<IntegerAttr>(attr.getValue());
    if (!stage || !stage.getType().isSignlessInteger() || stage.getInt() < 0)
      return op->emitError()
             << "'" << kStageAttrName << "' must be a non-negative integer";
    auto device = op->getAttrOfType<DeviceAttr>(kDeviceAttrName);
    if (!device)
      return op->emitError() << "an op with '" << kStageAttrName
                             << "' must also have '" << kDeviceAttrName << "'";
    Operation *prev = previousStagedOp(op);
    if (!prev)
      return success();
    int64_t prevStage =
        prev->getAttrOfType<IntegerAttr>(kStageAttrName).getInt();
    if (stage.getInt() < prevStage)
      return op->emitError()
             << "stage " << stage.getInt() << " follows stage " << prevStage
             << ": stage indices must not decrease along a "
                "block";
    auto prevDevice = prev->getAttrOfType<DeviceAttr>(kDeviceAttrName);
    if (stage.getInt() == prevStage && prevDevice &&
        prevDevice.getName() != device.getName())
      return op->emitError()
             << "stage " << stage.getInt() << " mixes device types '"
             << prevDevice.getName() << "' and '" << device.getName()
             << "': a stage runs on one device type";
    return success();
  }
  if (name == kSourceAttrName) {
    if (!isa<ModuleOp>(op) || !isa<StringAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kSourceAttrName << "' must be a string on the module";
    return success();
  }
  if (name == kOpsetAttrName) {
    auto opset = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !opset || !opset.getType().isSignlessInteger())
      return op->emitError()
             << "'" << kOpsetAttrName << "' must be an integer on the module";
    return success();
  }
  if (name == kCostsAttrName) {
    auto costs = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!costs || !llvm::all_of(costs, [](NamedAttribute entry) {
          return isa<CostAttr>(entry.getValue());
        }))
      return op->emitError() << "'" << kCostsAttrName
                             << "' must map device type names to #hps.cost";
    return success();
  }
  if (name == kClusterAttrName) {
    if (!isa<ModuleOp>(op) || !isa<ClusterAttr>(attr.getValue()))
      return op->emitError() << "'" << kClusterAttrName
                             << "' must be a #hps.cluster on the module";
    return success();
  }
  if (name == kReplicasAttrName) {
    auto replicas = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !replicas ||
        llvm::any_of(replicas.asArrayRef(), [](int64_t k) { return k < 1; }))
      return op->emitError() << "'" << kReplicasAttrName
                             << "' must be an array of positive integers on "
                                "the module";
    return success();
  }
  if (name == kSearchAttrName) {
    auto search = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !search ||
        !search.getAs<StringAttr>("strategy") ||
        !search.getAs<FloatAttr>("search_time_s") ||
        !search.getAs<IntegerAttr>("evaluations"))
      return op->emitError()
             << "'" << kSearchAttrName
             << "' must be a dictionary with 'strategy', 'search_time_s' and "
                "'evaluations' on the module";
    // The certificate of hps-place{certify=true}.
    for (StringRef key :
         {"optimal_cost", "gap", "optimal_throughput", "certify_time_s"})
      if (search.get(key) && !search.getAs<FloatAttr>(key))
        return op->emitError() << "'" << kSearchAttrName << "' entry '" << key
                               << "' must be a float";
    return success();
  }
  if (name == kThroughputLimitAttrName) {
    auto limit = dyn_cast<FloatAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !limit || limit.getValueAsDouble() < 0)
      return op->emitError() << "'" << kThroughputLimitAttrName
                             << "' must be a non-negative float on the module";
    return success();
  }
  return op->emitError() << "unknown hps attribute '" << name << "'";
}

/// Function arguments and results may carry `hps.name` (the ONNX graph
/// input or output name), arguments also `hps.dim_names`, and nothing else
/// of this dialect.
static LogicalResult verifyValueAttribute(Operation *op, NamedAttribute attr,
                                          StringRef what) {
  if (attr.getName() == HPSDialect::kDimNamesAttrName && what == "argument") {
    auto names = dyn_cast<ArrayAttr>(attr.getValue());
    if (!names ||
        !llvm::all_of(names, [](Attribute a) { return isa<StringAttr>(a); }))
      return op->emitError() << "'" << HPSDialect::kDimNamesAttrName
                             << "' must be an array of strings";
    return success();
  }
  if (attr.getName() != HPSDialect::kNameAttrName)
    return op->emitError() << "unknown hps " << what << " attribute '"
                           << attr.getName().getValue() << "'";
  if (!isa<StringAttr>(attr.getValue()))
    return op->emitError() << "'" << HPSDialect::kNameAttrName
                           << "' must be a string";
  return success();
}

LogicalResult HPSDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                   unsigned arg,
                                                   NamedAttribute attr) {
  if (failed(verifyValueAttribute(op, attr, "argument")))
    return failure();
  auto func = dyn_cast<func::FuncOp>(op);
  auto names = dyn_cast<ArrayAttr>(attr.getValue());
  if (func && names && attr.getName() == kDimNamesAttrName) {
    auto type = dyn_cast<RankedTensorType>(func.getArgumentTypes()[arg]);
    if (!type || type.getRank() != static_cast<int64_t>(names.size()))
      return op->emitError() << "'" << kDimNamesAttrName << "' of argument "
                             << arg << " needs one name per dimension of "
                             << func.getArgumentTypes()[arg];
  }
  return success();
}

LogicalResult HPSDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                      unsigned,
                                                      NamedAttribute attr) {
  return verifyValueAttribute(op, attr, "result");
}
