//===- Trace.h - Chrome trace events of a training run ----------*- C++ -*-===//
//
// Spans of work on named tracks, written in the Chrome trace event format
// (a JSON object with "traceEvents": complete events "ph":"X" with
// microsecond timestamps, and thread_name metadata naming each track), which
// chrome://tracing and Perfetto open, or as a picture of the schedule. Any
// thread may record.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_PIPELINETRAIN_TRACE_H
#define HETERPS_RUNTIME_PIPELINETRAIN_TRACE_H

#include "llvm/Support/Error.h"

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace heterps::runtime::pipeline {

class TraceRecorder {
public:
  using Clock = std::chrono::steady_clock;

  TraceRecorder() : origin(Clock::now()) {}

  /// A track (one per stage replica); its index names it in events.
  int addTrack(std::string name);
  /// A span `name` of category `category` on `track`.
  void record(int track, std::string name, const char *category,
              Clock::time_point begin, Clock::time_point end);
  /// A training step began (the picture leaves out the first step, which
  /// sets up the kernels, when there are later ones).
  void markStep(Clock::time_point begin);
  size_t numEvents() const;
  /// Writes the trace to `path` (through a temporary file renamed into
  /// place); an error names the path.
  llvm::Error write(const std::string &path) const;
  /// Writes the schedule as an SVG picture to `path` (TracePicture.cpp):
  /// one row per track, time across, spans coloured by kind (forward,
  /// backward, pull, push); from the second step on, and for a long run
  /// its last spans.
  llvm::Error writePicture(const std::string &path) const;

private:
  struct Event {
    int track;
    std::string name;
    const char *category;
    double beginUs, durationUs;
  };
  Clock::time_point origin;
  mutable std::mutex mutex;
  std::vector<std::string> tracks;
  std::vector<Event> events;
  std::vector<double> stepStartsUs;
};

/// Where the picture of the trace at `tracePath` goes: run.json -> run.svg.
std::string picturePath(llvm::StringRef tracePath);

} // namespace heterps::runtime::pipeline

#endif // HETERPS_RUNTIME_PIPELINETRAIN_TRACE_H
