//===- MailboxTest.cpp - the in-process stage exchange --------------------===//

#include "heterps/Runtime/PipelineTrain/StageExchange.h"

#include "gtest/gtest.h"

#include <chrono>
#include <thread>

using namespace heterps::runtime;
using namespace heterps::runtime::pipeline;

namespace {

constexpr auto F = StageExchange::Forward;

std::vector<Tensor> valuesOf(float x) { return {Tensor::fromFloats({1}, {x})}; }

float valueOf(const std::optional<std::vector<Tensor>> &values) {
  return values ? values->at(0).data<float>()[0] : -1.0f;
}

/// The value in the current step's slot, or -1 if none comes within a
/// tenth of a second (an abort then ends the wait).
float takeOrNothing(Mailbox &box) {
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    box.abort();
  });
  float value = valueOf(box.take(StageExchange::Forward, 0, 0));
  aborter.join();
  return value;
}

TEST(Mailbox, ValuesOfALaterStepWaitForIt) {
  Mailbox box;
  box.begin(5);
  box.deliver(6, F, 0, 0, valuesOf(6));
  box.put(F, 0, 0, valuesOf(5));
  EXPECT_EQ(valueOf(box.take(F, 0, 0)), 5);
  box.begin(6);
  EXPECT_EQ(valueOf(box.take(F, 0, 0)), 6);
}

TEST(Mailbox, ValuesOfAnEarlierStepAreDropped) {
  Mailbox box;
  box.begin(5);
  box.deliver(4, F, 0, 0, valuesOf(4));
  box.begin(4);
  EXPECT_EQ(takeOrNothing(box), -1);
}

TEST(Mailbox, AbortWakesAWaitingTake) {
  Mailbox box;
  box.begin(1);
  EXPECT_EQ(takeOrNothing(box), -1);
  box.begin(2);
  box.put(F, 0, 0, valuesOf(2));
  EXPECT_EQ(valueOf(box.take(F, 0, 0)), 2);
}

// A job restored from a checkpoint runs its steps again: after clear(), a
// faster peer's values for the first of them (earlier than the step this
// process was at) may come before this process begins that step. They
// must be kept; dropped, the step would wait forever (the lit test
// Faults/shard-killed hung this way under load).
TEST(Mailbox, ClearedKeepsValuesOfAnyStepUntilTheNextBegin) {
  Mailbox box;
  box.begin(48);
  box.deliver(49, F, 0, 0, valuesOf(49));
  box.clear();
  box.deliver(41, F, 0, 0, valuesOf(41));
  box.begin(41);
  EXPECT_EQ(takeOrNothing(box), 41);
  // The value of the old step 49 was cleared with the rest.
  box.begin(49);
  EXPECT_EQ(takeOrNothing(box), -1);
}

} // namespace
