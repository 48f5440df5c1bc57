//===- tensor-pb.cpp - fuzz target: ONNX TensorProto (.pb) files ----------===//
//
// The tensor is named inside an empty temporary folder: external data may
// only be looked up there, so the target reads no file of this machine.
//
//===----------------------------------------------------------------------===//

#include "FuzzCommon.h"

#include <google/protobuf/stubs/logging.h>

#include "heterps/Runtime/ONNXTensor.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>

/// DIR/input.pb, DIR an empty folder made once per process.
static const std::string &tensorPath() {
  static std::string path = [] {
    llvm::SmallString<128> dir;
    if (llvm::sys::fs::createUniqueDirectory("heterps-fuzz-pb", dir)) {
      std::fprintf(stderr, "tensor-pb: cannot create a temporary folder\n");
      std::abort();
    }
    llvm::sys::path::append(dir, "input.pb");
    return std::string(dir);
  }();
  return path;
}

/// Protobuf logs every malformed string field to stderr; the fuzzer's own
/// output is what matters.
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string name;
  auto tensor = heterps::runtime::parseTensorFile(
      heterps::fuzz::asText(data, size), tensorPath(), &name);
  heterps::fuzz::requireOneLine(tensor);
  return 0;
}
