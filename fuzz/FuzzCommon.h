//===- FuzzCommon.h - what every fuzz target checks -------------*- C++ -*-===//
//
// Besides the sanitizers' own checks, every target holds the project's rule
// that an error is one line of text: a message with a newline aborts, so
// libFuzzer saves the input that produced it.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_FUZZ_FUZZCOMMON_H
#define HETERPS_FUZZ_FUZZCOMMON_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace heterps::fuzz {

/// The fuzz input as a string.
inline llvm::StringRef asText(const uint8_t *data, size_t size) {
  return llvm::StringRef(reinterpret_cast<const char *>(data), size);
}

/// Consumes `error`; aborts when its message spans several lines. With
/// HETERPS_FUZZ_PRINT_ERRORS set, prints it (to see what an input hits).
inline void requireOneLine(llvm::Error error) {
  if (!error)
    return;
  std::string message = llvm::toString(std::move(error));
  static const bool print = std::getenv("HETERPS_FUZZ_PRINT_ERRORS");
  if (print)
    std::fprintf(stderr, "error: %s\n", message.c_str());
  if (message.find('\n') != std::string::npos) {
    std::fprintf(stderr, "heterps-fuzz: multi-line error message:\n%s\n",
                 message.c_str());
    std::abort();
  }
}

/// The same for a result: its error, if any, is checked and consumed.
template <typename T> void requireOneLine(llvm::Expected<T> &result) {
  if (!result)
    requireOneLine(result.takeError());
}

} // namespace heterps::fuzz

#endif // HETERPS_FUZZ_FUZZCOMMON_H
