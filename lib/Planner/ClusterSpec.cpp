//===- ClusterSpec.cpp - read and validate cluster specs ------------------===//

#include "heterps/Planner/ClusterSpec.h"

#include "heterps/Support/NestingDepth.h"
#include "heterps/Support/PrintableLine.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLTraits.h"

#include <cmath>
#include <optional>
#include <tuple>

using namespace heterps::planner;

namespace llvm::yaml {

/// After a syntax error YAML I/O still calls validate() but has no node left
/// to attach an error to (setError would crash); the syntax error itself is
/// what gets reported, so validation stays quiet then.
static bool noNodeToReport(IO &io) {
  return !static_cast<Input &>(io).getCurrentNode();
}

template <> struct MappingTraits<DeviceType> {
  static void mapping(IO &io, DeviceType &d) {
    io.mapRequired("name", d.name);
    io.mapRequired("kind", d.kind);
    io.mapRequired("price_per_hour", d.pricePerHour);
    io.mapRequired("max_count", d.maxCount);
    io.mapRequired("gflops", d.gflops);
    io.mapRequired("memory_bandwidth_gbs", d.memoryBandwidthGBs);
    io.mapRequired("network_bandwidth_gbs", d.networkBandwidthGBs);
    io.mapOptional("alpha", d.alpha, 0.95);
  }
  static std::string validate(IO &io, DeviceType &d) {
    if (noNodeToReport(io))
      return "";
    if (d.name.empty())
      return "device type 'name' must not be empty";
    if (d.kind != "cpu" && d.kind != "cuda")
      return "device type '" + d.name + "': 'kind' must be cpu or cuda, got '" +
             d.kind + "'";
    if (!(d.pricePerHour >= 0) || !std::isfinite(d.pricePerHour))
      return "device type '" + d.name +
             "': 'price_per_hour' must be a non-negative number";
    if (d.maxCount < 1)
      return "device type '" + d.name + "': 'max_count' must be at least 1";
    auto positive = [](double x) { return x > 0 && std::isfinite(x); };
    if (!positive(d.gflops) || !positive(d.memoryBandwidthGBs) ||
        !positive(d.networkBandwidthGBs))
      return "device type '" + d.name +
             "': 'gflops', "
             "'memory_bandwidth_gbs' and 'network_bandwidth_gbs' must be "
             "positive";
    if (!(d.alpha >= 0 && d.alpha <= 1))
      return "device type '" + d.name + "': 'alpha' must be in [0, 1]";
    return "";
  }
};

template <> struct ScalarEnumerationTraits<Step> {
  static void enumeration(IO &io, Step &step) {
    io.enumCase(step, "training", Step::Training);
    io.enumCase(step, "inference", Step::Inference);
  }
};

template <> struct MappingTraits<Job> {
  static void mapping(IO &io, Job &j) {
    io.mapRequired("batch_size", j.batchSize);
    io.mapRequired("samples_per_epoch", j.samplesPerEpoch);
    io.mapRequired("epochs", j.epochs);
    io.mapRequired("throughput_limit", j.throughputLimit);
    io.mapOptional("step", j.step, Step::Training);
  }
  static std::string validate(IO &io, Job &j) {
    if (noNodeToReport(io))
      return "";
    if (j.batchSize < 1 || j.samplesPerEpoch < 1 || j.epochs < 1)
      return "job: 'batch_size', 'samples_per_epoch' and 'epochs' must be "
             "at least 1";
    if (!(j.throughputLimit >= 0) || !std::isfinite(j.throughputLimit))
      return "job: 'throughput_limit' must be a non-negative number";
    return "";
  }
};

template <> struct MappingTraits<ClusterSpec> {
  static void mapping(IO &io, ClusterSpec &s) {
    io.mapRequired("device_types", s.deviceTypes);
    io.mapRequired("job", s.job);
  }
  static std::string validate(IO &io, ClusterSpec &s) {
    if (noNodeToReport(io))
      return "";
    if (s.deviceTypes.empty())
      return "'device_types' must list at least one device type";
    for (size_t i = 0; i < s.deviceTypes.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (s.deviceTypes[i].name == s.deviceTypes[j].name)
          return "device type '" + s.deviceTypes[i].name + "' is listed twice";
    return "";
  }
};

} // namespace llvm::yaml

LLVM_YAML_IS_SEQUENCE_VECTOR(DeviceType)

std::optional<size_t> ClusterSpec::find(const std::string &name) const {
  for (size_t i = 0; i < deviceTypes.size(); ++i)
    if (deviceTypes[i].name == name)
      return i;
  return std::nullopt;
}

/// Line and column of the first YAML alias ('*name' where a value starts)
/// in `yaml`, if any.
static std::optional<std::pair<int, int>> firstAlias(llvm::StringRef yaml) {
  int lineNo = 0;
  for (llvm::StringRef rest = yaml; !rest.empty();) {
    auto [line, next] = rest.split('\n');
    rest = next;
    ++lineNo;
    char previous = ' ';
    for (size_t i = 0; i < line.size(); previous = line[i++]) {
      if (line[i] == '#' && previous == ' ')
        break;
      if (line[i] == '*' && llvm::StringRef(" [{,").contains(previous))
        return std::pair(lineNo, static_cast<int>(i) + 1);
    }
  }
  return std::nullopt;
}

llvm::Expected<ClusterSpec>
heterps::planner::parseClusterSpec(llvm::StringRef yaml,
                                   llvm::StringRef filename) {
  // YAML I/O reports through a SourceMgr diagnostic: keep the first one as
  // "file:line:col: message".
  // YAML I/O cannot validate a document with no content (it has no node
  // to report against), so an empty spec is rejected here.
  llvm::SmallVector<llvm::StringRef> lines;
  yaml.split(lines, '\n');
  if (llvm::all_of(lines, [](llvm::StringRef line) {
        line = line.trim();
        return line.empty() || line.starts_with("#") || line == "---" ||
               line == "...";
      }))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   filename + ": empty cluster spec");
  if (llvm::Error e = heterps::checkNestingDepth(yaml, filename))
    return std::move(e);
  std::string firstError;
  auto handler = [](const llvm::SMDiagnostic &diag, void *context) {
    auto *out = static_cast<std::string *>(context);
    if (!out->empty())
      return;
    // YAML I/O has no node kind for an alias ("*name") and reports the
    // token after it; name the alias instead.
    int line = diag.getLineNo(), column = diag.getColumnNo() + 1;
    std::string message = diag.getMessage().str();
    if (message == "unknown node kind")
      if (std::optional<std::pair<int, int>> alias = firstAlias(
              diag.getSourceMgr()
                  ->getMemoryBuffer(diag.getSourceMgr()->getMainFileID())
                  ->getBuffer())) {
        std::tie(line, column) = *alias;
        message = "YAML aliases ('*name') are not supported; write the "
                  "value out in full";
      }
    *out = (llvm::Twine(diag.getFilename()) + ":" + llvm::Twine(line) + ":" +
            llvm::Twine(column) + ": " + message)
               .str();
  };
  auto buffer = llvm::MemoryBuffer::getMemBuffer(yaml, filename);
  llvm::yaml::Input input(buffer->getMemBufferRef(), nullptr, handler,
                          &firstError);
  ClusterSpec spec;
  input >> spec;
  if (input.error() || !firstError.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        heterps::printableLine(firstError.empty()
                                   ? (filename + ": invalid cluster spec").str()
                                   : firstError));
  return spec;
}

llvm::Expected<ClusterSpec>
heterps::planner::loadClusterSpec(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "%s: cannot open: %s",
                                   path.str().c_str(),
                                   buffer.getError().message().c_str());
  return parseClusterSpec((*buffer)->getBuffer(), path);
}

llvm::StringRef heterps::planner::stepName(Step step) {
  return step == Step::Training ? "training" : "inference";
}

std::optional<Step> heterps::planner::parseStep(llvm::StringRef name) {
  if (name == "training")
    return Step::Training;
  if (name == "inference")
    return Step::Inference;
  return std::nullopt;
}
