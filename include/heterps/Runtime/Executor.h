//===- Executor.h - sequential execution of a plan --------------*- C++ -*-===//
//
// Runs a plan's ops one after the other in the calling thread: the building
// block of the pipelined executor (one per stage worker). Creating an
// executor loads the weights, applies load-time fusions and creates every
// kernel, so unsupported ops and bad attributes fail before the first run.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_EXECUTOR_H
#define HETERPS_RUNTIME_EXECUTOR_H

#include "heterps/Runtime/CPU/CPUBackend.h"
#include "heterps/Runtime/Plan.pb.h"
#include "heterps/Runtime/Weights.h"

#include <map>
#include <memory>
#include <optional>

namespace heterps::runtime {

struct ExecutorOptions {
  /// Threads per kernel on the CPU backend (0: OpenMP's default).
  int numThreads = 0;
  /// Device type names that are this machine's CPU, besides "" and "cpu".
  std::vector<std::string> cpuDeviceTypes;
  /// Run ops placed on device types this machine lacks on the CPU backend
  /// (otherwise they are an error).
  bool emulateMissingDevices = false;
  /// Fuse residual Adds and activations into the Conv feeding them (batch
  /// norms after a Conv with constant weights are always folded).
  bool fuse = true;
  /// CPUBackendOptions::autotune.
  bool autotune = true;
  /// Time every op of every run (opSeconds()).
  bool timeOps = false;
  /// Pass NaN on through Relu, Clip and MaxPool as ONNX does. oneDNN's
  /// kernels (and the activations fused into a Conv) turn NaN into 0; a run
  /// whose inputs or weights hold NaN or infinities therefore goes through
  /// an unfused copy of the plan whose kernels put the NaNs back. Other runs
  /// pay a scan of their inputs.
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
  /// Device types whose ops run emulated on the CPU.
  const std::vector<std::string> &emulatedDevices() const { return emulated; }
  PrimitiveCacheStats cacheStats() const { return cpu.cacheStats(); }
  /// With ExecutorOptions::timeOps: seconds each op of plan() took, summed
  /// over the runs so far.
  const std::vector<double> &opSeconds() const { return opTimes; }

private:
  /// `passNaN`: the executor propagateNaN sends non-finite runs to.
  Executor(plan::Plan plan, WeightMap weights, ExecutorOptions options,
           bool passNaN = false);
  llvm::Error prepare();
  void planInPlaceJoins();
  llvm::Error checkInput(int index, const Tensor &t) const;
  llvm::Error checkOutput(int op, const Tensor &t, int32_t value) const;

  plan::Plan program;
  ExecutorOptions options;
  CPUBackend cpu;
  /// Per value: the weight tensor, or null.
  std::vector<Tensor> constants;
  std::vector<std::unique_ptr<Kernel>> kernels;
  /// Per op: values whose last use it is.
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
  std::vector<std::string> emulated;
  std::vector<double> opTimes;

  /// ExecutorOptions::propagateNaN: the plan and weights as given (none when
  /// they can be read from the plan's model again), whether a weight is not
  /// finite, and the unfused executor made from them on the first run that
  /// needs it.
  plan::Plan source;
  std::optional<WeightMap> sourceWeights;
  bool nonFiniteWeights = false;
  std::unique_ptr<Executor> nanPassing;
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_EXECUTOR_H
