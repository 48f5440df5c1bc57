//===- idx.cpp - fuzz target: the IDX reader (plain and gzipped) ----------===//
//
// The first byte picks images or labels; the rest is the file.
//
//===----------------------------------------------------------------------===//

#include "FuzzCommon.h"

#include "heterps/Runtime/Data/Dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  bool asLabels = data[0] & 1;
  auto tensor = heterps::runtime::data::parseIdx(
      heterps::fuzz::asText(data + 1, size - 1), "fuzz-idx", asLabels,
      asLabels ? 1.0f : 1.0f / 255);
  heterps::fuzz::requireOneLine(tensor);
  return 0;
}
