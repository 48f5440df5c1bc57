//===- SaveModel.cpp - trained weights back into an ONNX model ------------===//

#include "heterps/Runtime/Train/SaveModel.h"

#include "heterps/Runtime/ONNXTensor.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace heterps::runtime;

static llvm::Error saveError(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

/// A new temporary file next to `path` (same directory, so the rename
/// that replaces `path` is atomic).
static llvm::Error createTempNextTo(llvm::StringRef path,
                                    llvm::SmallString<256> &temp) {
  if (std::error_code ec =
          llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%", temp))
    return saveError(path +
                     ": cannot create a file next to it: " + ec.message());
  return llvm::Error::success();
}

llvm::Error train::checkCanSave(llvm::StringRef path) {
  llvm::SmallString<256> temp;
  if (llvm::Error e = createTempNextTo(path, temp))
    return e;
  llvm::sys::fs::remove(temp);
  return llvm::Error::success();
}

llvm::Error train::saveTrainedModel(const plan::Plan &plan,
                                    const WeightMap &weights,
                                    llvm::StringRef path) {
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

  llvm::SmallString<256> temp;
  if (llvm::Error e = createTempNextTo(path, temp))
    return e;
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(temp, ec);
    std::string bytes;
    if (!ec && model.SerializeToString(&bytes))
      os << bytes;
    os.close();
    if (ec || os.has_error()) {
      llvm::sys::fs::remove(temp);
      return saveError(path +
                       ": write failed: " + (ec ? ec : os.error()).message());
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
    llvm::sys::fs::remove(temp);
    return saveError(path + ": " + ec.message());
  }
  return llvm::Error::success();
}
