//===- TensorWire.cpp - tensors in and out of messages --------------------===//

#include "TensorWire.h"

#include "heterps/Support/PrintableLine.h"

#include "llvm/ADT/Twine.h"

#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::distributed;

/// Messages echo what peers sent: one printable line.
static llvm::Error wireError(const llvm::Twine &message) {
  return heterps::printableError(message);
}

llvm::Error distributed::toWire(const Tensor &t, TensorData &out) {
  out.Clear();
  if (t.isNull()) {
    out.set_null(true);
    return llvm::Error::success();
  }
  if (!t.onHost())
    return wireError("a tensor in " + t.space().name() +
                     " cannot be sent; it must be on the host");
  llvm::Expected<Tensor> plain = t.toPlain();
  if (!plain)
    return plain.takeError();
  out.set_dtype(static_cast<int32_t>(plain->dtype()));
  for (int64_t d : plain->shape())
    out.add_dims(d);
  out.set_data(static_cast<const char *>(plain->rawData()), plain->bytes());
  return llvm::Error::success();
}

llvm::Expected<Tensor> distributed::fromWire(const TensorData &in) {
  if (in.null())
    return Tensor();
  DType type = static_cast<DType>(in.dtype());
  if (type != DType::F32 && type != DType::I64)
    return wireError("a tensor of unknown type " + llvm::Twine(in.dtype()));
  Shape shape;
  uint64_t elements = 1;
  for (int64_t d : in.dims()) {
    if (d < 0 || (d > 0 && elements > (uint64_t(1) << 40) / uint64_t(d)))
      return wireError("a tensor with dimension " + llvm::Twine(d));
    elements *= uint64_t(d);
    shape.push_back(d);
  }
  if (elements * dtypeSize(type) != in.data().size())
    return wireError("a tensor of " + llvm::Twine(elements) + " elements " +
                     "arrived with " + llvm::Twine(in.data().size()) +
                     " bytes");
  Tensor t(type, shape);
  if (!in.data().empty())
    std::memcpy(t.rawData(), in.data().data(), in.data().size());
  return t;
}

void StreamLayouts::strip(Slot slot, TensorData &data) {
  if (data.null())
    return;
  std::vector<int64_t> dims(data.dims().begin(), data.dims().end());
  auto &known = last[slot];
  if (known.first == data.dtype() && known.second == dims) {
    data.clear_dtype();
    data.clear_dims();
    return;
  }
  known = {data.dtype(), std::move(dims)};
}

llvm::Error StreamLayouts::restore(Slot slot, TensorData &data) {
  if (data.null())
    return llvm::Error::success();
  if (data.dtype() != 0) {
    last[slot] = {data.dtype(),
                  std::vector<int64_t>(data.dims().begin(), data.dims().end())};
    return llvm::Error::success();
  }
  auto known = last.find(slot);
  if (known == last.end())
    return wireError("a tensor without its type and shape, in a slot that "
                     "never carried them");
  data.set_dtype(known->second.first);
  for (int64_t d : known->second.second)
    data.add_dims(d);
  return llvm::Error::success();
}
