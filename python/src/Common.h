//===- Common.h - what the Python bindings share ----------------*- C++ -*-===//
//
// The extension module `heterps._heterps` offers a few primitives (import,
// plan, report, run, train) over the C++ libraries; the package's Python
// code (heterps/__init__.py) builds the public API on them. Errors are the
// tools' one-line messages, raised as heterps.Error.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PYTHON_COMMON_H
#define HETERPS_PYTHON_COMMON_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <pybind11/pybind11.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace heterps::python {

/// Raised to Python as heterps.Error (a RuntimeError).
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Throws `e` as an Error carrying its message on one line.
[[noreturn]] void raise(llvm::Error e);
[[noreturn]] void raise(const std::string &message);

template <typename T> T unwrap(llvm::Expected<T> value) {
  if (!value)
    raise(value.takeError());
  return std::move(*value);
}

/// An MLIR module (an imported model, or a plan: the model with its
/// placement) with the context that owns it.
struct IRModule {
  std::shared_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::ModuleOp op() const { return module.get(); }
  /// The file it came from, for messages.
  std::string path;
};

/// A context with the hps dialect loaded.
std::shared_ptr<mlir::MLIRContext> makeContext();

/// Keeps the first error diagnostic emitted while it lives, so a failed
/// pass becomes one message ("model.onnx: <diagnostic>").
class FirstError {
public:
  explicit FirstError(mlir::MLIRContext *context);
  [[noreturn]] void raise(const std::string &where) const;

private:
  std::string message;
  mlir::ScopedDiagnosticHandler handler;
};

void bindModel(pybind11::module_ &m);
void bindSession(pybind11::module_ &m);
void bindTraining(pybind11::module_ &m);

} // namespace heterps::python

#endif // HETERPS_PYTHON_COMMON_H
