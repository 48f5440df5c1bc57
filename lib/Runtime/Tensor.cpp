//===- Tensor.cpp - dense tensors of the runtime --------------------------===//

#include "heterps/Runtime/Tensor.h"
#include "heterps/Runtime/BufferPool.h"
#include "heterps/Runtime/MemoryLimit.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"

#include <cassert>
#include <cstdlib>
#include <cstring>

using namespace heterps::runtime;

size_t heterps::runtime::dtypeSize(DType type) {
  switch (type) {
  case DType::F32:
    return 4;
  case DType::I64:
    return 8;
  case DType::Bool:
    return 1;
  }
  return 0;
}

const char *heterps::runtime::dtypeName(DType type) {
  switch (type) {
  case DType::F32:
    return "f32";
  case DType::I64:
    return "i64";
  case DType::Bool:
    return "bool";
  }
  return "?";
}

int64_t heterps::runtime::numElements(llvm::ArrayRef<int64_t> shape) {
  // A 0 anywhere makes it 0 (before a product of the others can overflow).
  if (llvm::is_contained(shape, 0))
    return 0;
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string heterps::runtime::shapeToString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Layout::~Layout() = default;

/// A 64-byte aligned buffer of at least one byte (so that empty tensors still
/// have a non-null buffer).
static std::shared_ptr<uint8_t> allocate(size_t bytes) {
  return BufferPool::global().allocate(bytes);
}

Tensor::Tensor(DType type, Shape shape)
    : type(type), dims(std::move(shape)),
      size(runtime::numElements(dims) * dtypeSize(type)),
      buffer(allocate(size)) {}

Tensor::Tensor(DType type, Shape shape, std::shared_ptr<const Layout> layout)
    : type(type), dims(std::move(shape)), size(layout->bytes()),
      buffer(allocate(size)), layoutPtr(std::move(layout)) {}

Tensor::Tensor(DType type, Shape shape, MemorySpace &space)
    : type(type), dims(std::move(shape)),
      size(runtime::numElements(dims) * dtypeSize(type)),
      buffer(space.allocate(size)),
      spacePtr(space.isHost() ? nullptr : &space) {}

void Tensor::failHostAccess() const {
  llvm::report_fatal_error(llvm::Twine("host code accessed tensor ") +
                               typeString() + ", which lives in " +
                               spacePtr->name() +
                               " memory: a transfer (Backend::copy) is missing",
                           /*gen_crash_diag=*/false);
}

Tensor Tensor::viewIn(MemorySpace &space) const {
  Tensor view = *this;
  view.spacePtr = space.isHost() ? nullptr : &space;
  return view;
}

llvm::Expected<Tensor> Tensor::create(DType type, Shape shape,
                                      const llvm::Twine &what) {
  llvm::Expected<uint64_t> bytes = checkedByteSize(shape, dtypeSize(type));
  if (!bytes)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   what + ": " +
                                       llvm::toString(bytes.takeError()));
  if (llvm::Error e = checkFitsInMemory(*bytes, what + " (" + dtypeName(type) +
                                                    shapeToString(shape) + ")"))
    return std::move(e);
  try {
    return Tensor(type, std::move(shape));
  } catch (const std::bad_alloc &) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   what + ": out of memory allocating " +
                                       formatBytes(*bytes));
  }
}

Tensor Tensor::fromFloats(Shape shape, llvm::ArrayRef<float> values) {
  Tensor t(DType::F32, std::move(shape));
  assert(static_cast<int64_t>(values.size()) == t.numElements());
  std::memcpy(t.rawData(), values.data(), t.bytes());
  return t;
}

Tensor Tensor::adopt(DType type, Shape shape, std::shared_ptr<uint8_t> bytes) {
  Tensor t;
  t.type = type;
  t.dims = std::move(shape);
  t.size = runtime::numElements(t.dims) * dtypeSize(type);
  t.buffer = std::move(bytes);
  return t;
}

Tensor Tensor::fromInts(Shape shape, llvm::ArrayRef<int64_t> values) {
  Tensor t(DType::I64, std::move(shape));
  assert(static_cast<int64_t>(values.size()) == t.numElements());
  std::memcpy(t.rawData(), values.data(), t.bytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  assert(isPlain() && "reshaping a tensor with a backend layout");
  assert(runtime::numElements(shape) == numElements());
  Tensor view = *this;
  view.dims = std::move(shape);
  return view;
}

Tensor Tensor::part(size_t offset, Shape shape,
                    std::shared_ptr<const Layout> layout) const {
  Tensor view;
  view.type = type;
  view.dims = std::move(shape);
  view.size = layout ? layout->bytes()
                     : runtime::numElements(view.dims) * dtypeSize(type);
  assert(offset + view.size <= size && "part beyond the buffer");
  // The aliasing constructor: owns what `buffer` owns, points inside it.
  view.buffer = std::shared_ptr<uint8_t>(buffer, buffer.get() + offset);
  view.layoutPtr = std::move(layout);
  return view;
}

llvm::Expected<Tensor> Tensor::toPlain() const {
  if (isPlain())
    return *this;
  return layoutPtr->toPlain(*this);
}

bool Tensor::sameLayout(const Tensor &other) const {
  if (isPlain() || other.isPlain())
    return isPlain() == other.isPlain();
  return layoutPtr->equals(*other.layoutPtr);
}

llvm::Expected<Tensor> Tensor::toLayoutOf(const Tensor &other) const {
  if (sameLayout(other))
    return *this;
  llvm::Expected<Tensor> plain = toPlain();
  if (!plain || other.isPlain())
    return plain;
  return other.layoutPtr->fromPlain(*plain);
}

Tensor Tensor::clone() const {
  checkHostAccess();
  Tensor copy = *this;
  copy.buffer = space().allocate(size);
  std::memcpy(copy.buffer.get(), buffer.get(), size);
  return copy;
}

Tensor Tensor::uninitialisedLike() const {
  Tensor fresh = *this;
  fresh.buffer = space().allocate(size);
  return fresh;
}

std::string Tensor::typeString() const {
  std::string s = std::string(dtypeName(type)) + shapeToString(dims);
  if (layoutPtr)
    s += " (" + layoutPtr->describe() + ")";
  if (spacePtr)
    s += " on " + spacePtr->name();
  return s;
}
