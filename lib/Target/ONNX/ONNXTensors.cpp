//===- ONNXTensors.cpp - ONNX tensors and types to MLIR -------------------===//

#include "GraphImporter.h"

#include "heterps/Runtime/ExternalData.h"
#include "heterps/Runtime/MemoryLimit.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/Endian.h"

#include <cstring>

using namespace mlir;
using namespace mlir::hps::onnx_import;
using onnx::TensorProto;

bool ConstTensor::isFloat() const {
  switch (elemType) {
  case TensorProto::FLOAT:
  case TensorProto::DOUBLE:
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
    return true;
  default:
    return false;
  }
}

int64_t ConstTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

bool ConstTensor::allKnown() const {
  return llvm::all_of(ints, [](const SymInt &v) { return v.isKnown(); });
}

Type mlir::hps::onnx_import::convertElementType(int32_t onnxType,
                                                MLIRContext *ctx) {
  Builder b(ctx);
  switch (onnxType) {
  case TensorProto::FLOAT:
    return b.getF32Type();
  case TensorProto::DOUBLE:
    return b.getF64Type();
  case TensorProto::FLOAT16:
    return b.getF16Type();
  case TensorProto::BFLOAT16:
    return b.getBF16Type();
  case TensorProto::BOOL:
    return b.getI1Type();
  case TensorProto::INT8:
    return b.getIntegerType(8);
  case TensorProto::INT16:
    return b.getIntegerType(16);
  case TensorProto::INT32:
    return b.getI32Type();
  case TensorProto::INT64:
    return b.getI64Type();
  case TensorProto::UINT8:
    return b.getIntegerType(8, /*isSigned=*/false);
  case TensorProto::UINT16:
    return b.getIntegerType(16, false);
  case TensorProto::UINT32:
    return b.getIntegerType(32, false);
  case TensorProto::UINT64:
    return b.getIntegerType(64, false);
  default:
    return Type();
  }
}

std::string mlir::hps::onnx_import::dataTypeName(int32_t onnxType) {
  if (TensorProto::DataType_IsValid(onnxType))
    return TensorProto::DataType_Name(
        static_cast<TensorProto::DataType>(onnxType));
  return "data type " + std::to_string(onnxType);
}

/// Bytes per element of the types readTensor decodes from raw data.
static int64_t rawElementSize(int32_t type) {
  switch (type) {
  case TensorProto::DOUBLE:
  case TensorProto::INT64:
  case TensorProto::UINT64:
    return 8;
  case TensorProto::FLOAT:
  case TensorProto::INT32:
  case TensorProto::UINT32:
    return 4;
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
  case TensorProto::INT16:
  case TensorProto::UINT16:
    return 2;
  case TensorProto::INT8:
  case TensorProto::UINT8:
  case TensorProto::BOOL:
    return 1;
  default:
    return 0;
  }
}

llvm::Error mlir::hps::onnx_import::checkRawDataSize(const TensorProto &t) {
  int64_t elemSize = rawElementSize(t.data_type());
  if (!t.has_raw_data() || t.data_location() == TensorProto::EXTERNAL ||
      elemSize == 0)
    return llvm::Error::success();
  llvm::SmallVector<int64_t> dims(t.dims().begin(), t.dims().end());
  llvm::Expected<uint64_t> bytes =
      heterps::runtime::checkedByteSize(dims, elemSize);
  if (!bytes)
    return bytes.takeError();
  if (t.raw_data().size() != *bytes)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "holds " + llvm::Twine(t.raw_data().size()) +
                                       " bytes, expected " +
                                       llvm::Twine(*bytes));
  return llvm::Error::success();
}

/// Decodes one little-endian element of `type` at `p`.
static void decodeRaw(int32_t type, const char *p, ConstTensor &out) {
  using namespace llvm::support;
  switch (type) {
  case TensorProto::FLOAT: {
    uint32_t bits = endian::read32le(p);
    float f;
    std::memcpy(&f, &bits, 4);
    out.floats.push_back(f);
    return;
  }
  case TensorProto::DOUBLE: {
    uint64_t bits = endian::read64le(p);
    double d;
    std::memcpy(&d, &bits, 8);
    out.floats.push_back(d);
    return;
  }
  case TensorProto::FLOAT16:
    out.floats.push_back(
        APFloat(APFloat::IEEEhalf(), APInt(16, endian::read16le(p)))
            .convertToFloat());
    return;
  case TensorProto::BFLOAT16:
    out.floats.push_back(
        APFloat(APFloat::BFloat(), APInt(16, endian::read16le(p)))
            .convertToFloat());
    return;
  case TensorProto::INT64:
  case TensorProto::UINT64:
    out.ints.push_back({static_cast<int64_t>(endian::read64le(p)), {}});
    return;
  case TensorProto::INT32:
    out.ints.push_back({static_cast<int32_t>(endian::read32le(p)), {}});
    return;
  case TensorProto::UINT32:
    out.ints.push_back({endian::read32le(p), {}});
    return;
  case TensorProto::INT16:
    out.ints.push_back({static_cast<int16_t>(endian::read16le(p)), {}});
    return;
  case TensorProto::UINT16:
    out.ints.push_back({endian::read16le(p), {}});
    return;
  case TensorProto::INT8:
    out.ints.push_back({static_cast<int8_t>(*p), {}});
    return;
  default: // UINT8, BOOL
    out.ints.push_back({static_cast<uint8_t>(*p), {}});
    return;
  }
}

