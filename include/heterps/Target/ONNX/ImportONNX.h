//===- ImportONNX.h - ONNX model to hps dialect -----------------*- C++ -*-===//
//
// Imports an ONNX model (opsets 1-17 of the default domain) into a module
// holding one `func.func @main` of hps ops. The model is parsed and checked
// with libonnx (onnx::checker, ONNX shape inference); weights are referenced
// by name (`hps.weight`), never copied into the IR.
//
// Errors are returned as llvm::Error with a one-line message of the form
//   "<file>: node 'conv3' (Conv, domain 'ai.onnx', opset 13): <what>"
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_TARGET_ONNX_IMPORTONNX_H
#define HETERPS_TARGET_ONNX_IMPORTONNX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>
#include <vector>

namespace mlir::hps {

/// Oldest and newest opset of the default ONNX domain the importer accepts.
/// Opsets 1-6 are read with their legacy attribute forms (e.g. `broadcast`
/// and `axis` on arithmetic ops, Reshape's `shape` attribute).
inline constexpr int kMinOnnxOpset = 1;
inline constexpr int kMaxOnnxOpset = 17;

struct ONNXImportOptions {
  /// Integer initializers and constants with at most this many elements are
  /// inlined as `hps.constant`; larger ones and every floating-point
  /// initializer become `hps.weight` references.
  int64_t inlineConstantLimit = 1024;
  /// Sizes for named dynamic input dimensions ("seq" -> 128): the model is
  /// imported as if its inputs had them, so every shape that depends on
  /// them is static (the cost model counts attention at that length).
  std::map<std::string, int64_t> dimSizes;
};

/// Returned when the model uses operators the importer does not support.
/// The message names the first such node; `operators` lists every distinct
/// unsupported "domain::OpType" of the model, for statistics.
class UnsupportedOperatorError
    : public llvm::ErrorInfo<UnsupportedOperatorError> {
public:
  static char ID;
  UnsupportedOperatorError(std::string message,
                           std::vector<std::string> operators)
      : text(std::move(message)), operators(std::move(operators)) {}
  void log(llvm::raw_ostream &os) const override { os << text; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
  const std::vector<std::string> &getOperators() const { return operators; }

private:
  std::string text;
  std::vector<std::string> operators;
};

/// Imports the ONNX model file at `path`.
llvm::Expected<OwningOpRef<ModuleOp>>
importONNXFile(llvm::StringRef path, MLIRContext *context,
               const ONNXImportOptions &options = {});

/// Imports a serialized ModelProto. `path` names the model in messages and
/// locates external data files.
llvm::Expected<OwningOpRef<ModuleOp>>
importONNXBuffer(llvm::StringRef bytes, llvm::StringRef path,
                 MLIRContext *context, const ONNXImportOptions &options = {});

/// Adds a "NAME=SIZE" setting (the tools' --onnx-dim) to `options.dimSizes`;
/// fails with one line naming the option unless SIZE is a positive integer.
llvm::Error addDimSize(ONNXImportOptions &options, llvm::StringRef setting);

/// True when `path` names an ONNX file (by its ".onnx" extension).
bool isONNXFilename(llvm::StringRef path);

} // namespace mlir::hps

#endif // HETERPS_TARGET_ONNX_IMPORTONNX_H
