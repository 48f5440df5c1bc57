//===- ONNXTensor.cpp - ONNX TensorProto <-> runtime tensors --------------===//

#include "heterps/Runtime/ONNXTensor.h"

#include "heterps/Runtime/ExternalData.h"
#include "heterps/Runtime/MemoryLimit.h"
#include "heterps/Support/PrintableLine.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace heterps::runtime;
using onnx::TensorProto;

static std::string typeName(int32_t type) {
  if (TensorProto::DataType_IsValid(type))
    return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(type));
  return "data type " + std::to_string(type);
}

llvm::Expected<Tensor>
heterps::runtime::tensorFromProto(const TensorProto &proto,
                                  llvm::StringRef modelDir) {
  auto fail = [&](const llvm::Twine &what) {
    return heterps::printableError("tensor '" + proto.name() + "': " + what);
  };
  int32_t type = proto.data_type();
  if (type != TensorProto::FLOAT && type != TensorProto::INT64 &&
      type != TensorProto::INT32 && type != TensorProto::BOOL)
    return fail("element type " + typeName(type) +
                " is not supported by the runtime (FLOAT, INT64, INT32, BOOL)");
  Shape shape(proto.dims().begin(), proto.dims().end());
  DType dtype = type == TensorProto::FLOAT  ? DType::F32
                : type == TensorProto::BOOL ? DType::Bool
                                            : DType::I64;
  int64_t elemSize = type == TensorProto::INT32 ? 4 : dtypeSize(dtype);
  // Sizes are checked against the data before the tensor is allocated.
  llvm::Expected<uint64_t> stored = checkedByteSize(shape, elemSize);
  if (!stored)
    return fail(llvm::toString(stored.takeError()));
  int64_t n = static_cast<int64_t>(*stored / elemSize);

  std::string external;
  const std::string *raw = proto.has_raw_data() ? &proto.raw_data() : nullptr;
  if (proto.data_location() == TensorProto::EXTERNAL) {
    llvm::Expected<std::string> bytes =
        readExternalData(proto, modelDir, *stored);
    if (!bytes)
      return fail(llvm::toString(bytes.takeError()));
    external = std::move(*bytes);
    raw = &external;
  }
  if (raw && raw->size() != *stored)
    return fail("holds " + llvm::Twine(raw->size()) + " bytes, expected " +
                llvm::Twine(*stored));
  int64_t have = raw                          ? n
                 : type == TensorProto::FLOAT ? proto.float_data_size()
                 : type == TensorProto::INT64 ? proto.int64_data_size()
                                              : proto.int32_data_size();
  // ONNX keeps BOOL elements in int32_data, one per element.
  if (have != n)
    return fail("holds " + llvm::Twine(have) + " values, expected " +
                llvm::Twine(n));
  llvm::Expected<Tensor> made = Tensor::create(dtype, shape, "the tensor");
  if (!made)
    return fail(llvm::toString(made.takeError()));
  Tensor out = std::move(*made);
  // Little-endian host assumed (x86-64, AArch64), as ONNX's raw_data is.
  if (raw) {
    if (type == TensorProto::INT32) {
      const char *p = raw->data();
      for (int64_t i = 0; i < n; ++i) {
        int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        out.data<int64_t>()[i] = v;
      }
    } else {
      std::memcpy(out.rawData(), raw->data(), raw->size());
    }
    return out;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (type == TensorProto::FLOAT)
      out.data<float>()[i] = proto.float_data(i);
    else if (type == TensorProto::INT64)
      out.data<int64_t>()[i] = proto.int64_data(i);
    else if (type == TensorProto::BOOL)
      out.data<uint8_t>()[i] = proto.int32_data(i) != 0;
    else
      out.data<int64_t>()[i] = proto.int32_data(i);
  }
  return out;
}

llvm::Expected<TensorProto>
heterps::runtime::tensorToProto(const Tensor &t, llvm::StringRef name) {
  llvm::Expected<Tensor> plain = t.toPlain();
  if (!plain)
    return plain.takeError();
  TensorProto proto;
  proto.set_name(name.str());
  proto.set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape())
    proto.add_dims(d);
  proto.set_raw_data(plain->rawData(),
                     plain->numElements() * dtypeSize(t.dtype()));
  return proto;
}

llvm::Expected<Tensor> heterps::runtime::readTensorFile(llvm::StringRef path,
                                                        std::string *name) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        path + ": cannot read tensor file: " + buffer.getError().message());
  return parseTensorFile((*buffer)->getBuffer(), path, name);
}

llvm::Expected<Tensor> heterps::runtime::parseTensorFile(llvm::StringRef bytes,
                                                         llvm::StringRef path,
                                                         std::string *name) {
  auto fail = [&](const llvm::Twine &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + what);
  };
  TensorProto proto;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return fail("not a serialised ONNX TensorProto");
  if (name)
    *name = proto.name();
  llvm::Expected<Tensor> t =
      tensorFromProto(proto, llvm::sys::path::parent_path(path));
  if (!t)
    return fail(llvm::toString(t.takeError()));
  return t;
}

llvm::Error heterps::runtime::writeTensorFile(const Tensor &t,
                                              llvm::StringRef name,
                                              llvm::StringRef path) {
  llvm::Expected<TensorProto> proto = tensorToProto(t, name);
  if (!proto)
    return proto.takeError();
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return llvm::createStringError(
        ec, path + ": cannot write tensor file: " + ec.message());
  os << proto->SerializeAsString();
  return llvm::Error::success();
}
