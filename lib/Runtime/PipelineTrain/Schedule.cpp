//===- Schedule.cpp - the order of forwards and backwards per stage -------===//

#include "heterps/Runtime/PipelineTrain/Schedule.h"

#include <algorithm>
#include <array>

using namespace heterps::runtime::pipeline;

llvm::Expected<ScheduleKind>
heterps::runtime::pipeline::parseSchedule(llvm::StringRef name) {
  if (name == "gpipe")
    return ScheduleKind::GPipe;
  if (name == "1f1b")
    return ScheduleKind::OneFOneB;
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "unknown schedule '" + name +
                                     "' (expected gpipe or 1f1b)");
}

const char *heterps::runtime::pipeline::scheduleName(ScheduleKind kind) {
  return kind == ScheduleKind::GPipe ? "gpipe" : "1f1b";
}

std::vector<Task> heterps::runtime::pipeline::stageOrder(ScheduleKind kind,
                                                         int stage, int stages,
                                                         int microBatches) {
  std::vector<Task> order;
  int m = microBatches;
  if (kind == ScheduleKind::GPipe) {
    for (int j = 0; j < m; ++j)
      order.push_back({Task::Forward, j});
    for (int j = 0; j < m; ++j)
      order.push_back({Task::Backward, j});
    return order;
  }
  int warmup = std::min(stages - stage - 1, m);
  for (int j = 0; j < warmup; ++j)
    order.push_back({Task::Forward, j});
  for (int j = warmup; j < m; ++j) {
    order.push_back({Task::Forward, j});
    order.push_back({Task::Backward, j - warmup});
  }
  for (int j = m - warmup; j < m; ++j)
    order.push_back({Task::Backward, j});
  return order;
}

std::vector<std::vector<std::vector<Task>>>
heterps::runtime::pipeline::replicaOrders(ScheduleKind kind, int microBatches,
                                          llvm::ArrayRef<int> replicas) {
  int p = static_cast<int>(replicas.size());
  std::vector<std::vector<std::vector<Task>>> result(p);
  for (int s = 0; s < p; ++s) {
    result[s].resize(replicas[s]);
    for (const Task &t : stageOrder(kind, s, p, microBatches))
      result[s][t.microBatch % replicas[s]].push_back(t);
  }
  return result;
}

double heterps::runtime::pipeline::simulateSchedule(
    ScheduleKind kind, int microBatches, llvm::ArrayRef<int> replicas,
    llvm::ArrayRef<double> forward, llvm::ArrayRef<double> backward) {
  auto orders = replicaOrders(kind, microBatches, replicas);
  int p = static_cast<int>(replicas.size());
  // finish[s][kind][j], negative until the task has run.
  std::vector<std::array<std::vector<double>, 2>> finish(p);
  for (auto &f : finish)
    f.fill(std::vector<double>(microBatches, -1));
  double makespan = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < p; ++s)
      for (std::vector<Task> &order : orders[s]) {
        // Tasks run are taken off the front; `free` is when the replica is.
        double free = 0;
        for (const Task &t : order)
          if (finish[s][t.kind][t.microBatch] >= 0)
            free = finish[s][t.kind][t.microBatch];
        for (const Task &t : order) {
          double &done = finish[s][t.kind][t.microBatch];
          if (done >= 0)
            continue;
          double ready =
              t.kind == Task::Forward
                  ? (s == 0 ? 0 : finish[s - 1][Task::Forward][t.microBatch])
                  : (s == p - 1 ? finish[s][Task::Forward][t.microBatch]
                                : finish[s + 1][Task::Backward][t.microBatch]);
          if (ready < 0)
            break;
          free = std::max(free, ready) +
                 (t.kind == Task::Forward ? forward[s] : backward[s]);
          done = free;
          makespan = std::max(makespan, free);
          progress = true;
        }
      }
  }
  return makespan;
}

int heterps::runtime::pipeline::peakStash(llvm::ArrayRef<Task> order) {
  int held = 0, peak = 0;
  for (const Task &t : order) {
    held += t.kind == Task::Forward ? 1 : -1;
    peak = std::max(peak, held);
  }
  return peak;
}

double heterps::runtime::pipeline::idealBubbleFraction(int stages,
                                                       int microBatches) {
  return double(stages - 1) / double(microBatches + stages - 1);
}
