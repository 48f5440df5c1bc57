//===- onnx-import.cpp - fuzz target: the ONNX importer -------------------===//
//
// Feeds the input to importONNXBuffer as a serialised ModelProto. The model
// is named inside an empty folder, so external data can name nothing real.
//
//===----------------------------------------------------------------------===//

#include "FuzzCommon.h"

#include <google/protobuf/stubs/logging.h>

#include "heterps/InitAll.h"
#include "heterps/Target/ONNX/ImportONNX.h"

#include "mlir/IR/MLIRContext.h"

using namespace mlir;

/// One context for all runs: creating one per input would dominate the time.
static MLIRContext &context() {
  static MLIRContext *ctx = [] {
    DialectRegistry registry;
    hps::registerAllDialects(registry);
    auto *c = new MLIRContext(registry);
    c->loadAllAvailableDialects();
    c->disableMultithreading();
    return c;
  }();
  return *ctx;
}

/// Protobuf logs every malformed string field to stderr; the fuzzer's own
/// output is what matters.
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto module =
      hps::importONNXBuffer(heterps::fuzz::asText(data, size),
                            "/nonexistent/heterps-fuzz/fuzz.onnx", &context());
  heterps::fuzz::requireOneLine(module);
  return 0;
}
