//===- PrintableLine.h - messages that stay on one line ---------*- C++ -*-===//
//
// Error messages quote names from the files they read (node and tensor
// names, paths, YAML keys). A hostile file can put newlines, terminal escape
// sequences or megabytes into those names; printableLine keeps the message
// one readable line whatever they hold.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SUPPORT_PRINTABLELINE_H
#define HETERPS_SUPPORT_PRINTABLELINE_H

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <string>

namespace heterps {

/// `text` with control characters written as C escapes (\n, \t, \x1b) and,
/// past `maxBytes`, cut with a note of how much was left out.
inline std::string printableLine(llvm::StringRef text, size_t maxBytes = 2000) {
  std::string out;
  size_t i = 0;
  for (; i < text.size() && out.size() < maxBytes; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7f)
      out += {'\\', 'x', llvm::hexdigit(c >> 4, /*LowerCase=*/true),
              llvm::hexdigit(c & 15, /*LowerCase=*/true)};
    else
      out += static_cast<char>(c);
  }
  if (i < text.size())
    out += "... (" + std::to_string(text.size() - i) + " more bytes)";
  return out;
}

/// An error whose message is printableLine(`message`): what every reader of
/// a file returns when its message quotes the file's contents.
inline llvm::Error printableError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 printableLine(message.str()));
}

} // namespace heterps

#endif // HETERPS_SUPPORT_PRINTABLELINE_H
