//===- IndexKernels.cpp - shapes, ranges, casts and running sums ----------===//
//
// The kernels of run-time shape arithmetic and of the index tensors
// transformers build: Shape, Range, ConstantOfShape, Cast (f32, i64, bool),
// CumSum, Trilu and ScatterND (Swin's attention masks). Inputs are plain
// tensors; the outputs are new ones.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstring>
#include <optional>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

using Factory = llvm::Expected<std::unique_ptr<Kernel>>;

/// ONNX Shape: dimensions [start, end) of the input, clamped to its rank.
class ShapeKernel : public Kernel {
public:
  ShapeKernel(int64_t start, int64_t end) : start(start), end(end) {}
  bool acceptsLayouts() const override { return true; }
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    const Tensor &x = *inputs[0];
    int64_t rank = x.rank();
    auto clamp = [&](int64_t v) {
      return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank);
    };
    int64_t from = clamp(start), to = std::max(clamp(end), from);
    Tensor out(DType::I64, {to - from});
    for (int64_t i = from; i < to; ++i)
      out.data<int64_t>()[i - from] = x.dim(i);
    outputs[0] = std::move(out);
    return llvm::Error::success();
  }

private:
  int64_t start, end;
};

/// A scalar (or one-element) f32/i64 input as a double.
llvm::Expected<double> scalarOf(const Tensor &t, llvm::StringRef what) {
  if (t.numElements() != 1 || t.dtype() == DType::Bool)
    return kernelError(what + " must be one f32 or i64 element, not " +
                       t.typeString());
  return t.dtype() == DType::F32 ? t.data<float>()[0]
                                 : static_cast<double>(t.data<int64_t>()[0]);
}

/// ONNX Range(start, limit, delta): start + i * delta for
/// i < ceil((limit - start) / delta).
class RangeKernel : public Kernel {
public:
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    DType type = inputs[0]->dtype();
    for (const Tensor *t : inputs)
      if (t->dtype() != type)
        return kernelError("Range's start, limit and delta must have one "
                           "element type, not " +
                           inputs[0]->typeString() + ", " +
                           inputs[1]->typeString() + ", " +
                           inputs[2]->typeString());
    llvm::Expected<double> start = scalarOf(*inputs[0], "start");
    llvm::Expected<double> limit = scalarOf(*inputs[1], "limit");
    llvm::Expected<double> delta = scalarOf(*inputs[2], "delta");
    if (!start || !limit || !delta)
      return llvm::joinErrors(
          llvm::joinErrors(start.takeError(), limit.takeError()),
          delta.takeError());
    if (*delta == 0)
      return kernelError("Range with delta 0");
    double count = std::ceil((*limit - *start) / *delta);
    auto text = [&](double v) {
      return type == DType::I64 ? std::to_string(static_cast<int64_t>(v))
                                : llvm::formatv("{0}", v).str();
    };
    if (count < 0)
      return kernelError("Range from " + text(*start) + " to " + text(*limit) +
                         " by " + text(*delta) + " has negative length " +
                         text(count));
    if (count > 1e12)
      return kernelError("Range of " + text(count) + " elements is too long");
    int64_t n = static_cast<int64_t>(count);
    llvm::Expected<Tensor> made = Tensor::create(type, {n}, "Range");
    if (!made)
      return made.takeError();
    Tensor out = std::move(*made);
    if (type == DType::I64) {
      int64_t s = inputs[0]->data<int64_t>()[0],
              d = inputs[2]->data<int64_t>()[0];
      for (int64_t i = 0; i < n; ++i)
        out.data<int64_t>()[i] = s + i * d;
    } else {
      for (int64_t i = 0; i < n; ++i)
        out.data<float>()[i] = static_cast<float>(*start + i * *delta);
    }
    outputs[0] = std::move(out);
    return llvm::Error::success();
  }
};

/// The dimensions held by a 1-D i64 shape tensor, checked.
llvm::Expected<Shape> shapeFrom(const Tensor &s, llvm::StringRef op) {
  if (s.dtype() != DType::I64 || s.rank() != 1)
    return kernelError(op + "'s shape must be a 1-D i64 tensor, not " +
                       s.typeString());
  Shape shape(s.data<int64_t>(), s.data<int64_t>() + s.numElements());
  for (int64_t d : shape)
    if (d < 0)
      return kernelError(op + " to shape " + shapeToString(shape) +
                         ": negative dimension");
  return shape;
}

