//===- heterps-import-sweep.cpp - import every model of test-data folders -===//
//
// For each folder, every `<test>/model.onnx` is imported, verified, printed
// and parsed back. Each model counts as imported, unsupported (it uses an
// operator or feature hps lacks) or failed (anything else: a bug, or a
// model libonnx rejects). Prints the counts per folder, the unsupported
// operators by the number of models that need them, and every failure.
// Exits 1 if any model failed.
//
//===----------------------------------------------------------------------===//

#include "heterps/InitAll.h"
#include "heterps/Target/ONNX/ImportONNX.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <map>

using namespace mlir;

static llvm::cl::list<std::string>
    folders(llvm::cl::Positional, llvm::cl::OneOrMore,
            llvm::cl::desc("<test-data folder>..."));
static llvm::cl::opt<bool>
    verbose("verbose", llvm::cl::desc("Print the outcome of every model"));

namespace {

enum class Outcome { Imported, Unsupported, Failed };

struct Tally {
  int imported = 0, unsupported = 0, failed = 0;
};

/// Imports, verifies, prints and re-parses one model.
Outcome sweepOne(const std::string &model, MLIRContext &context,
                 std::map<std::string, int> &unsupportedOps,
                 std::string &message) {
  auto module = hps::importONNXFile(model, &context);
  if (!module) {
    Outcome outcome = Outcome::Failed;
    llvm::handleAllErrors(
        module.takeError(),
        [&](const hps::UnsupportedOperatorError &e) {
          outcome = Outcome::Unsupported;
          for (const std::string &op : e.getOperators())
            ++unsupportedOps[op];
          message = e.message();
        },
        [&](const llvm::ErrorInfoBase &e) { message = e.message(); });
    return outcome;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  (*module)->print(os, OpPrintingFlags().enableDebugInfo(true, false));
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    diagnostics += diag.str();
    return success();
  });
  OwningOpRef<ModuleOp> reparsed =
      parseSourceString<ModuleOp>(text, &context, model);
  if (!reparsed || failed(verify(*reparsed))) {
    message = "printed IR does not parse back: " + diagnostics;
    return Outcome::Failed;
  }
  return Outcome::Imported;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "ONNX test-data import sweep\n");
  DialectRegistry registry;
  hps::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.disableMultithreading();

  std::map<std::string, int> unsupportedOps;
  std::vector<std::string> failures;
  Tally total;
  for (const std::string &folder : folders) {
    std::vector<std::string> models;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(folder, ec), end;
         it != end && !ec; it.increment(ec)) {
      llvm::SmallString<256> model(it->path());
      llvm::sys::path::append(model, "model.onnx");
      if (llvm::sys::fs::exists(model))
        models.push_back(model.str().str());
    }
    if (ec) {
      llvm::errs() << "heterps-import-sweep: error: " << folder << ": "
                   << ec.message() << "\n";
      return 2;
    }
    std::sort(models.begin(), models.end());
    Tally tally;
    for (const std::string &model : models) {
      std::string message;
      Outcome outcome = sweepOne(model, context, unsupportedOps, message);
      switch (outcome) {
      case Outcome::Imported:
        ++tally.imported;
        break;
      case Outcome::Unsupported:
        ++tally.unsupported;
        break;
      case Outcome::Failed:
        ++tally.failed;
        failures.push_back(message);
        break;
      }
      if (verbose)
        llvm::outs() << (outcome == Outcome::Imported      ? "imported     "
                         : outcome == Outcome::Unsupported ? "unsupported  "
                                                           : "FAILED       ")
                     << model << (message.empty() ? "" : "\n    ") << message
                     << "\n";
    }
    llvm::outs() << llvm::formatv(
        "{0,-60} models {1,4}  imported {2,4}  unsupported {3,4}  failed "
        "{4,3}\n",
        folder, models.size(), tally.imported, tally.unsupported, tally.failed);
    total.imported += tally.imported;
    total.unsupported += tally.unsupported;
    total.failed += tally.failed;
  }

  std::vector<std::pair<std::string, int>> byCount(unsupportedOps.begin(),
                                                   unsupportedOps.end());
  std::stable_sort(byCount.begin(), byCount.end(),
                   [](auto &a, auto &b) { return a.second > b.second; });
  llvm::outs() << "\nunsupported operators (models needing each):\n";
  for (auto &[op, count] : byCount)
    llvm::outs() << llvm::formatv("  {0,5}  {1}\n", count, op);
  if (!failures.empty()) {
    llvm::outs() << "\nfailures:\n";
    for (const std::string &f : failures)
      llvm::outs() << "  " << f << "\n";
  }
  llvm::outs() << llvm::formatv(
      "\nimport sweep: {0} imported, {1} unsupported, {2} failed\n",
      total.imported, total.unsupported, total.failed);
  return total.failed == 0 ? 0 : 1;
}
