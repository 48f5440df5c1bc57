//===- NpyFile.cpp - NumPy .npy tensors -----------------------------------===//

#include "heterps/Runtime/NpyFile.h"

#include "heterps/Runtime/MemoryLimit.h"
#include "heterps/Support/PrintableLine.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstring>
#include <vector>

using namespace heterps;
using namespace heterps::runtime;

/// The value of `key` in the header's Python dict literal, up to the next
/// top-level comma or the closing brace.
static llvm::StringRef dictValue(llvm::StringRef header, llvm::StringRef key) {
  size_t at = header.find(("'" + key + "'").str());
  if (at == llvm::StringRef::npos)
    return {};
  llvm::StringRef rest = header.drop_front(at + key.size() + 2).ltrim(" :");
  size_t end =
      rest.starts_with("(") ? rest.find(')') + 1 : rest.find_first_of(",}");
  return rest.take_front(end).trim();
}

/// NumPy's name for a dtype descriptor a user is likely to have saved.
static llvm::StringRef numpyName(llvm::StringRef descr) {
  if (descr.empty())
    return "";
  return llvm::StringSwitch<llvm::StringRef>(descr.drop_front())
      .Case("f8", "float64")
      .Case("f2", "float16")
      .Case("i4", "int32")
      .Case("i2", "int16")
      .Case("u1", "uint8")
      .Case("i1", "int8")
      .Case("b1", "bool")
      .Default("");
}

/// Copies the elements of an array of `shape` from column-major (Fortran)
/// order in `data` to row-major order in `out`: what np.save writes for a
/// transposed array.
static void fortranToC(const char *data, const Shape &shape, size_t elemSize,
                       char *out) {
  // Nothing to copy; and the strides of the other dimensions might
  // overflow (a header may claim any shape with a 0 in it).
  if (numElements(shape) == 0)
    return;
  size_t rank = shape.size();
  std::vector<int64_t> stride(rank, 1), index(rank, 0);
  for (size_t d = 1; d < rank; ++d)
    stride[d] = stride[d - 1] * shape[d - 1];
  for (int64_t i = 0, n = numElements(shape); i < n; ++i) {
    int64_t from = 0;
    for (size_t d = 0; d < rank; ++d)
      from += index[d] * stride[d];
    std::memcpy(out + i * elemSize, data + from * elemSize, elemSize);
    // The next row-major index: the last dimension moves fastest.
    for (size_t d = rank; d-- > 0 && ++index[d] == shape[d];)
      index[d] = 0;
  }
}

llvm::Expected<Tensor> heterps::runtime::readNpyFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + buffer.getError().message());
  return parseNpy((*buffer)->getBuffer(), path);
}

llvm::Expected<Tensor> heterps::runtime::parseNpy(llvm::StringRef bytes,
                                                  llvm::StringRef path) {
  // The header is the file's text: echoed on one line whatever it holds.
  auto fail = [&](const llvm::Twine &what) {
    return printableError(path + ": " + what);
  };
  if (!bytes.starts_with("\x93NUMPY") || bytes.size() < 10)
    return fail("not a .npy file");
  uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t headerLength, headerStart;
  if (major == 1) {
    headerLength =
        static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8;
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return fail("truncated header");
    headerLength = 0;
    for (int i = 3; i >= 0; --i)
      headerLength = headerLength << 8 | static_cast<uint8_t>(bytes[8 + i]);
    headerStart = 12;
  } else {
    return fail("unsupported .npy version " + llvm::Twine(major));
  }
  if (bytes.size() - headerStart < headerLength)
    return fail("truncated header");
  llvm::StringRef header = bytes.substr(headerStart, headerLength);
  llvm::StringRef descr = dictValue(header, "descr").trim("'\"");
  DType type;
  if (descr == "<f4")
    type = DType::F32;
  else if (descr == "<i8")
    type = DType::I64;
  else {
    std::string known = numpyName(descr).str();
    return fail("dtype '" + descr + "'" +
                (known.empty() ? "" : " (" + known + ")") +
                " is not supported: save float32 ('<f4') or int64 ('<i8')");
  }
  llvm::StringRef order = dictValue(header, "fortran_order");
  if (order != "False" && order != "True")
    return fail("bad fortran_order '" + order + "'");
  Shape shape;
  llvm::SmallVector<llvm::StringRef> dims;
  dictValue(header, "shape").trim("()").split(dims, ',', -1, false);
  for (llvm::StringRef d : dims) {
    int64_t n;
    if (d.trim().getAsInteger(10, n) || n < 0)
      return fail("bad shape entry '" + d.trim() + "'");
    shape.push_back(n);
  }
  // The shape is checked against the data before anything is allocated:
  // a header may claim any shape.
  llvm::Expected<uint64_t> size = checkedByteSize(shape, dtypeSize(type));
  if (!size)
    return fail(llvm::toString(size.takeError()));
  llvm::StringRef data = bytes.drop_front(headerStart + headerLength);
  if (data.size() != *size)
    return fail("expected " + llvm::Twine(*size) + " data bytes for shape " +
                shapeToString(shape) + ", found " + llvm::Twine(data.size()));
  llvm::Expected<Tensor> made = Tensor::create(type, shape, "the array");
  if (!made)
    return fail(llvm::toString(made.takeError()));
  Tensor &t = *made;
  if (order == "True")
    fortranToC(data.data(), shape, dtypeSize(type),
               static_cast<char *>(t.rawData()));
  else
    std::memcpy(t.rawData(), data.data(), *size);
  return std::move(*made);
}
