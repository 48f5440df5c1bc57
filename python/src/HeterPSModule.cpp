//===- HeterPSModule.cpp - the heterps._heterps extension module ----------===//

#include "Common.h"

#include "heterps/InitAll.h"
#include "heterps/Support/PrintableLine.h"

namespace py = pybind11;
using namespace heterps::python;

void heterps::python::raise(llvm::Error e) {
  raise(llvm::toString(std::move(e)));
}

void heterps::python::raise(const std::string &message) {
  throw Error(heterps::printableLine(message));
}

std::shared_ptr<mlir::MLIRContext> heterps::python::makeContext() {
  mlir::DialectRegistry registry;
  mlir::hps::registerAllDialects(registry);
  auto context = std::make_shared<mlir::MLIRContext>(registry);
  context->loadAllAvailableDialects();
  return context;
}

FirstError::FirstError(mlir::MLIRContext *context)
    : handler(context, [this](mlir::Diagnostic &d) {
        if (message.empty() &&
            d.getSeverity() == mlir::DiagnosticSeverity::Error)
          message = d.str();
        return mlir::success();
      }) {}

void FirstError::raise(const std::string &where) const {
  python::raise(where + ": " +
                (message.empty() ? std::string("failed") : message));
}

PYBIND11_MODULE(_heterps, m) {
  m.doc() = "HeterPS-MLIR primitives; use the heterps package instead.";
  py::register_exception<Error>(m, "Error", PyExc_RuntimeError);
  bindModel(m);
  bindSession(m);
  bindTraining(m);
}
