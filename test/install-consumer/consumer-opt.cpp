// An mlir-opt of another project, with HeterPS registered into it.
#include "heterps/InitAll.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::hps::registerAllDialects(registry);
  mlir::hps::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "HeterPS install consumer\n", registry));
}