/// Writes `value` (converted to `t`'s type) into every element.
void fill(Tensor &t, double value) {
  int64_t n = t.numElements();
  switch (t.dtype()) {
  case DType::F32:
    std::fill_n(t.data<float>(), n, static_cast<float>(value));
    break;
  case DType::I64:
    std::fill_n(t.data<int64_t>(), n, static_cast<int64_t>(value));
    break;
  case DType::Bool:
    std::fill_n(t.data<uint8_t>(), n, value != 0);
    break;
  }
}

class ConstantOfShapeKernel : public Kernel {
public:
  ConstantOfShapeKernel(DType type, double value) : type(type), value(value) {}
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    llvm::Expected<Shape> shape = shapeFrom(*inputs[0], "ConstantOfShape");
    if (!shape)
      return shape.takeError();
    llvm::Expected<Tensor> made =
        Tensor::create(type, *shape, "ConstantOfShape");
    if (!made)
      return made.takeError();
    fill(*made, value);
    outputs[0] = std::move(*made);
    return llvm::Error::success();
  }

private:
  DType type;
  double value;
};

template <typename From, typename To> void convert(const Tensor &x, Tensor &y) {
  const From *px = x.data<From>();
  To *py = y.data<To>();
  for (int64_t i = 0, n = x.numElements(); i < n; ++i) {
    if constexpr (std::is_same_v<To, uint8_t>)
      py[i] = px[i] != 0;
    else if constexpr (std::is_same_v<To, int64_t> &&
                       std::is_floating_point_v<From>)
      // Out-of-range and NaN values have no i64; C++ leaves them undefined.
      py[i] = std::isfinite(px[i]) && std::fabs(px[i]) < 9.2e18
                  ? static_cast<int64_t>(px[i])
                  : 0;
    else
      py[i] = static_cast<To>(px[i]);
  }
}

template <typename From> void convertTo(const Tensor &x, Tensor &y) {
  switch (y.dtype()) {
  case DType::F32:
    return convert<From, float>(x, y);
  case DType::I64:
    return convert<From, int64_t>(x, y);
  case DType::Bool:
    return convert<From, uint8_t>(x, y);
  }
}

class CastKernel : public Kernel {
public:
  explicit CastKernel(DType to) : to(to) {}
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    const Tensor &x = *inputs[0];
    if (x.dtype() == to) {
      outputs[0] = x;
      return llvm::Error::success();
    }
    Tensor y(to, x.shape());
    switch (x.dtype()) {
    case DType::F32:
      convertTo<float>(x, y);
      break;
    case DType::I64:
      convertTo<int64_t>(x, y);
      break;
    case DType::Bool:
      convertTo<uint8_t>(x, y);
      break;
    }
    outputs[0] = std::move(y);
    return llvm::Error::success();
  }

private:
  DType to;
};

/// One i64 element: CumSum's axis, Trilu's k.
llvm::Expected<int64_t> oneInt(const Tensor &t, llvm::StringRef what) {
  if (t.dtype() != DType::I64 || t.numElements() != 1)
    return kernelError(what + " must be one i64, not " + t.typeString());
  return t.data<int64_t>()[0];
}

/// ONNX CumSum along its second input, the axis: running sums, optionally
/// exclusive (each element leaves itself out) and reversed (from the end).
class CumSumKernel : public Kernel {
public:
  CumSumKernel(bool exclusive, bool reverse)
      : exclusive(exclusive), reverse(reverse) {}
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    const Tensor &x = *inputs[0];
    if (x.dtype() == DType::Bool)
      return kernelError("CumSum of " + x.typeString());
    llvm::Expected<int64_t> axis = oneInt(*inputs[1], "CumSum's axis");
    if (!axis)
      return axis.takeError();
    llvm::Expected<int64_t> a = normalizeAxis(*axis, x.rank());
    if (!a)
      return a.takeError();
    Tensor y(x.dtype(), x.shape());
    if (x.dtype() == DType::F32)
      sums<float>(x, y, *a);
    else
      sums<int64_t>(x, y, *a);
    outputs[0] = std::move(y);
    return llvm::Error::success();
  }

