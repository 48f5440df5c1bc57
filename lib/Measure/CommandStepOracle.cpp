//===- CommandStepOracle.cpp - step times from a training command ---------===//
//
// See CommandStepOracle.h.
//
//===----------------------------------------------------------------------===//

#include "heterps/Measure/CommandStepOracle.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace heterps;
using namespace heterps::measure;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<std::unique_ptr<CommandStepOracle>> CommandStepOracle::create(
    std::vector<std::string> command, const std::vector<planner::Layer> &layers,
    const planner::ClusterSpec &spec, std::string name, int timeoutSeconds) {
  if (command.empty())
    return error("measuring by a command needs the command");
  if (timeoutSeconds < 1)
    return error("measuring by a command needs a positive timeout");
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("heterps-measure", dir))
    return error("cannot make a directory for the measured runs: " +
                 ec.message());
  std::unique_ptr<CommandStepOracle> oracle(new CommandStepOracle());
  oracle->command_ = std::move(command);
  for (const planner::Layer &l : layers)
    oracle->layerNames_.push_back(l.name);
  for (const planner::DeviceType &d : spec.deviceTypes)
    oracle->typeNames_.push_back(d.name);
  oracle->name_ = std::move(name);
  oracle->timeoutSeconds_ = timeoutSeconds;
  oracle->workDir_ = dir.str().str();
  return oracle;
}

CommandStepOracle::~CommandStepOracle() {
  llvm::sys::fs::remove_directories(workDir_);
}

/// The line of `log` that says what failed: its last "error:" line, or its
/// last line.
static std::string failureLine(const std::string &logPath) {
  auto log = llvm::MemoryBuffer::getFile(logPath);
  if (!log)
    return "no output";
  llvm::SmallVector<llvm::StringRef> lines;
  (*log)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef line : llvm::reverse(lines))
    if (line.contains("error:"))
      return line.trim().str();
  return lines.empty() ? "no output" : lines.back().trim().str();
}

llvm::Expected<double>
CommandStepOracle::stepSeconds(const std::vector<planner::Stage> &stages) {
  if (stages.empty())
    return error("a plan to measure needs at least one stage");
  std::string placementPath = workDir_ + "/placement.json";
  std::string reportPath = workDir_ + "/report.json";
  std::string logPath = workDir_ + "/output.txt";
  llvm::json::Object placement;
  for (const planner::Stage &s : stages)
    for (size_t l : s.layers)
      placement[layerNames_.at(l)] = typeNames_.at(s.deviceType);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(placementPath, ec);
    if (ec)
      return error(placementPath + ": " + ec.message());
    os << llvm::json::Value(std::move(placement));
  }
  llvm::sys::fs::remove(reportPath);

  std::vector<llvm::StringRef> args(command_.begin(), command_.end());
  std::string placementArg = "--placement=" + placementPath;
  std::string reportArg = "--report=" + reportPath;
  args.push_back(placementArg);
  args.push_back(reportArg);
  std::optional<llvm::StringRef> redirects[] = {
      llvm::StringRef(""), llvm::StringRef(logPath), llvm::StringRef(logPath)};
  std::string message;
  auto start = std::chrono::steady_clock::now();
  int status = llvm::sys::ExecuteAndWait(
      command_[0], args, std::nullopt, redirects, timeoutSeconds_, 0, &message);
  // -2 is a crash or the timeout's kill; -1 a program that did not start.
  if (status == -2 && std::chrono::steady_clock::now() - start >=
                          std::chrono::seconds(timeoutSeconds_))
    return error(
        llvm::formatv("the measured run took over {0} s", timeoutSeconds_));
  if (status != 0)
    return error("the measured run failed: " +
                 (status < 0 ? message : failureLine(logPath)));

  auto text = llvm::MemoryBuffer::getFile(reportPath);
  if (!text)
    return error("the measured run wrote no report: " +
                 text.getError().message());
  auto report = llvm::json::parse((*text)->getBuffer());
  if (!report)
    return error("the measured run's report: " +
                 llvm::toString(report.takeError()));
  const llvm::json::Object *root = report->getAsObject();
  const llvm::json::Object *pipeline =
      root ? root->getObject("pipeline") : nullptr;
  std::optional<double> step =
      pipeline ? pipeline->getNumber("step_s") : std::nullopt;
  if (!step)
    return error("the measured run's report has no pipeline.step_s");
  // The run provisioned the placement itself: it must have run these stages.
  const llvm::json::Object *plan = root->getObject("plan");
  const llvm::json::Array *ran = plan ? plan->getArray("stages") : nullptr;
  if (!ran || ran->size() != stages.size())
    return error(llvm::formatv("the measured run formed {0} stages, the "
                               "plan has {1}",
                               ran ? ran->size() : 0, stages.size()));
  for (auto [s, stage] : llvm::enumerate(*ran)) {
    const llvm::json::Object *o = stage.getAsObject();
    std::optional<int64_t> replicas =
        o ? o->getInteger("replicas") : std::nullopt;
    if (!replicas || *replicas != static_cast<int64_t>(stages[s].replicas))
      return error(llvm::formatv("the measured run gave stage {0} {1} "
                                 "replicas, the plan {2}",
                                 s, replicas.value_or(0), stages[s].replicas));
  }
  return *step;
}
