//===- Trace.h - Chrome trace events of a training run ----------*- C++ -*-===//
//
// Spans of work on named tracks, written in the Chrome trace event format
// (a JSON object with "traceEvents": complete events "ph":"X" with
// microsecond timestamps, and thread_name metadata naming each track), which
// chrome://tracing and Perfetto open. Any thread may record.
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
  size_t numEvents() const;
  /// Writes the trace to `path` (through a temporary file renamed into
  /// place); an error names the path.
  llvm::Error write(const std::string &path) const;

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
};

} // namespace heterps::runtime::pipeline

#endif // HETERPS_RUNTIME_PIPELINETRAIN_TRACE_H