llvm::Expected<ConstTensor>
mlir::hps::onnx_import::readTensor(const TensorProto &t,
                                   llvm::StringRef modelDir, int64_t limit) {
  auto fail = [&](const llvm::Twine &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "tensor '" + t.name() + "': " + what);
  };
  ConstTensor out;
  out.elemType = t.data_type();
  out.shape.assign(t.dims().begin(), t.dims().end());
  // A negative or overflowing shape would make every size below wrong.
  llvm::Expected<uint64_t> count =
      heterps::runtime::checkedByteSize(out.shape, 1);
  if (!count)
    return fail(llvm::toString(count.takeError()));
  if (*count > uint64_t(limit))
    return fail("too large to evaluate at import time (" + llvm::Twine(*count) +
                " elements)");
  int64_t n = static_cast<int64_t>(*count);
  int64_t elemSize = rawElementSize(out.elemType);
  if (elemSize == 0)
    return fail("unsupported element type " + dataTypeName(out.elemType));

  std::string external;
  const std::string *raw = t.has_raw_data() ? &t.raw_data() : nullptr;
  if (t.data_location() == TensorProto::EXTERNAL) {
    auto bytes = heterps::runtime::readExternalData(t, modelDir, n * elemSize);
    if (!bytes)
      return bytes.takeError();
    external = std::move(*bytes);
    raw = &external;
  }
  if (raw) {
    if (static_cast<int64_t>(raw->size()) != n * elemSize)
      return fail("holds " + llvm::Twine(raw->size()) + " bytes, expected " +
                  llvm::Twine(n * elemSize));
    for (int64_t i = 0; i < n; ++i)
      decodeRaw(out.elemType, raw->data() + i * elemSize, out);
    return out;
  }

  // Typed fields, as the ONNX spec assigns them per data type.
  switch (out.elemType) {
  case TensorProto::FLOAT:
    out.floats.assign(t.float_data().begin(), t.float_data().end());
    break;
  case TensorProto::DOUBLE:
    out.floats.assign(t.double_data().begin(), t.double_data().end());
    break;
  case TensorProto::INT64:
    for (int64_t v : t.int64_data())
      out.ints.push_back({v, {}});
    break;
  case TensorProto::UINT64:
  case TensorProto::UINT32:
    for (uint64_t v : t.uint64_data())
      out.ints.push_back({static_cast<int64_t>(v), {}});
    break;
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
    for (int32_t v : t.int32_data()) {
      const auto &sem = out.elemType == TensorProto::FLOAT16
                            ? APFloat::IEEEhalf()
                            : APFloat::BFloat();
      out.floats.push_back(
          APFloat(sem, APInt(16, static_cast<uint16_t>(v))).convertToFloat());
    }
    break;
  default: // INT32, INT16, INT8, UINT16, UINT8, BOOL live in int32_data.
    for (int32_t v : t.int32_data())
      out.ints.push_back({v, {}});
    break;
  }
  int64_t have = out.isFloat() ? out.floats.size() : out.ints.size();
  if (have != n)
    return fail("holds " + llvm::Twine(have) + " values, expected " +
                llvm::Twine(n));
  return out;
}

DenseElementsAttr mlir::hps::onnx_import::toDenseAttr(const ConstTensor &t,
                                                      MLIRContext *ctx) {
  Type elem = convertElementType(t.elemType, ctx);
  auto type = RankedTensorType::get(t.shape, elem);
  if (auto floatType = dyn_cast<FloatType>(elem)) {
    SmallVector<APFloat> values;
    for (double v : t.floats) {
      APFloat f(v);
      bool lost;
      f.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &lost);
      values.push_back(f);
    }
    return DenseElementsAttr::get(type, values);
  }
  unsigned width = elem.getIntOrFloatBitWidth();
  SmallVector<APInt> values;
  for (const SymInt &v : t.ints)
    values.push_back(
        APInt(64, static_cast<uint64_t>(v.value), /*isSigned=*/true)
            .sextOrTrunc(width));
  return DenseElementsAttr::get(type, values);
}

onnx::TensorProto mlir::hps::onnx_import::toTensorProto(const ConstTensor &t) {
  TensorProto out;
  out.set_data_type(t.elemType);
  for (int64_t d : t.shape)
    out.add_dims(d);
  switch (t.elemType) {
  case TensorProto::FLOAT:
    for (double v : t.floats)
      out.add_float_data(static_cast<float>(v));
    break;
  case TensorProto::DOUBLE:
    for (double v : t.floats)
      out.add_double_data(v);
    break;
  case TensorProto::INT64:
    for (const SymInt &v : t.ints)
      out.add_int64_data(v.value);
    break;
  case TensorProto::UINT32:
  case TensorProto::UINT64:
    for (const SymInt &v : t.ints)
      out.add_uint64_data(static_cast<uint64_t>(v.value));
    break;
  default: // Narrow integers and BOOL live in int32_data.
    for (const SymInt &v : t.ints)
      out.add_int32_data(static_cast<int32_t>(v.value));
    break;
  }
  return out;
}
