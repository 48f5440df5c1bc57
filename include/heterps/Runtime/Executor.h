//===- Executor.h - sequential execution of a plan --------------*- C++ -*-===//
//
// Runs a plan's ops one after the other in the calling thread: the building
// block of the pipelined executor (one per stage worker). Creating an
// executor loads the weights, picks a backend per op from its device's kind
// (Devices.h), applies each backend's plan rewrites and creates every
// kernel, so unsupported ops and bad attributes fail before the first run.
// Where a value crosses from one device's memory to another's, the
// executor copies it (weights once, when created; activations on every
// run); inputs and outputs are host tensors.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_EXECUTOR_H
#define HETERPS_RUNTIME_EXECUTOR_H

#include "heterps/Runtime/Devices.h"
#include "heterps/Runtime/Plan.pb.h"

#include <map>
#include <memory>
#include <optional>

namespace heterps::runtime {

struct ExecutorOptions {
  /// Threads per kernel (0: the device's default).
  int numThreads = 0;
  /// Device type names that are this machine's CPU, besides "" and "cpu",
  /// for plans that do not give kinds.
  std::vector<std::string> cpuDeviceTypes;
  /// Run ops placed on device kinds no backend serves on the emulated
  /// device (otherwise they are an error).
  bool emulateMissingDevices = false;
  /// The backends' optional rewrites (BackendOptions::fuse).
  bool fuse = true;
  /// Compute the ops whose inputs are all weights once, when the executor
  /// is made, rather than in every run (foldConstantOps).
  bool foldConstants = true;
  /// BackendOptions::autotune.
  bool autotune = true;
  /// Time every op of every run (opSeconds()).
  bool timeOps = false;
  /// Pass NaN on through Relu, Clip and MaxPool as ONNX does. Device
  /// kernels (and activations fused into a Conv) may turn NaN into 0; a
  /// run whose inputs or weights hold NaN or infinities therefore goes
  /// through an unfused copy of the plan on backends made with
  /// BackendOptions::propagateNaN. Other runs pay a scan of their inputs.
  bool propagateNaN = true;
};

class Executor {
public:
  /// Loads the plan's weights (see loadWeights) and prepares it.
  static llvm::Expected<std::unique_ptr<Executor>>
  create(const plan::Plan &plan, ExecutorOptions options = {});
  /// Prepares `plan` with weights supplied by the caller.
  static llvm::Expected<std::unique_ptr<Executor>>
  create(const plan::Plan &plan, WeightMap weights,
         ExecutorOptions options = {});
  ~Executor();

  /// Runs the plan on `inputs`, given in graph-input order; returns the graph
  /// outputs in order, as plain tensors. Input types are checked against the
  /// plan (dimensions of -1 match any size).
  llvm::Expected<std::vector<Tensor>> run(llvm::ArrayRef<Tensor> inputs);
  /// The same with inputs by name; every graph input must be given.
  llvm::Expected<std::vector<Tensor>>
  run(const std::map<std::string, Tensor> &inputs);

  /// The plan as executed (after fusion).
  const plan::Plan &plan() const { return program; }
  /// Device types whose ops run on the emulated device.
  const std::vector<std::string> &emulatedDevices() const {
    return devices->emulated();
  }
  /// "<device type>: <op type>" for ops whose device's backend has no
  /// kernel for them, which run on the CPU instead (Devices::of).
  std::vector<std::string> fallbacks() const { return devices->fallbacks(); }
  /// The name of the backend that runs op `i` of plan() ("cpu", "cuda:0").
  std::string backendOf(int i) const {
    return devices->of(program.ops(i)).name().str();
  }
  /// The backends' counter `name` (Backend::counters), summed.
  int64_t counter(llvm::StringRef name) const;
  /// Transfers between memory spaces per run (activations; weights moved
  /// once are not counted).
  int transfersPerRun() const;
  /// With ExecutorOptions::timeOps: seconds each op of plan() took, summed
  /// over the runs so far.
  const std::vector<double> &opSeconds() const { return opTimes; }

private:
  /// `devices` serve the plan, whose rewrites have not run yet.
  Executor(plan::Plan plan, WeightMap weights, ExecutorOptions options,
           std::unique_ptr<Devices> devices);
  /// Creates and prepares an executor; `passNaN`: the one propagateNaN
  /// sends non-finite runs to.
  static llvm::Expected<std::unique_ptr<Executor>> make(const plan::Plan &plan,
                                                        WeightMap weights,
                                                        ExecutorOptions options,
                                                        bool passNaN);
  llvm::Error prepare();
  llvm::Error placeValues();
  void planInPlaceJoins();
  llvm::Error checkInput(int index, const Tensor &t) const;
  /// Inputs whose dimensions share a name (Binding::dim_names) agree.
  llvm::Error checkNamedDims(llvm::ArrayRef<Tensor> inputs) const;
  llvm::Error checkOutput(int op, const Tensor &t, int32_t value) const;

  plan::Plan program;
  ExecutorOptions options;
  std::unique_ptr<Devices> devices;
  /// Per slot: the weight tensor, or null. Slots are the plan's values,
  /// then copies of values in other memory spaces.
  std::vector<Tensor> constants;
  /// Per op: the slots it reads (a value, or its copy in the op's memory).
  std::vector<std::vector<int32_t>> args;
  /// A value copied into another memory space before an op.
  struct Copy {
    int32_t from, to;
    MemorySpace *space;
  };
  /// Per op: the copies it needs first.
  std::vector<std::vector<Copy>> copiesBefore;
  /// Graph outputs that a run copies back from a device.
  int outputsOnDevice = 0;
  std::vector<std::unique_ptr<Kernel>> kernels;
  /// Per op: slots whose last use it is.
  std::vector<std::vector<int32_t>> releaseAfter;
  /// A join (Concat) some of whose inputs may be computed in its output: the
  /// op and the input positions whose producers fill offered outputs.
  struct InPlaceJoin {
    int op;
    std::vector<int> inputs;
  };
  /// Per op: the joins whose destinations are asked for before it runs
  /// (it is the first of their producers).
  std::vector<std::vector<InPlaceJoin>> joinsBefore;
  std::vector<double> opTimes;

  /// ExecutorOptions::propagateNaN: the plan and weights as given (none when
  /// they can be read from the plan's model again), whether a weight that an
  /// op computes with is not finite, and the unfused executor made from them on
  /// the first run that needs it.
  plan::Plan source;
  std::optional<WeightMap> sourceWeights;
  bool nonFiniteWeights = false;
  std::unique_ptr<Executor> nanPassing;
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_EXECUTOR_H