private:
  template <typename T> void sums(const Tensor &x, Tensor &y, int64_t a) const {
    int64_t n = x.dim(a), inner = 1, outer = 1;
    for (int64_t i = a + 1; i < x.rank(); ++i)
      inner *= x.dim(i);
    for (int64_t i = 0; i < a; ++i)
      outer *= x.dim(i);
    const T *px = x.data<T>();
    T *py = y.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        T sum = 0;
        for (int64_t k = 0; k < n; ++k) {
          int64_t at = (o * n + (reverse ? n - 1 - k : k)) * inner + in;
          if (exclusive) {
            py[at] = sum;
            sum += px[at];
          } else {
            sum += px[at];
            py[at] = sum;
          }
        }
      }
  }

  bool exclusive, reverse;
};

/// ONNX Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle
/// of the last two dimensions and zeroes the rest; k is the optional second
/// input (0 without it).
class TriluKernel : public Kernel {
public:
  explicit TriluKernel(bool upper) : upper(upper) {}
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    const Tensor &x = *inputs[0];
    if (x.rank() < 2)
      return kernelError("Trilu needs at least 2 dimensions, not " +
                         x.typeString());
    int64_t k = 0;
    if (inputs.size() > 1 && inputs[1]) {
      llvm::Expected<int64_t> given = oneInt(*inputs[1], "Trilu's k");
      if (!given)
        return given.takeError();
      k = *given;
    }
    Tensor y(x.dtype(), x.shape());
    int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
    int64_t bytes = dtypeSize(x.dtype()),
            mats = x.numElements() / std::max<int64_t>(rows * cols, 1);
    const auto *px = static_cast<const uint8_t *>(x.rawData());
    auto *py = static_cast<uint8_t *>(y.rawData());
    for (int64_t m = 0; m < mats; ++m)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          int64_t at = ((m * rows + i) * cols + j) * bytes;
          bool keep = upper ? j - i >= k : j - i <= k;
          if (keep)
            std::memcpy(py + at, px + at, bytes);
          else
            std::memset(py + at, 0, bytes);
        }
    outputs[0] = std::move(y);
    return llvm::Error::success();
  }

private:
  bool upper;
};

/// ONNX ScatterND: a copy of `data` whose slices, named by the rows of
/// `indices`, are replaced by (or with a reduction combined with) the
/// matching slices of `updates`. Rows are applied in order.
class ScatterNDKernel : public Kernel {
public:
  enum class Reduction { None, Add, Mul, Max, Min };
  explicit ScatterNDKernel(Reduction reduction) : reduction(reduction) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    const Tensor &data = *inputs[0], &indices = *inputs[1],
                 &updates = *inputs[2];
    if (indices.dtype() != DType::I64 || indices.rank() < 1 ||
        data.dtype() != updates.dtype() || data.dtype() == DType::Bool)
      return kernelError("ScatterND of " + data.typeString() + " at " +
                         indices.typeString() + " by " + updates.typeString() +
                         ": needs f32 or i64 data and updates, i64 indices");
    int64_t k = indices.dim(indices.rank() - 1);
    if (k < 1 || k > data.rank())
      return kernelError("ScatterND: index rows of length " + llvm::Twine(k) +
                         " do not fit data " + data.typeString());
    Shape expected(indices.shape().begin(), indices.shape().end() - 1);
    expected.insert(expected.end(), data.shape().begin() + k,
                    data.shape().end());
    if (updates.shape() != expected)
      return kernelError("ScatterND: updates " + updates.typeString() +
                         " should have shape " + shapeToString(expected));
    Tensor out = data.clone();
    llvm::Error e = data.dtype() == DType::F32
                        ? scatter<float>(indices, updates, k, out)
                        : scatter<int64_t>(indices, updates, k, out);
    if (e)
      return e;
    outputs[0] = std::move(out);
    return llvm::Error::success();
  }

private:
  template <typename T>
  llvm::Error scatter(const Tensor &indices, const Tensor &updates, int64_t k,
                      Tensor &out) const {
    int64_t slice = 1;
    for (int64_t d = k; d < out.rank(); ++d)
      slice *= out.dim(d);
    const int64_t *index = indices.data<int64_t>();
    const T *from = updates.data<T>();
    T *to = out.data<T>();
    for (int64_t row = 0, rows = indices.numElements() / k; row < rows; ++row) {
      llvm::Expected<int64_t> offset =
          scatterSliceOffset(index + row * k, k, out);
      if (!offset)
        return offset.takeError();
      T *dst = to + *offset;
      const T *src = from + row * slice;
      for (int64_t j = 0; j < slice; ++j)
        dst[j] = combine(dst[j], src[j]);
    }
    return llvm::Error::success();
  }

  template <typename T> T combine(T old, T update) const {
    switch (reduction) {
    case Reduction::None:
      return update;
    case Reduction::Add:
      return old + update;
    case Reduction::Mul:
      return old * update;
    case Reduction::Max:
      return std::max(old, update);
    case Reduction::Min:
      return std::min(old, update);
    }
    return update;
  }

  Reduction reduction;
};

