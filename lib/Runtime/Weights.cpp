//===- Weights.cpp - the constant tensors of a plan -----------------------===//

#include "heterps/Runtime/Weights.h"
#include "heterps/Runtime/NonFinite.h"
#include "heterps/Runtime/Plan.h"

#include <cmath>

#include "heterps/Runtime/ONNXTensor.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>

using namespace heterps::runtime;

static llvm::Error weightError(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

namespace {
/// The model's named constant tensors: initializers and Constant outputs.
struct ModelConstants {
  onnx::ModelProto model;
  llvm::StringMap<const onnx::TensorProto *> byName;
};
} // namespace

static llvm::Error readModel(llvm::StringRef path, ModelConstants &out) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return weightError(path +
                       ": cannot read model: " + buffer.getError().message());
  if (!out.model.ParseFromArray((*buffer)->getBufferStart(),
                                static_cast<int>((*buffer)->getBufferSize())))
    return weightError(path + ": not an ONNX model (protobuf parse failed)");
  const onnx::GraphProto &graph = out.model.graph();
  for (const onnx::TensorProto &t : graph.initializer())
    out.byName[t.name()] = &t;
  for (const onnx::NodeProto &node : graph.node()) {
    if (node.op_type() != "Constant" || node.output_size() != 1)
      continue;
    for (const onnx::AttributeProto &a : node.attribute())
      if (a.name() == "value" && a.has_t())
        out.byName[node.output(0)] = &a.t();
  }
  return llvm::Error::success();
}

static bool sameType(const Tensor &t, const plan::Value &v) {
  DType expected = dtypeOf(v);
  return t.dtype() == expected &&
         llvm::ArrayRef<int64_t>(t.shape()) ==
             llvm::ArrayRef<int64_t>(v.dims().data(), v.dims_size());
}

llvm::Expected<WeightMap>
heterps::runtime::loadWeights(const plan::Plan &plan,
                              llvm::function_ref<bool(int32_t)> skip) {
  WeightMap weights;
  ModelConstants constants;
  bool modelRead = false;
  llvm::StringRef modelDir = llvm::sys::path::parent_path(plan.model_path());
  for (const plan::Weight &w : plan.weights()) {
    if (skip && skip(w.value()))
      continue;
    const plan::Value &v = plan.values(w.value());
    Shape shape(v.dims().begin(), v.dims().end());
    DType dtype = dtypeOf(v);
    if (w.source_case() == plan::Weight::kRawData) {
      Tensor t(dtype, shape);
      std::memcpy(t.rawData(), w.raw_data().data(), w.raw_data().size());
      weights.emplace(w.value(), std::move(t));
      continue;
    }
    if (!modelRead) {
      if (llvm::Error e = readModel(plan.model_path(), constants))
        return e;
      modelRead = true;
    }
    auto it = constants.byName.find(w.initializer());
    if (it == constants.byName.end())
      return weightError(plan.model_path() + ": no initializer named '" +
                         w.initializer() + "'");
    llvm::Expected<Tensor> t = tensorFromProto(*it->second, modelDir);
    if (!t)
      return weightError(plan.model_path() + ": " +
                         llvm::toString(t.takeError()));
    if (!sameType(*t, v))
      return weightError(plan.model_path() + ": initializer '" +
                         w.initializer() + "' is " + t->typeString() +
                         ", but the plan expects " + dtypeName(dtype) +
                         shapeToString(shape));
    weights.emplace(w.value(), std::move(*t));
  }
  return weights;
}

llvm::Error heterps::runtime::checkFiniteWeights(const plan::Plan &plan,
                                                 const WeightMap &weights) {
  for (const auto &[v, t] : weights) {
    // A trainer's private copies (separateRunningStatistics) are not the
    // plan's.
    if (v >= plan.values_size() || t.dtype() != DType::F32 || !hasNonFinite(t))
      continue;
    llvm::Expected<Tensor> plain = t.toPlain();
    if (!plain)
      return plain.takeError();
    // A fill value (an attention mask's -inf) is a constant that training
    // never changes.
    if (isInfiniteFill(*plain))
      continue;
    const float *p = plain->data<float>();
    int64_t n = plain->numElements(), nan = 0, inf = 0;
    for (int64_t i = 0; i < n; ++i) {
      nan += std::isnan(p[i]);
      inf += std::isinf(p[i]);
    }
    if (nan + inf == 0)
      continue;
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "parameter '" + plan.values(v).name() + "' holds " +
            (nan ? llvm::Twine(nan) + " NaN" : llvm::Twine(inf) + " infinite") +
            " of its " + llvm::Twine(n) +
            " values: training diverged (a NaN or infinity in the data or "
            "an overflow in the model)");
  }
  return llvm::Error::success();
}
