//===- NestingDepth.h - refuse documents nested too deeply ------*- C++ -*-===//
//
// llvm::json::parse and LLVM's YAML I/O recurse once per nesting level, so a
// cluster spec or placement nested tens of thousands of levels deep
// overflows the stack (exit 139, no message). Parsers call
// checkNestingDepth on the text first: a cheap scan that bounds the depth
// from above, so every real document passes and a hostile one gets one
// error line.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SUPPORT_NESTINGDEPTH_H
#define HETERPS_SUPPORT_NESTINGDEPTH_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <cstddef>

namespace heterps {

/// Far deeper than any cluster spec, profile or placement, far shallower
/// than what overflows an 8 MiB stack in the parsers.
inline constexpr size_t kMaxNestingDepth = 1000;

/// An upper bound of how deeply the JSON or YAML `text` nests: brackets and
/// braces outside quoted strings and comments, plus on each line its
/// indentation and the YAML indicators ('- ', '? ', ': ') that open a block
/// level.
inline size_t nestingBound(llvm::StringRef text) {
  size_t bound = 0, flow = 0, lineLevels = 0;
  bool lineStart = true, inComment = false;
  char quote = 0, previous = ' ';
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    char next = i + 1 < text.size() ? text[i + 1] : '\n';
    if (c == '\n') {
      // Quotes and comments end with the line: a quote that YAML reads as
      // part of a plain scalar must not hide the brackets after it.
      lineStart = true;
      inComment = false;
      quote = 0;
      lineLevels = 0;
      previous = ' ';
      continue;
    }
    if (lineStart && c == ' ') {
      bound = std::max(bound, flow + ++lineLevels);
      continue;
    }
    lineStart = false;
    // Strings and comments start only where a token may.
    bool afterSpace = previous == ' ' || previous == '\t';
    bool tokenStart =
        afterSpace || llvm::StringRef("[{,:-?").contains(previous);
    previous = c;
    if (inComment)
      continue;
    if (quote) {
      if (c == '\\' && quote == '"' && next != '\n')
        ++i;
      else if (c == quote)
        quote = 0;
      continue;
    }
    if ((c == '"' || c == '\'') && tokenStart) {
      quote = c;
    } else if (c == '#' && afterSpace) {
      inComment = true;
    } else if (c == '[' || c == '{') {
      ++flow;
    } else if (c == ']' || c == '}') {
      flow -= flow > 0;
    } else if ((c == '-' || c == '?' || c == ':') &&
               (next == ' ' || next == '\n' || next == '\r')) {
      ++lineLevels;
    }
    bound = std::max(bound, flow + lineLevels);
  }
  return bound;
}

/// An error naming `filename` when `text` may nest deeper than
/// kMaxNestingDepth.
inline llvm::Error checkNestingDepth(llvm::StringRef text,
                                     llvm::StringRef filename) {
  if (nestingBound(text) <= kMaxNestingDepth)
    return llvm::Error::success();
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      filename + ": nested more than " + llvm::Twine(kMaxNestingDepth) +
          " levels deep (brackets, indentation or '-' entries); not read");
}

} // namespace heterps

#endif // HETERPS_SUPPORT_NESTINGDEPTH_H
