//===- PlanView.h - a recorded plan with its figures ------------*- C++ -*-===//
//
// What hps-report shows, in every format: the plan read back from the IR
// and evaluated with the HeterPS formulas.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_TRANSFORMS_PLANVIEW_H
#define HETERPS_LIB_TRANSFORMS_PLANVIEW_H

#include "heterps/Planner/ClusterSpec.h"
#include "heterps/Planner/CostModel.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::hps {

struct PlanView {
  heterps::planner::ClusterSpec spec;
  /// The model file's name (hps.source), or "model".
  std::string model;
  DictionaryAttr search; // hps.search, when a searching strategy placed it
  std::vector<heterps::planner::Layer> layers;
  std::vector<heterps::planner::Stage> stages;
  heterps::planner::PlanFigures figures;
  /// The floor the plan was provisioned for, else the job's.
  double limit;
  bool feasible;
};

/// The HTML page of pictures (ReportHtml.cpp).
void printHtml(llvm::raw_ostream &os, const PlanView &view);

} // namespace mlir::hps

#endif // HETERPS_LIB_TRANSFORMS_PLANVIEW_H
