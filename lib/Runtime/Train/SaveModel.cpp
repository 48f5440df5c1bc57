//===- SaveModel.cpp - trained weights back into an ONNX model ------------===//

#include "heterps/Runtime/Train/SaveModel.h"

#include "heterps/Runtime/AtomicFile.h"
#include "heterps/Runtime/ONNXTensor.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace heterps::runtime;

static llvm::Error saveError(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

llvm::Error train::saveTrainedModel(const plan::Plan &plan,
                                    const WeightMap &weights,
                                    llvm::StringRef path) {
  // A model of NaN weights gives the same output for every input.
  if (llvm::Error e = checkFiniteWeights(plan, weights))
    return saveError(path + ": not written: " + llvm::toString(std::move(e)));
  const std::string &source = plan.model_path();
  auto buffer = llvm::MemoryBuffer::getFile(source, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return saveError(source + ": " + buffer.getError().message());
  onnx::ModelProto model;
  if (!model.ParseFromArray((*buffer)->getBufferStart(),
                            static_cast<int>((*buffer)->getBufferSize())))
    return saveError(source + ": not an ONNX model");

  llvm::StringMap<onnx::TensorProto *> byName;
  onnx::GraphProto &graph = *model.mutable_graph();
  for (onnx::TensorProto &t : *graph.mutable_initializer())
    byName[t.name()] = &t;
  for (onnx::NodeProto &node : *graph.mutable_node())
    if (node.op_type() == "Constant" && node.output_size() == 1)
      for (onnx::AttributeProto &a : *node.mutable_attribute())
        if (a.name() == "value" && a.has_t())
          byName[node.output(0)] = a.mutable_t();
  for (const plan::Weight &w : plan.weights()) {
    if (w.source_case() != plan::Weight::kInitializer)
      continue;
    auto slot = byName.find(w.initializer());
    auto value = weights.find(w.value());
    if (slot == byName.end() || value == weights.end())
      continue;
    auto proto = tensorToProto(value->second, w.initializer());
    if (!proto)
      return proto.takeError();
    // Inline data replaces any external data reference.
    *slot->second = std::move(*proto);
  }

  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return saveError(path + ": cannot serialise the model");
  return writeFileAtomically(path, [&](llvm::raw_ostream &os) {
    os << bytes;
    return llvm::Error::success();
  });
}
