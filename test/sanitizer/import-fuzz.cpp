//===- import-fuzz.cpp - the importer on corrupted models, under ASan
//------===//
//
// Built with -fsanitize=address,undefined (see test/CMakeLists.txt). For each
// model given, imports it, then every prefix of it at a stride (truncations)
// and copies with seeded random byte flips. Every import must either succeed
// or return a one-line error; a sanitizer report aborts the process.
//
//===----------------------------------------------------------------------===//

#include "heterps/InitAll.h"
#include "heterps/Target/ONNX/ImportONNX.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <random>

using namespace mlir;

int main(int argc, char **argv) {
  DialectRegistry registry;
  hps::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.disableMultithreading();

  int imported = 0, rejected = 0;
  auto attempt = [&](llvm::StringRef bytes, llvm::StringRef name) {
    auto module = hps::importONNXBuffer(bytes, name, &context);
    if (module) {
      ++imported;
      return true;
    }
    std::string message = llvm::toString(module.takeError());
    ++rejected;
    if (message.find('\n') != std::string::npos) {
      llvm::errs() << "multi-line error for " << name << ":\n" << message;
      return false;
    }
    return true;
  };

  std::mt19937 rng(1234);
  for (int i = 1; i < argc; ++i) {
    auto buffer = llvm::MemoryBuffer::getFile(argv[i], false, false);
    if (!buffer) {
      // Missing files go through the file entry point.
      auto module = hps::importONNXFile(argv[i], &context);
      if (module)
        return 1;
      llvm::consumeError(module.takeError());
      ++rejected;
      continue;
    }
    std::string bytes = (*buffer)->getBuffer().str();
    bool ok = attempt(bytes, argv[i]);
    size_t stride = std::max<size_t>(1, bytes.size() / 64);
    for (size_t n = 0; ok && n < bytes.size(); n += stride)
      ok = attempt(llvm::StringRef(bytes).take_front(n), argv[i]);
    for (int trial = 0; ok && trial < 64 && !bytes.empty(); ++trial) {
      std::string mutated = bytes;
      for (int flips = 0; flips < 4; ++flips)
        mutated[rng() % mutated.size()] ^= static_cast<char>(1 + rng() % 255);
      ok = attempt(mutated, argv[i]);
    }
    if (!ok)
      return 1;
  }
  llvm::outs() << "import-fuzz: " << imported << " imported, " << rejected
               << " rejected, no sanitizer report\n";
  return 0;
}
