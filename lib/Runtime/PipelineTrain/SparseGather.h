//===- SparseGather.h - lookups from a sparse PS table ----------*- C++ -*-===//
//
// Internal to the pipeline trainer. A Gather whose table is a sparse
// parameter-server table never sees the table: its forward pulls the rows
// the micro-batch's ids touch (each distinct id once) and copies them into
// place; its backward sums the output gradient per distinct id into the
// replica's SparseGradSum, which the replica pushes at the end of the step.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_PIPELINETRAIN_SPARSEGATHER_H
#define HETERPS_LIB_RUNTIME_PIPELINETRAIN_SPARSEGATHER_H

#include "heterps/Runtime/PS/Client.h"
#include "heterps/Runtime/Train/TrainKernel.h"

#include <unordered_map>

namespace heterps::runtime::pipeline {

/// A replica's gradient of one sparse table over a step: a row per id.
class SparseGradSum {
public:
  explicit SparseGradSum(int64_t dim) : dim(dim) {}
  void clear();
  /// Adds `grad` (dim floats) to row `id`.
  void add(int64_t id, const float *grad);
  /// Multiplies every row by `factor`.
  void scale(float factor);
  const std::vector<int64_t> &ids() const { return idList; }
  /// [ids().size(), dim], row k for ids()[k].
  Tensor rows() const;

private:
  int64_t dim;
  std::unordered_map<int64_t, int64_t> slotOf;
  std::vector<int64_t> idList;
  std::vector<float> values;
};

class SparseGatherKernel : public train::TrainKernel {
public:
  /// `version` is read at every forward: the table version to pull (BSP).
  SparseGatherKernel(ps::PSClient &client, std::string table, int64_t dim,
                     SparseGradSum &grads, const int64_t &version)
      : client(client), table(std::move(table)), dim(dim), grads(grads),
        version(version) {}

  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override;
  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs,
                       const Tensor &output, const Tensor &dOutput,
                       llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override;

private:
  ps::PSClient &client;
  std::string table;
  int64_t dim;
  SparseGradSum &grads;
  const int64_t &version;
  /// The last forward's distinct ids, and per index its position in them.
  std::vector<int64_t> distinct;
  std::vector<int64_t> positionOf;
};

} // namespace heterps::runtime::pipeline

#endif // HETERPS_LIB_RUNTIME_PIPELINETRAIN_SPARSEGATHER_H
