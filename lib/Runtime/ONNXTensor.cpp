//===- ONNXTensor.cpp - ONNX TensorProto <-> runtime tensors --------------===//

#include "heterps/Runtime/ONNXTensor.h"

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

/// The bytes of an externally stored tensor.
static llvm::Expected<std::string> readExternal(const TensorProto &t,
                                                llvm::StringRef modelDir) {
  std::string location;
  long long offset = 0, length = -1;
  for (const auto &entry : t.external_data()) {
    llvm::StringRef value = entry.value();
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset" && value.getAsInteger(10, offset))
      offset = -1;
    else if (entry.key() == "length" && value.getAsInteger(10, length))
      length = -2;
  }
  if (location.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "external data has no location");
  llvm::SmallString<256> file(modelDir);
  llvm::sys::path::append(file, location);
  auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError(buffer.getError(),
                                   "cannot read external data file '" + file +
                                       "': " + buffer.getError().message());
  long long size = (*buffer)->getBufferSize();
  if (length == -1 && offset >= 0)
    length = size - offset;
  if (offset < 0 || length < 0 || offset + length > size)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "external data file '" + file + "' is too short for offset " +
            llvm::Twine(offset) + ", length " + llvm::Twine(length));
  return std::string((*buffer)->getBufferStart() + offset, length);
}

llvm::Expected<Tensor>
heterps::runtime::tensorFromProto(const TensorProto &proto,
                                  llvm::StringRef modelDir) {
  auto fail = [&](const llvm::Twine &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "tensor '" + proto.name() + "': " + what);
  };
  int32_t type = proto.data_type();
  if (type != TensorProto::FLOAT && type != TensorProto::INT64 &&
      type != TensorProto::INT32)
    return fail("element type " + typeName(type) +
                " is not supported by the runtime (FLOAT, INT64, INT32)");
  Shape shape(proto.dims().begin(), proto.dims().end());
  for (int64_t d : shape)
    if (d < 0)
      return fail("negative dimension " + llvm::Twine(d));
  int64_t n = numElements(shape);
  DType dtype = type == TensorProto::FLOAT ? DType::F32 : DType::I64;
  Tensor out(dtype, shape);

  std::string external;
  const std::string *raw = proto.has_raw_data() ? &proto.raw_data() : nullptr;
  if (proto.data_location() == TensorProto::EXTERNAL) {
    llvm::Expected<std::string> bytes = readExternal(proto, modelDir);
    if (!bytes)
      return fail(llvm::toString(bytes.takeError()));
    external = std::move(*bytes);
    raw = &external;
  }
  // Little-endian host assumed (x86-64, AArch64), as ONNX's raw_data is.
  if (raw) {
    int64_t elemSize = type == TensorProto::INT32 ? 4 : dtypeSize(dtype);
    if (static_cast<int64_t>(raw->size()) != n * elemSize)
      return fail("holds " + llvm::Twine(raw->size()) + " bytes, expected " +
                  llvm::Twine(n * elemSize));
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
  int64_t have = type == TensorProto::FLOAT   ? proto.float_data_size()
                 : type == TensorProto::INT64 ? proto.int64_data_size()
                                              : proto.int32_data_size();
  if (have != n)
    return fail("holds " + llvm::Twine(have) + " values, expected " +
                llvm::Twine(n));
  for (int64_t i = 0; i < n; ++i) {
    if (type == TensorProto::FLOAT)
      out.data<float>()[i] = proto.float_data(i);
    else if (type == TensorProto::INT64)
      out.data<int64_t>()[i] = proto.int64_data(i);
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
  proto.set_data_type(t.dtype() == DType::F32 ? TensorProto::FLOAT
                                              : TensorProto::INT64);
  for (int64_t d : t.shape())
    proto.add_dims(d);
  proto.set_raw_data(plain->rawData(),
                     plain->numElements() * dtypeSize(t.dtype()));
  return proto;
}

llvm::Expected<Tensor> heterps::runtime::readTensorFile(llvm::StringRef path,
                                                        std::string *name) {
  auto fail = [&](const llvm::Twine &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + what);
  };
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail("cannot read tensor file: " + buffer.getError().message());
  TensorProto proto;
  if (!proto.ParseFromArray((*buffer)->getBufferStart(),
                            static_cast<int>((*buffer)->getBufferSize())))
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
