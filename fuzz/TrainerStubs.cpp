//===- TrainerStubs.cpp - the Trainer methods Checkpoint.cpp names --------===//
//
// Checkpoint.cpp also saves and restores a live Trainer (loadCheckpoint(dir,
// trainer, key)), which the checkpoint target never calls. Linking the real
// Trainer would pull in the whole training runtime and oneDNN; these stand
// in for it and abort if ever reached.
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/Train/Trainer.h"

#include <cstdio>
#include <cstdlib>

using namespace heterps::runtime;
using namespace heterps::runtime::train;

[[noreturn]] static void notFuzzed(const char *what) {
  std::fprintf(stderr, "heterps-fuzz: %s is not part of the fuzz build\n",
               what);
  std::abort();
}

llvm::Expected<Trainer::State> Trainer::state() const {
  notFuzzed("Trainer::state");
}

llvm::Expected<WeightMap> Trainer::weights() const {
  notFuzzed("Trainer::weights");
}

llvm::Error Trainer::restore(State) { notFuzzed("Trainer::restore"); }
