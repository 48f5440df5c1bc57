//===- SparseGather.cpp - embedding lookups from a sparse PS table --------===//

#include "SparseGather.h"

#include "llvm/ADT/Twine.h"

#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::pipeline;

void SparseGradSum::clear() {
  slotOf.clear();
  idList.clear();
  values.clear();
}

void SparseGradSum::add(int64_t id, const float *grad) {
  auto [it, inserted] =
      slotOf.try_emplace(id, static_cast<int64_t>(idList.size()));
  if (inserted) {
    idList.push_back(id);
    values.resize(values.size() + dim, 0.f);
  }
  float *row = values.data() + it->second * dim;
  for (int64_t j = 0; j < dim; ++j)
    row[j] += grad[j];
}

void SparseGradSum::scale(float factor) {
  for (float &v : values)
    v *= factor;
}

Tensor SparseGradSum::rows() const {
  Tensor t(DType::F32, {static_cast<int64_t>(idList.size()), dim});
  if (!values.empty())
    std::memcpy(t.rawData(), values.data(), values.size() * sizeof(float));
  return t;
}

llvm::Error SparseGatherKernel::forward(llvm::ArrayRef<const Tensor *> inputs,
                                        Tensor &output) {
  const Tensor &indices = *inputs[1];
  if (indices.dtype() != DType::I64)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "Gather indices must be i64, not " +
                                       indices.typeString());
  const int64_t *ids = indices.data<int64_t>();
  int64_t count = indices.numElements();
  std::unordered_map<int64_t, int64_t> seen;
  distinct.clear();
  positionOf.resize(count);
  for (int64_t k = 0; k < count; ++k) {
    auto [it, inserted] =
        seen.try_emplace(ids[k], static_cast<int64_t>(distinct.size()));
    if (inserted)
      distinct.push_back(ids[k]);
    positionOf[k] = it->second;
  }
  Tensor rows(DType::F32, {static_cast<int64_t>(distinct.size()), dim});
  if (llvm::Error e = client.pullSparseNow(table, distinct, rows, version))
    return e;
  Shape shape = indices.shape();
  shape.push_back(dim);
  Tensor out(DType::F32, shape);
  const float *src = rows.data<float>();
  float *dst = out.data<float>();
  for (int64_t k = 0; k < count; ++k)
    std::memcpy(dst + k * dim, src + positionOf[k] * dim, dim * sizeof(float));
  output = std::move(out);
  return llvm::Error::success();
}

llvm::Error SparseGatherKernel::backward(llvm::ArrayRef<const Tensor *>,
                                         const Tensor &, const Tensor &dOutput,
                                         llvm::ArrayRef<bool> needGrad,
                                         llvm::MutableArrayRef<Tensor>) {
  if (!needGrad[0])
    return llvm::Error::success();
  llvm::Expected<Tensor> dy = dOutput.toPlain();
  if (!dy)
    return dy.takeError();
  // Summed per distinct id first: one map update per id, not per index.
  std::vector<float> sums(distinct.size() * dim, 0.f);
  const float *g = dy->data<float>();
  for (size_t k = 0; k < positionOf.size(); ++k) {
    float *row = sums.data() + positionOf[k] * dim;
    for (int64_t j = 0; j < dim; ++j)
      row[j] += g[k * dim + j];
  }
  for (size_t i = 0; i < distinct.size(); ++i)
    grads.add(distinct[i], sums.data() + i * dim);
  return llvm::Error::success();
}
