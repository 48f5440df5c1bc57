//===- Passes.h - HeterPS passes --------------------------------*- C++ -*-===//

#ifndef HETERPS_TRANSFORMS_PASSES_H
#define HETERPS_TRANSFORMS_PASSES_H

#include "heterps/Dialect/HPS/HPS.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

#include <functional>
#include <memory>

namespace heterps::planner {
class PlacementProblem;
class StepOracle;
} // namespace heterps::planner

namespace mlir::hps {

/// How a reporting pass writes its output.
enum class OutputFormat { Text, Json, Html };

#define GEN_PASS_DECL
#include "heterps/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "heterps/Transforms/Passes.h.inc"

/// Makes the oracle that times plans for hps-place strategy=tapp, for the
/// placement problem of the module being placed.
using StepOracleFactory =
    std::function<llvm::Expected<std::unique_ptr<heterps::planner::StepOracle>>(
        const heterps::planner::PlacementProblem &)>;

/// hps-place whose strategy=tapp times plans with `makeOracle`'s oracle
/// instead of the cost model (heterps-run measures them on this machine).
std::unique_ptr<Pass> createPlace(PlaceOptions options,
                                  StepOracleFactory makeOracle);

/// Writes each layer's kind, FLOPs, parameter and activation bytes as
/// hps-layer-stats does (text, or JSON).
void writeLayerStats(func::FuncOp func, OutputFormat format, raw_ostream &os);

/// Writes the plan recorded in a placed, staged and provisioned module as
/// hps-report does (errors are emitted on the module).
LogicalResult writePlanReport(ModuleOp module, OutputFormat format,
                              raw_ostream &os);

/// The options of the `hps-plan` pipeline: those of its passes that a
/// user sets to plan a model.
struct PlanPipelineOptions : public PassPipelineOptions<PlanPipelineOptions> {
  Option<std::string> cluster{*this, "cluster",
                              llvm::cl::desc("Cluster spec (YAML)")};
  Option<std::string> profile{
      *this, "profile", llvm::cl::desc("Profile of measured costs (JSON)")};
  Option<std::string> strategy{
      *this, "strategy",
      llvm::cl::desc("Placement strategy (hps-place), default rl"),
      llvm::cl::init("rl")};
  Option<std::string> placement{
      *this, "placement", llvm::cl::desc("Placement file of strategy=manual")};
  Option<double> throughputLimit{
      *this, "throughput-limit",
      llvm::cl::desc("Throughput floor in samples/s (default: the job's)"),
      llvm::cl::init(-1)};
  Option<uint64_t> seed{*this, "seed", llvm::cl::desc("Search seed"),
                        llvm::cl::init(1)};
  Option<double> timeBudget{*this, "time-budget",
                            llvm::cl::desc("rl: seconds of search"),
                            llvm::cl::init(10)};
  Option<bool> certify{*this, "certify",
                       llvm::cl::desc("Also find the optimum and the gap"),
                       llvm::cl::init(false)};
};

/// hps-annotate-costs, hps-place, hps-form-stages and hps-provision with
/// `options`: a model in, a plan out.
void buildPlanPipeline(OpPassManager &pm, const PlanPipelineOptions &options);

/// Registers buildPlanPipeline as `hps-plan` (heterps-opt --hps-plan=...).
void registerPlanPipeline();

} // namespace mlir::hps

#endif // HETERPS_TRANSFORMS_PASSES_H
