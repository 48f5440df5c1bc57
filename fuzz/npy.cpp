//===- npy.cpp - fuzz target: the .npy reader -----------------------------===//

#include "FuzzCommon.h"

#include "heterps/Runtime/NpyFile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto tensor =
      heterps::runtime::parseNpy(heterps::fuzz::asText(data, size), "fuzz.npy");
  heterps::fuzz::requireOneLine(tensor);
  return 0;
}
