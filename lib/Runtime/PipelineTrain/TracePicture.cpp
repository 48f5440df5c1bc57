//===- TracePicture.cpp - the training schedule as an SVG picture ---------===//
//
// Stages x time: one row per track (stage replica), a rectangle per span.
// Forward and backward spans carry their micro-batch (F3, B3), so the
// pipeline's fill, drain and bubbles show as the gaps between them; pulls
// and pushes of the parameter server are drawn in their own colours. The
// first step, which sets up the kernels, is left out when there are more;
// a run of many steps shows only its last spans (kMaxSpans): the shape of
// a step repeats, and a browser draws a few thousand rectangles at once.
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/AtomicFile.h"
#include "heterps/Runtime/PipelineTrain/Trace.h"
#include "heterps/Support/Svg.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>

using namespace heterps::runtime::pipeline;
using heterps::svg::escape;
using heterps::svg::num;

namespace {

constexpr size_t kMaxSpans = 3000;

struct Kind {
  const char *label, *fill;
};

/// Forward, backward, pull, push: the colour of each kind of span.
constexpr Kind kKinds[] = {{"forward", "#56B4E9"},
                           {"backward", "#0072B2"},
                           {"pull", "#E69F00"},
                           {"push", "#D55E00"}};

Kind kindOf(const char *category, const std::string &name) {
  if (std::strcmp(category, "forward") == 0)
    return kKinds[0];
  if (std::strcmp(category, "backward") == 0)
    return kKinds[1];
  return name == "pull" ? kKinds[2] : kKinds[3];
}

} // namespace

std::string heterps::runtime::pipeline::picturePath(llvm::StringRef trace) {
  llvm::SmallString<256> path(trace);
  if (llvm::sys::path::extension(path) == ".svg")
    path += ".svg";
  else
    llvm::sys::path::replace_extension(path, ".svg");
  return std::string(path);
}

llvm::Error TraceRecorder::writePicture(const std::string &path) const {
  std::lock_guard lock(mutex);
  // The first step sets up every kernel and takes many times a later one.
  double after = stepStartsUs.size() > 1 ? stepStartsUs[1] : -1;
  std::vector<const Event *> shown;
  for (const Event &e : events)
    if (e.beginUs >= after)
      shown.push_back(&e);
  std::sort(shown.begin(), shown.end(), [](const Event *a, const Event *b) {
    return a->beginUs < b->beginUs;
  });
  if (shown.size() > kMaxSpans)
    shown.erase(shown.begin(), shown.end() - kMaxSpans);
  double from = shown.empty() ? 0 : shown.front()->beginUs, to = from;
  for (const Event *e : shown)
    to = std::max(to, e->beginUs + e->durationUs);
  double span = std::max(to - from, 1.0);

  constexpr double kLabel = 150, kWidth = 1100, kRow = 26, kTop = 30;
  double scale = (kWidth - kLabel - 10) / span;
  double height = kTop + kRow * static_cast<double>(tracks.size()) + 90;
  auto draw = [&](llvm::raw_ostream &os) -> llvm::Error {
    os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(kWidth)
       << "\" height=\"" << num(height)
       << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
       << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
       << "<text x=\"0\" y=\"16\" font-size=\"14\">Training schedule: "
       << (after >= 0
               ? llvm::formatv("steps 2-{0}, ", stepStartsUs.size()).str()
               : std::string())
       << (shown.size() < events.size()
               ? llvm::formatv("the last {0} of {1} spans", shown.size(),
                               events.size())
                     .str()
               : llvm::formatv("{0} spans", shown.size()).str())
       << llvm::formatv(", {0:F1} ms", span / 1e3).str() << "</text>\n";
    for (size_t t = 0; t < tracks.size(); ++t)
      os << "<text x=\"0\" y=\"" << num(kTop + kRow * t + 16) << "\">"
         << escape(tracks[t]) << "</text>\n";
    for (const Event *e : shown) {
      Kind kind = kindOf(e->category, e->name);
      double x = kLabel + (e->beginUs - from) * scale;
      double y = kTop + kRow * e->track + 2;
      double width = std::max(e->durationUs * scale, 0.5);
      os << "<rect class=\"" << kind.label << "\" x=\"" << num(x) << "\" y=\""
         << num(y) << "\" width=\"" << num(width) << "\" height=\""
         << num(kRow - 6) << "\" fill=\"" << kind.fill
         << "\" stroke=\"#ffffff\" stroke-width=\"0.5\"><title>"
         << escape(e->name) << ": "
         << llvm::formatv("{0:F2}", e->durationUs / 1e3)
         << " ms</title></rect>\n";
      // Micro-batch names (F3, B3) where they fit.
      if (width > 8.0 * e->name.size())
        os << "<text x=\"" << num(x + width / 2) << "\" y=\"" << num(y + 14)
           << "\" font-size=\"10\" fill=\"#ffffff\" text-anchor=\"middle\">"
           << escape(e->name) << "</text>\n";
    }
    // A time axis in milliseconds from the first span shown.
    double axis = kTop + kRow * static_cast<double>(tracks.size()) + 4;
    for (int tick = 0; tick <= 5; ++tick) {
      double x = kLabel + (kWidth - kLabel - 10) * tick / 5;
      os << "<line x1=\"" << num(x) << "\" y1=\"" << num(axis) << "\" x2=\""
         << num(x) << "\" y2=\"" << num(axis + 4)
         << "\" stroke=\"#888888\"/><text x=\"" << num(x) << "\" y=\""
         << num(axis + 16) << "\" text-anchor=\"middle\">"
         << llvm::formatv("{0:F1} ms", span / 1e3 * tick / 5).str()
         << "</text>\n";
    }
    double y = axis + 40;
    double x = kLabel;
    for (Kind k : kKinds) {
      os << "<rect x=\"" << num(x) << "\" y=\"" << num(y - 10)
         << "\" width=\"12\" height=\"12\" fill=\"" << k.fill
         << "\"/><text x=\"" << num(x + 16) << "\" y=\"" << num(y) << "\">"
         << k.label << "</text>\n";
      x += 100;
    }
    os << "<text x=\"" << num(kLabel) << "\" y=\"" << num(y + 20)
       << "\">time from left to right; gaps in a row are the pipeline's "
          "bubbles</text>\n</svg>\n";
    return llvm::Error::success();
  };
  if (llvm::Error e = heterps::runtime::writeFileAtomically(path, draw))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--trace: " + llvm::toString(std::move(e)));
  return llvm::Error::success();
}
