//===- SparseRows.h - the stored rows of a sparse table ---------*- C++ -*-===//
//
// What a parameter-server sparse (embedding) table holds beyond its seeded
// initial values, as checkpoints save it and the server restores it.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_TRAIN_SPARSEROWS_H
#define HETERPS_RUNTIME_TRAIN_SPARSEROWS_H

#include "heterps/Runtime/Tensor.h"

#include <cstdint>
#include <vector>

namespace heterps::runtime::train {

/// The rows a sparse table stores: ids ascending, their values and Adagrad
/// accumulators ([n, dim]; no accumulators under SGD), and the table's
/// version.
struct SparseRows {
  std::vector<int64_t> ids;
  Tensor values, accumulators;
  int64_t version = 0;
};

} // namespace heterps::runtime::train

#endif // HETERPS_RUNTIME_TRAIN_SPARSEROWS_H
