//===- Svg.h - small helpers for the pictures we write ----------*- C++ -*-===//
//
// The plan report (hps-report format=html) and the training schedule
// picture are hand-written SVG: text escaped for XML, numbers with few
// digits, and one palette so a device type or a kind of work has the same
// colour in every picture.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SUPPORT_SVG_H
#define HETERPS_SUPPORT_SVG_H

#include "llvm/ADT/StringRef.h"

#include <cstdio>
#include <string>

namespace heterps::svg {

/// `text` safe inside an XML element or a quoted attribute.
inline std::string escape(llvm::StringRef text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      // Control characters are not allowed in XML 1.0.
      out += static_cast<unsigned char>(c) < 0x20 && c != '\t' ? ' ' : c;
    }
  }
  return out;
}

/// A coordinate or length: at most two decimals.
inline std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", v);
  std::string s = text;
  while (s.back() == '0')
    s.pop_back();
  if (s.back() == '.')
    s.pop_back();
  return s == "-0" ? "0" : s;
}

/// The i-th colour of a palette readable by colour-blind people (Okabe-Ito),
/// repeating past eight.
inline const char *colour(size_t i) {
  static const char *palette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                  "#56B4E9", "#D55E00", "#F0E442", "#000000"};
  return palette[i % (sizeof palette / sizeof *palette)];
}

} // namespace heterps::svg

#endif // HETERPS_SUPPORT_SVG_H
