//===- CommandStepOracleTest.cpp - step times from a training command -----===//
//
// The oracle hands a command the candidate's placement, reads the step from
// its report, and refuses a report of other stages, a failed run and one
// that runs too long. The command here is a shell script standing in for
// heterps-run.
//
//===----------------------------------------------------------------------===//

#include "TwoCpuTypes.h"

#include "heterps/Measure/CommandStepOracle.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace heterps;
using heterps::testutil::twoCpuTypes;
using planner::Stage;

namespace {

std::vector<planner::Layer> threeLayers() {
  std::vector<planner::Layer> layers(3);
  for (int i = 0; i < 3; ++i)
    layers[i].name = "layer" + std::to_string(i);
  return layers;
}

/// A script run as `sh SCRIPT --placement=P --report=R`: `body` sees the two
/// paths as $placement and $report.
std::vector<std::string> script(const std::string &name,
                                const std::string &body) {
  std::string path = testing::TempDir() + name;
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  EXPECT_FALSE(ec) << ec.message();
  os << "placement=${1#--placement=}\nreport=${2#--report=}\n" << body << "\n";
  return {"/bin/sh", path};
}

/// A report of a two-stage run with `replicas` on its second stage.
std::string report(int replicas) {
  return "echo '{\"pipeline\": {\"step_s\": 0.25}, \"plan\": {\"stages\": "
         "[{\"replicas\": 1}, {\"replicas\": " +
         std::to_string(replicas) + "}]}}' > \"$report\"";
}

std::unique_ptr<measure::CommandStepOracle>
makeOracle(std::vector<std::string> command, int timeout = 60) {
  auto oracle = measure::CommandStepOracle::create(
      std::move(command), threeLayers(), twoCpuTypes(), "measured by a script",
      timeout);
  EXPECT_TRUE(bool(oracle)) << llvm::toString(oracle.takeError());
  return oracle ? std::move(*oracle) : nullptr;
}

TEST(CommandStepOracle, HandsOverThePlacementAndReadsTheStep) {
  std::string seen = testing::TempDir() + "command-oracle-placement.json";
  llvm::sys::fs::remove(seen);
  auto oracle = makeOracle(script(
      "command-oracle-ok.sh", "cp \"$placement\" " + seen + "\n" + report(2)));
  ASSERT_TRUE(oracle);
  EXPECT_EQ(oracle->name(), "measured by a script");
  std::vector<Stage> stages = {{1, {0}, 1}, {0, {1, 2}, 2}};
  llvm::Expected<double> step = oracle->stepSeconds(stages);
  ASSERT_TRUE(bool(step)) << llvm::toString(step.takeError());
  EXPECT_DOUBLE_EQ(*step, 0.25);
  auto text = llvm::MemoryBuffer::getFile(seen);
  ASSERT_TRUE(bool(text));
  auto placement = llvm::json::parse((*text)->getBuffer());
  ASSERT_TRUE(bool(placement)) << llvm::toString(placement.takeError());
  EXPECT_EQ(*placement,
            llvm::json::Value(llvm::json::Object{
                {"layer0", "b"}, {"layer1", "a"}, {"layer2", "a"}}));
}

TEST(CommandStepOracle, RefusesAReportOfOtherStages) {
  auto oracle = makeOracle(script("command-oracle-other.sh", report(3)));
  ASSERT_TRUE(oracle);
  llvm::Expected<double> replicas =
      oracle->stepSeconds({{1, {0}, 1}, {0, {1, 2}, 2}});
  ASSERT_FALSE(bool(replicas));
  EXPECT_EQ(llvm::toString(replicas.takeError()),
            "the measured run gave stage 1 3 replicas, the plan 2");
  llvm::Expected<double> count = oracle->stepSeconds({{0, {0, 1, 2}, 1}});
  ASSERT_FALSE(bool(count));
  EXPECT_EQ(llvm::toString(count.takeError()),
            "the measured run formed 2 stages, the plan has 1");
}

TEST(CommandStepOracle, SaysWhyARunFailed) {
  auto failing = makeOracle(script(
      "command-oracle-fails.sh",
      "echo 'progress'; echo 'tool: error: out of memory' >&2; echo done; "
      "exit 1"));
  ASSERT_TRUE(failing);
  llvm::Expected<double> step = failing->stepSeconds({{0, {0, 1, 2}, 1}});
  ASSERT_FALSE(bool(step));
  EXPECT_EQ(llvm::toString(step.takeError()),
            "the measured run failed: tool: error: out of memory");

  auto silent = makeOracle(script("command-oracle-silent.sh", "exit 0"));
  ASSERT_TRUE(silent);
  step = silent->stepSeconds({{0, {0, 1, 2}, 1}});
  ASSERT_FALSE(bool(step));
  EXPECT_TRUE(llvm::StringRef(llvm::toString(step.takeError()))
                  .starts_with("the measured run wrote no report"));

  auto slow = makeOracle(script("command-oracle-slow.sh", "exec sleep 30"), 1);
  ASSERT_TRUE(slow);
  step = slow->stepSeconds({{0, {0, 1, 2}, 1}});
  ASSERT_FALSE(bool(step));
  EXPECT_EQ(llvm::toString(step.takeError()), "the measured run took over 1 s");
}

TEST(CommandStepOracle, NeedsACommandAndATimeout) {
  auto none =
      measure::CommandStepOracle::create({}, threeLayers(), twoCpuTypes(), "x");
  ASSERT_FALSE(bool(none));
  EXPECT_EQ(llvm::toString(none.takeError()),
            "measuring by a command needs the command");
  auto zero = measure::CommandStepOracle::create({"/bin/true"}, threeLayers(),
                                                 twoCpuTypes(), "x", 0);
  ASSERT_FALSE(bool(zero));
  EXPECT_EQ(llvm::toString(zero.takeError()),
            "measuring by a command needs a positive timeout");
}

} // namespace
