//===- Trace.cpp - Chrome trace events of a training run ------------------===//

#include "heterps/Runtime/PipelineTrain/Trace.h"

#include "heterps/Runtime/AtomicFile.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace heterps::runtime::pipeline;

int TraceRecorder::addTrack(std::string name) {
  std::lock_guard lock(mutex);
  tracks.push_back(std::move(name));
  return static_cast<int>(tracks.size()) - 1;
}

void TraceRecorder::record(int track, std::string name, const char *category,
                           Clock::time_point begin, Clock::time_point end) {
  using Us = std::chrono::duration<double, std::micro>;
  Event e{track, std::move(name), category, Us(begin - origin).count(),
          Us(end - begin).count()};
  std::lock_guard lock(mutex);
  events.push_back(std::move(e));
}

void TraceRecorder::markStep(Clock::time_point begin) {
  using Us = std::chrono::duration<double, std::micro>;
  std::lock_guard lock(mutex);
  stepStartsUs.push_back(Us(begin - origin).count());
}

size_t TraceRecorder::numEvents() const {
  std::lock_guard lock(mutex);
  return events.size();
}

llvm::Error TraceRecorder::write(const std::string &path) const {
  std::lock_guard lock(mutex);
  llvm::json::Array out;
  for (size_t t = 0; t < tracks.size(); ++t)
    out.push_back(
        llvm::json::Object{{"name", "thread_name"},
                           {"ph", "M"},
                           {"pid", 1},
                           {"tid", static_cast<int64_t>(t)},
                           {"args", llvm::json::Object{{"name", tracks[t]}}}});
  // Step starts as global instant events: the picture's window, and a
  // ruler in Perfetto.
  for (double us : stepStartsUs)
    out.push_back(llvm::json::Object{{"name", "step"},
                                     {"ph", "i"},
                                     {"s", "g"},
                                     {"pid", 1},
                                     {"tid", 0},
                                     {"ts", us}});
  for (const Event &e : events)
    out.push_back(llvm::json::Object{{"name", e.name},
                                     {"cat", e.category},
                                     {"ph", "X"},
                                     {"pid", 1},
                                     {"tid", e.track},
                                     {"ts", e.beginUs},
                                     {"dur", e.durationUs}});
  llvm::json::Value trace(llvm::json::Object{{"traceEvents", std::move(out)},
                                             {"displayTimeUnit", "ms"}});
  if (llvm::Error e = heterps::runtime::writeFileAtomically(
          path, [&](llvm::raw_ostream &os) -> llvm::Error {
            os << trace;
            return llvm::Error::success();
          }))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--trace: " + llvm::toString(std::move(e)));
  return llvm::Error::success();
}
