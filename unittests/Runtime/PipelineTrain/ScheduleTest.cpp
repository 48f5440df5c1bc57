//===- ScheduleTest.cpp - GPipe and 1F1B task orders ----------------------===//

#include "heterps/Runtime/PipelineTrain/Schedule.h"

#include "gtest/gtest.h"

#include <map>
#include <tuple>

using namespace heterps::runtime::pipeline;

namespace {

Task F(int j) { return {Task::Forward, j}; }
Task B(int j) { return {Task::Backward, j}; }

TEST(Schedule, GPipeRunsAllForwardsThenAllBackwards) {
  std::vector<Task> expected = {F(0), F(1), F(2), B(0), B(1), B(2)};
  EXPECT_EQ(stageOrder(ScheduleKind::GPipe, 0, 2, 3), expected);
  EXPECT_EQ(peakStash(expected), 3);
}

TEST(Schedule, OneFOneBWarmsUpThenAlternates) {
  // Stage 0 of 4 over 6 micro-batches: 3 warm-up forwards.
  std::vector<Task> first = {F(0), F(1), F(2), F(3), B(0), F(4),
                             B(1), F(5), B(2), B(3), B(4), B(5)};
  EXPECT_EQ(stageOrder(ScheduleKind::OneFOneB, 0, 4, 6), first);
  // The last stage runs each backward right after its forward.
  std::vector<Task> last = {F(0), B(0), F(1), B(1), F(2), B(2)};
  EXPECT_EQ(stageOrder(ScheduleKind::OneFOneB, 3, 4, 3), last);
  for (int s = 0; s < 4; ++s)
    EXPECT_EQ(peakStash(stageOrder(ScheduleKind::OneFOneB, s, 4, 8)), 4 - s);
  // Fewer micro-batches than stages: the warm-up is all of them.
  EXPECT_EQ(peakStash(stageOrder(ScheduleKind::OneFOneB, 0, 4, 2)), 2);
}

TEST(Schedule, ReplicasSplitMicroBatchesRoundRobin) {
  auto orders = replicaOrders(ScheduleKind::GPipe, 5, {1, 2});
  ASSERT_EQ(orders.size(), 2u);
  ASSERT_EQ(orders[1].size(), 2u);
  std::vector<Task> odd = {F(1), F(3), B(1), B(3)};
  EXPECT_EQ(orders[1][1], odd);
  EXPECT_EQ(orders[0][0].size(), 10u);
}

/// Runs every replica's order as a sequential executor, a task starting
/// when its input is there (the previous stage's forward, the next stage's
/// backward); true when all tasks finish.
bool runsToCompletion(ScheduleKind kind, int m, std::vector<int> replicas) {
  auto orders = replicaOrders(kind, m, replicas);
  int p = static_cast<int>(replicas.size());
  std::map<std::tuple<int, int, int>, bool> done; // (stage, kind, mb)
  std::vector<std::vector<size_t>> next(p);
  for (int s = 0; s < p; ++s)
    next[s].assign(replicas[s], 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < p; ++s)
      for (int r = 0; r < replicas[s]; ++r) {
        auto &order = orders[s][r];
        while (next[s][r] < order.size()) {
          Task t = order[next[s][r]];
          bool ready =
              t.kind == Task::Forward
                  ? s == 0 || done[{s - 1, Task::Forward, t.microBatch}]
                  : done[{s == p - 1 ? s : s + 1,
                          s == p - 1 ? Task::Forward : Task::Backward,
                          t.microBatch}];
          if (!ready)
            break;
          done[{s, t.kind, t.microBatch}] = true;
          ++next[s][r];
          progress = true;
        }
      }
  }
  for (int s = 0; s < p; ++s)
    for (int r = 0; r < replicas[s]; ++r)
      if (next[s][r] != orders[s][r].size())
        return false;
  return true;
}

TEST(Schedule, NoReplicaMixDeadlocks) {
  std::vector<std::vector<int>> mixes = {{1},       {2},       {1, 1},
                                         {2, 1},    {1, 3},    {1, 1, 1, 1},
                                         {2, 1, 3}, {3, 2, 1}, {1, 2, 2, 1}};
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB})
    for (const auto &mix : mixes)
      for (int m = 1; m <= 9; ++m)
        EXPECT_TRUE(runsToCompletion(kind, m, mix))
            << scheduleName(kind) << " m=" << m << " stages=" << mix.size();
}

TEST(Schedule, ParsesNamesAndBubble) {
  EXPECT_EQ(llvm::cantFail(parseSchedule("1f1b")), ScheduleKind::OneFOneB);
  auto bad = parseSchedule("zigzag");
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "unknown schedule 'zigzag' (expected gpipe or 1f1b)");
  EXPECT_DOUBLE_EQ(idealBubbleFraction(4, 8), 3.0 / 11.0);
}

} // namespace
