//===- HPSDialect.cpp - hps dialect, attributes and attribute checks ------===//

#include "heterps/Dialect/HPS/HPS.h"

#include "mlir/IR/BuiltinOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

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
  return op->emitError() << "unknown hps attribute '" << name << "'";
}

/// Function arguments and results may carry `hps.name` (the ONNX graph
/// input or output name) and nothing else of this dialect.
static LogicalResult verifyValueAttribute(Operation *op, NamedAttribute attr,
                                          StringRef what) {
  if (attr.getName() != HPSDialect::kNameAttrName)
    return op->emitError() << "unknown hps " << what << " attribute '"
                           << attr.getName().getValue() << "'";
  if (!isa<StringAttr>(attr.getValue()))
    return op->emitError() << "'" << HPSDialect::kNameAttrName
                           << "' must be a string";
  return success();
}

LogicalResult HPSDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                   unsigned,
                                                   NamedAttribute attr) {
  return verifyValueAttribute(op, attr, "argument");
}

LogicalResult HPSDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                      unsigned,
                                                      NamedAttribute attr) {
  return verifyValueAttribute(op, attr, "result");
}
