//===- heterps-opt.cpp - the HeterPS pass driver --------------------------===//
//
// mlir-opt with the hps dialect and the HeterPS passes. An input ending in
// ".onnx" is imported first; every mlir-opt flag then applies to the
// imported module. Output goes to a temporary file that replaces `-o FILE`
// only on success, so a failed run never clobbers an existing file.
//
//===----------------------------------------------------------------------===//

#include "heterps/InitAll.h"
#include "heterps/Runtime/AtomicFile.h"
#include "heterps/Target/ONNX/ImportONNX.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;

static constexpr const char *kTool = "heterps-opt";

static llvm::cl::list<std::string> onnxDims(
    "onnx-dim",
    llvm::cl::desc("NAME=SIZE: import an .onnx input as if its dynamic "
                   "dimension NAME (e.g. seq) had SIZE, so the shapes that "
                   "depend on it are static (repeatable)"),
    llvm::cl::value_desc("NAME=SIZE"));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), kTool) << message << "\n";
  return 1;
}

/// The ONNX model as MLIR text with locations, for MlirOptMain to parse.
static llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
importToBuffer(llvm::StringRef path, DialectRegistry &registry) {
  hps::ONNXImportOptions options;
  for (llvm::StringRef setting : onnxDims)
    if (llvm::Error e = hps::addDimSize(options, setting))
      return std::move(e);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  auto module = hps::importONNXFile(path, &context, options);
  if (!module)
    return module.takeError();
  std::string text;
  llvm::raw_string_ostream os(text);
  (*module)->print(os, OpPrintingFlags().enableDebugInfo(
                           /*enable=*/true, /*prettyForm=*/false));
  return llvm::MemoryBuffer::getMemBufferCopy(text, path);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  DialectRegistry registry;
  hps::registerAllDialects(registry);
  hps::registerAllPasses();
  registerTransformsPasses(); // canonicalize, cse, print-ir, ...

  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv,
      "HeterPS optimizer driver\n\n"
      "Reads MLIR (.mlir) or an ONNX model (.onnx, imported into the hps "
      "dialect),\nruns the requested passes and prints the result.\n",
      registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();

  std::unique_ptr<llvm::MemoryBuffer> input;
  if (hps::isONNXFilename(inputFilename)) {
    auto buffer = importToBuffer(inputFilename, registry);
    if (!buffer)
      return fail(llvm::toString(buffer.takeError()));
    input = std::move(*buffer);
  } else {
    std::string error;
    input = openInputFile(inputFilename, &error);
    if (!input)
      return fail(error);
  }

  // Run into memory; write the output only when everything succeeded.
  std::string result;
  llvm::raw_string_ostream os(result);
  if (failed(MlirOptMain(os, std::move(input), registry, config)))
    return 1;
  if (outputFilename == "-") {
    llvm::outs() << result;
    return 0;
  }
  if (llvm::Error err = heterps::runtime::writeFileAtomically(
          outputFilename, [&](llvm::raw_ostream &out) {
            out << result;
            return llvm::Error::success();
          }))
    return fail(outputFilename + ": " + llvm::toString(std::move(err)));
  return 0;
}