/// A runtime element type from an ONNX TensorProto.DataType number.
llvm::Expected<DType> dtypeFromOnnx(int64_t code, llvm::StringRef op) {
  switch (code) {
  case static_cast<int64_t>(DType::F32):
    return DType::F32;
  case static_cast<int64_t>(DType::I64):
    return DType::I64;
  case static_cast<int64_t>(DType::Bool):
    return DType::Bool;
  default:
    return kernelError(op + " to ONNX element type " + llvm::Twine(code) +
                       " (FLOAT 1, INT64 7 and BOOL 9 are supported)");
  }
}

} // namespace

llvm::Expected<int64_t> cpu::scatterSliceOffset(const int64_t *row, int64_t k,
                                                const Tensor &data) {
  int64_t offset = 0;
  for (int64_t d = 0; d < k; ++d) {
    int64_t i = row[d], size = data.dim(d);
    if (i < -size || i >= size)
      return kernelError("ScatterND: index " + llvm::Twine(i) +
                         " out of range for dimension " + llvm::Twine(d) +
                         " of " + data.typeString());
    offset = offset * size + (i < 0 ? i + size : i);
  }
  for (int64_t d = k; d < data.rank(); ++d)
    offset *= data.dim(d);
  return offset;
}

void cpu::registerIndexKernels(KernelRegistry &registry, CPUContextPtr) {
  registry.add("Shape", [](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(1, 1))
      return e;
    auto start = info.attrs.getInt("start", 0);
    auto end = info.attrs.getInt("end", INT64_MAX);
    if (!start || !end)
      return llvm::joinErrors(start.takeError(), end.takeError());
    return std::make_unique<ShapeKernel>(*start, *end);
  });
  registry.add("Range", [](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(3, 3))
      return e;
    return std::make_unique<RangeKernel>();
  });
  registry.add("ConstantOfShape", [](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(1, 1))
      return e;
    auto to = info.attrs.getInt("to");
    auto value = info.attrs.getFloat("value", 0.f);
    if (!to || !value)
      return llvm::joinErrors(to.takeError(), value.takeError());
    llvm::Expected<DType> type = dtypeFromOnnx(*to, "ConstantOfShape");
    if (!type)
      return type.takeError();
    return std::make_unique<ConstantOfShapeKernel>(*type, *value);
  });
  registry.add("Cast", [](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(1, 1))
      return e;
    auto to = info.attrs.getInt("to");
    if (!to)
      return to.takeError();
    llvm::Expected<DType> type = dtypeFromOnnx(*to, "Cast");
    if (!type)
      return type.takeError();
    return std::make_unique<CastKernel>(*type);
  });
  registry.add("CumSum", [](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(2, 2))
      return e;
    auto exclusive = info.attrs.getInt("exclusive", 0);
    auto reverse = info.attrs.getInt("reverse", 0);
    if (!exclusive || !reverse)
      return llvm::joinErrors(exclusive.takeError(), reverse.takeError());
    return std::make_unique<CumSumKernel>(*exclusive != 0, *reverse != 0);
  });
  registry.add("ScatterND", [](const OpInfo &info) -> Factory {
    using Reduction = ScatterNDKernel::Reduction;
    if (llvm::Error e = info.checkArity(3, 3))
      return e;
    auto name = info.attrs.getString("reduction", std::string("none"));
    if (!name)
      return name.takeError();
    std::optional<Reduction> reduction =
        llvm::StringSwitch<std::optional<Reduction>>(*name)
            .Case("none", Reduction::None)
            .Case("add", Reduction::Add)
            .Case("mul", Reduction::Mul)
            .Case("max", Reduction::Max)
            .Case("min", Reduction::Min)
            .Default(std::nullopt);
    if (!reduction)
      return kernelError("ScatterND: unknown reduction '" + *name + "'");
    return std::make_unique<ScatterNDKernel>(*reduction);
  });
  registry.add("Trilu", [](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(1, 2))
      return e;
    auto upper = info.attrs.getInt("upper", 1);
    if (!upper)
      return upper.takeError();
    return std::make_unique<TriluKernel>(*upper != 0);
  });
}
