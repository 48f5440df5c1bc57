//===- Tensor.h - dense tensors of the runtime ------------------*- C++ -*-===//
//
// A tensor is an element type, a shape and a reference-counted, 64-byte
// aligned buffer. Copies share the buffer; `reshaped` makes a view with
// another shape over the same bytes, `part` one over some of them.
//
// The buffer is plain row-major unless the tensor carries a `Layout`: a
// backend (the oneDNN CPU backend) may keep activations in a blocked format
// between its own kernels and attaches the layout that tells how to turn them
// back into plain form.
//
// A tensor lives in a memory space (MemorySpace.h): the host's unless a
// backend made it on its device. Reading or writing the bytes of a tensor
// the host cannot address stops the process; data moves between spaces
// only through Backend::copy.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_TENSOR_H
#define HETERPS_RUNTIME_TENSOR_H

#include "heterps/Runtime/MemorySpace.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace heterps::runtime {

/// Element types; the numbers are ONNX's TensorProto.DataType.
/// Bool holds one byte per element, 0 or 1 (comparisons, masks).
enum class DType : int32_t { F32 = 1, I64 = 7, Bool = 9 };

/// Bytes per element.
size_t dtypeSize(DType type);
/// "f32", "i64", "bool".
const char *dtypeName(DType type);

using Shape = std::vector<int64_t>;

/// Product of the dimensions (1 for a scalar).
int64_t numElements(llvm::ArrayRef<int64_t> shape);
/// "[2, 3, 4]".
std::string shapeToString(llvm::ArrayRef<int64_t> shape);

class Tensor;

/// A non-plain memory layout, owned by the backend that made it.
class Layout {
public:
  virtual ~Layout();
  /// Bytes the buffer holds (may exceed the plain size: blocked formats pad).
  virtual size_t bytes() const = 0;
  /// A plain row-major copy of `t`, which has this layout.
  virtual llvm::Expected<Tensor> toPlain(const Tensor &t) const = 0;
  /// A copy of the plain tensor `plain` in this layout.
  virtual llvm::Expected<Tensor> fromPlain(const Tensor &plain) const = 0;
  /// Whether `other` describes the same memory layout.
  virtual bool equals(const Layout &other) const = 0;
  /// A short name for messages, e.g. "nChw16c".
  virtual std::string describe() const = 0;
};

class Tensor {
public:
  /// An empty tensor (no buffer); `isNull()` is true.
  Tensor() = default;
  /// A new plain tensor; the buffer is uninitialised.
  Tensor(DType type, Shape shape);
  /// A new tensor with a backend layout; the buffer is uninitialised.
  Tensor(DType type, Shape shape, std::shared_ptr<const Layout> layout);
  /// A new plain tensor in `space`; the buffer is uninitialised.
  Tensor(DType type, Shape shape, MemorySpace &space);

  /// A new plain tensor whose shape comes from outside (a file, a user):
  /// an error naming `what` when a dimension is negative, the size
  /// overflows or it cannot fit in memory, checked before allocating.
  static llvm::Expected<Tensor> create(DType type, Shape shape,
                                       const llvm::Twine &what);

  /// A plain f32 tensor holding `values`.
  static Tensor fromFloats(Shape shape, llvm::ArrayRef<float> values);
  /// A plain i64 tensor holding `values`.
  static Tensor fromInts(Shape shape, llvm::ArrayRef<int64_t> values);
  /// A plain host tensor over memory allocated elsewhere (a NumPy array):
  /// `bytes` holds its elements and stays alive while any tensor shares it.
  /// A holder that keeps a copy of the tensor prevents kernels from
  /// writing into it (ownsBufferAlone).
  static Tensor adopt(DType type, Shape shape, std::shared_ptr<uint8_t> bytes);

  bool isNull() const { return !buffer; }
  DType dtype() const { return type; }
  const Shape &shape() const { return dims; }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  int64_t dim(int64_t i) const { return dims[i]; }
  int64_t numElements() const { return runtime::numElements(dims); }
  /// Bytes of the buffer.
  size_t bytes() const { return size; }

  /// Whether no other tensor shares this one's buffer: a kernel may then
  /// write into it (the executor hands a kernel an input this way when the
  /// op is its last reader).
  bool ownsBufferAlone() const { return buffer.use_count() == 1; }

  bool isPlain() const { return !layoutPtr; }
  const std::shared_ptr<const Layout> &layout() const { return layoutPtr; }

  /// Where the bytes live.
  MemorySpace &space() const {
    return spacePtr ? *spacePtr : MemorySpace::host();
  }
  bool onHost() const { return !spacePtr; }

  /// The bytes, for host code: fatal when the space is not host-accessible.
  void *rawData() {
    checkHostAccess();
    return buffer.get();
  }
  const void *rawData() const {
    checkHostAccess();
    return buffer.get();
  }
  template <typename T> T *data() { return static_cast<T *>(rawData()); }
  template <typename T> const T *data() const {
    return static_cast<const T *>(rawData());
  }

  /// A view of this plain tensor with `shape` (same element count).
  Tensor reshaped(Shape shape) const;
  /// A tensor of `shape` (in `layout`, or plain when null) over this one's
  /// buffer from byte `offset` on, sharing its ownership: a part of a
  /// larger buffer that a kernel may compute in place (a Concat input).
  Tensor part(size_t offset, Shape shape,
              std::shared_ptr<const Layout> layout) const;
  /// A plain copy (or this tensor itself when it is plain already).
  llvm::Expected<Tensor> toPlain() const;
  /// Whether both buffers hold their elements the same way.
  bool sameLayout(const Tensor &other) const;
  /// This tensor in `other`'s layout: itself when it has that layout
  /// already, else a copy.
  llvm::Expected<Tensor> toLayoutOf(const Tensor &other) const;
  /// The same buffer seen as living in `space`: for a backend whose
  /// device memory the host can address (the emulated device) to run host
  /// kernels on its tensors, and to adopt their results.
  Tensor viewIn(MemorySpace &space) const;
  /// A deep copy with its own buffer (host-accessible tensors only).
  Tensor clone() const;
  /// A new tensor of the same type, shape and layout, its buffer
  /// uninitialised (for a result that overwrites every element).
  Tensor uninitialisedLike() const;

  /// "f32[1, 3, 224, 224]".
  std::string typeString() const;

private:
  DType type = DType::F32;
  Shape dims;
  size_t size = 0;
  std::shared_ptr<uint8_t> buffer;
  std::shared_ptr<const Layout> layoutPtr;
  /// Null for the host's memory.
  MemorySpace *spacePtr = nullptr;

  void checkHostAccess() const {
    if (spacePtr && !spacePtr->hostAccessible())
      failHostAccess();
  }
  [[noreturn]] void failHostAccess() const;
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_TENSOR_H
