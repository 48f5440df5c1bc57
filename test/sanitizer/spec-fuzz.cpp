//===- spec-fuzz.cpp - cluster spec and profile parsers, under ASan -------===//
//
// Built with -fsanitize=address,undefined (see test/CMakeLists.txt). Parses
// each given cluster spec (YAML) or profile (JSON), every prefix of it and
// copies with seeded random byte flips. Every parse must either succeed or
// return a one-line error; a sanitizer report aborts the process.
//
//===----------------------------------------------------------------------===//

#include "heterps/Planner/ClusterSpec.h"
#include "heterps/Planner/Profile.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <random>

using namespace heterps::planner;

int main(int argc, char **argv) {
  int accepted = 0, rejected = 0;
  std::mt19937 rng(1234);
  for (int i = 1; i < argc; ++i) {
    auto buffer = llvm::MemoryBuffer::getFile(argv[i], /*IsText=*/true);
    if (!buffer) {
      llvm::errs() << "spec-fuzz: cannot read " << argv[i] << "\n";
      return 2;
    }
    bool json = llvm::StringRef(argv[i]).ends_with(".json");
    auto attempt = [&](llvm::StringRef text) {
      std::string message;
      if (json) {
        auto profile = parseProfile(text, "p.json");
        if (profile)
          return ++accepted, true;
        message = llvm::toString(profile.takeError());
      } else {
        auto spec = parseClusterSpec(text, "c.yaml");
        if (spec)
          return ++accepted, true;
        message = llvm::toString(spec.takeError());
      }
      ++rejected;
      if (message.find('\n') == std::string::npos)
        return true;
      llvm::errs() << "multi-line error for a variant of " << argv[i] << ":\n"
                   << message << "\n";
      return false;
    };
    std::string text = (*buffer)->getBuffer().str();
    bool ok = attempt(text);
    for (size_t n = 0; ok && n < text.size(); ++n)
      ok = attempt(llvm::StringRef(text).take_front(n));
    for (int trial = 0; ok && trial < 512 && !text.empty(); ++trial) {
      std::string mutated = text;
      for (int flips = 0; flips < 3; ++flips)
        mutated[rng() % mutated.size()] = static_cast<char>(rng() % 256);
      ok = attempt(mutated);
    }
    if (!ok)
      return 1;
  }
  llvm::outs() << "spec-fuzz: " << accepted << " accepted, " << rejected
               << " rejected, no sanitizer report\n";
  return 0;
}
