//===- LogicKernels.cpp - comparisons, masks and broadcasts ---------------===//
//
// The element-wise ops transformer exports use around attention and shape
// arithmetic: Equal/Less/Greater(OrEqual) give bool tensors, Not/And/Or/Xor
// combine them, Where selects by them, Expand broadcasts to a computed shape,
// Mod takes remainders, and Add/Sub/Mul/Div/Max/Min of i64 tensors (run-time
// shape arithmetic) come here from the binary kernels. All broadcast
// numpy-style (Broadcast.h).
//
//===----------------------------------------------------------------------===//

#include "Broadcast.h"
#include "CPUKernels.h"

#include <cmath>
#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

llvm::Expected<Shape> cpu::broadcastAll(llvm::ArrayRef<Shape> shapes) {
  Shape out;
  for (const Shape &s : shapes) {
    llvm::Expected<Shape> next = broadcastShapes(out, s);
    if (!next) {
      llvm::consumeError(next.takeError());
      std::string names;
      for (const Shape &t : shapes)
        names += (names.empty() ? "" : ", ") + shapeToString(t);
      return kernelError("shapes " + names + " do not broadcast");
    }
    out = std::move(*next);
  }
  return out;
}

Shape cpu::broadcastStrides(llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<int64_t> out) {
  Shape strides(out.size(), 0);
  int64_t stride = 1;
  size_t lead = out.size() - shape.size();
  for (size_t i = shape.size(); i-- > 0;) {
    strides[lead + i] = shape[i] == 1 ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

namespace {

enum class Compare { Equal, Less, Greater, LessOrEqual, GreaterOrEqual };
enum class Logic { And, Or, Xor };

template <typename T> bool compare(Compare c, T x, T y) {
  switch (c) {
  case Compare::Equal:
    return x == y;
  case Compare::Less:
    return x < y;
  case Compare::Greater:
    return x > y;
  case Compare::LessOrEqual:
    return x <= y;
  case Compare::GreaterOrEqual:
    return x >= y;
  }
  return false;
}

llvm::Error checkSameType(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype())
    return kernelError("operands " + a.typeString() + " and " + b.typeString() +
                       " have different element types");
  return llvm::Error::success();
}

llvm::Error checkBool(const Tensor &t, llvm::StringRef what) {
  if (t.dtype() != DType::Bool)
    return kernelError(what + " must be bool, not " + t.typeString());
  return llvm::Error::success();
}

/// `out[i] = fn(a[i], b[i])` over the broadcast of a and b.
template <typename In, typename Out, typename Fn>
void broadcastApply(const Tensor &a, const Tensor &b, Tensor &out, Fn fn) {
  const In *pa = a.data<In>(), *pb = b.data<In>();
  Out *po = out.data<Out>();
  forEachRow<2>(out.shape(), {a.shape(), b.shape()},
                [&](int64_t o, const std::array<int64_t, 2> &off, int64_t n,
                    const std::array<int64_t, 2> &step) {
                  for (int64_t j = 0; j < n; ++j)
                    po[o + j] =
                        fn(pa[off[0] + j * step[0]], pb[off[1] + j * step[1]]);
                });
}

class CompareKernel : public Kernel {
public:
  explicit CompareKernel(Compare c) : c(c) {}
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    const Tensor &a = *inputs[0], &b = *inputs[1];
    if (llvm::Error e = checkSameType(a, b))
      return e;
    auto shape = broadcastShapes(a.shape(), b.shape());
    if (!shape)
      return shape.takeError();
    Tensor out(DType::Bool, *shape);
    Compare op = c;
    switch (a.dtype()) {
    case DType::F32:
      broadcastApply<float, uint8_t>(
          a, b, out, [op](float x, float y) { return compare(op, x, y); });
      break;
    case DType::I64:
      broadcastApply<int64_t, uint8_t>(
          a, b, out, [op](int64_t x, int64_t y) { return compare(op, x, y); });
      break;
    case DType::Bool:
      broadcastApply<uint8_t, uint8_t>(
          a, b, out, [op](uint8_t x, uint8_t y) { return compare(op, x, y); });
      break;
    }
    outputs[0] = std::move(out);
    return llvm::Error::success();
  }

private:
  Compare c;
};

class LogicKernel : public Kernel {
public:
  explicit LogicKernel(Logic l) : l(l) {}
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    const Tensor &a = *inputs[0], &b = *inputs[1];
    if (llvm::Error e = checkBool(a, "the first operand"))
      return e;
    if (llvm::Error e = checkBool(b, "the second operand"))
      return e;
    auto shape = broadcastShapes(a.shape(), b.shape());
    if (!shape)
      return shape.takeError();
    Tensor out(DType::Bool, *shape);
    Logic op = l;
    broadcastApply<uint8_t, uint8_t>(a, b, out, [op](uint8_t x, uint8_t y) {
      return op == Logic::And ? x && y : op == Logic::Or ? x || y : x != y;
    });
    outputs[0] = std::move(out);
    return llvm::Error::success();
  }

private:
  Logic l;
};

class NotKernel : public Kernel {
public:
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    const Tensor &x = *inputs[0];
    if (llvm::Error e = checkBool(x, "the operand"))
      return e;
    Tensor out(DType::Bool, x.shape());
    const uint8_t *px = x.data<uint8_t>();
    uint8_t *po = out.data<uint8_t>();
    for (int64_t i = 0, n = x.numElements(); i < n; ++i)
      po[i] = !px[i];
    outputs[0] = std::move(out);
    return llvm::Error::success();
  }
};

/// Where(cond, x, y): x where cond holds, else y; elements copied as bytes.
class WhereKernel : public Kernel {
public:
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    const Tensor &c = *inputs[0], &x = *inputs[1], &y = *inputs[2];
    if (llvm::Error e = checkBool(c, "the condition"))
      return e;
    if (llvm::Error e = checkSameType(x, y))
      return e;
    auto shape = broadcastAll({c.shape(), x.shape(), y.shape()});
    if (!shape)
      return shape.takeError();
    Tensor out(x.dtype(), *shape);
    switch (x.dtype()) {
    case DType::F32:
      select<float>(c, x, y, out);
      break;
    case DType::I64:
      select<int64_t>(c, x, y, out);
      break;
    case DType::Bool:
      select<uint8_t>(c, x, y, out);
      break;
    }
    outputs[0] = std::move(out);
    return llvm::Error::success();
  }

private:
  template <typename T>
  static void select(const Tensor &c, const Tensor &x, const Tensor &y,
                     Tensor &out) {
    const uint8_t *pc = c.data<uint8_t>();
    const T *px = x.data<T>(), *py = y.data<T>();
    T *po = out.data<T>();
    forEachRow<3>(out.shape(), {c.shape(), x.shape(), y.shape()},
                  [&](int64_t o, const std::array<int64_t, 3> &off, int64_t n,
                      const std::array<int64_t, 3> &step) {
                    for (int64_t j = 0; j < n; ++j)
                      po[o + j] = pc[off[0] + j * step[0]]
                                      ? px[off[1] + j * step[1]]
                                      : py[off[2] + j * step[2]];
                  });
  }
};

/// Expand(x, shape): x broadcast with `shape` (either side may be 1).
class ExpandKernel : public Kernel {
public:
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    const Tensor &x = *inputs[0], &s = *inputs[1];
    if (s.dtype() != DType::I64 || s.rank() != 1)
      return kernelError("Expand's shape must be a 1-D i64 tensor, not " +
                         s.typeString());
    Shape target(s.data<int64_t>(), s.data<int64_t>() + s.numElements());
    for (int64_t d : target)
      if (d < 0)
        return kernelError("Expand to shape " + shapeToString(target) +
                           ": negative dimension");
    auto shape = broadcastShapes(x.shape(), target);
    if (!shape)
      return kernelError("cannot expand " + x.typeString() + " to shape " +
                         shapeToString(target));
    llvm::Expected<Tensor> made = Tensor::create(x.dtype(), *shape, "Expand");
    if (!made)
      return made.takeError();
    Tensor out = std::move(*made);
    size_t bytes = dtypeSize(x.dtype());
    const auto *px = static_cast<const uint8_t *>(x.rawData());
    auto *po = static_cast<uint8_t *>(out.rawData());
    forEachRow<1>(
        out.shape(), {x.shape()},
        [&](int64_t o, const std::array<int64_t, 1> &off, int64_t n,
            const std::array<int64_t, 1> &step) {
          if (step[0] == 1) {
            std::memcpy(po + o * bytes, px + off[0] * bytes, n * bytes);
            return;
          }
          for (int64_t j = 0; j < n; ++j)
            std::memcpy(po + (o + j) * bytes, px + off[0] * bytes, bytes);
        });
    outputs[0] = std::move(out);
    return llvm::Error::success();
  }
};

/// ONNX Mod: with `fmod` the remainder has the dividend's sign (C's fmod),
/// else the divisor's (Python's %, integers only).
class ModKernel : public Kernel {
public:
  explicit ModKernel(bool fmod) : fmod(fmod) {}
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    const Tensor &a = *inputs[0], &b = *inputs[1];
    if (llvm::Error e = checkSameType(a, b))
      return e;
    if (a.dtype() == DType::Bool || (a.dtype() == DType::F32 && !fmod))
      return kernelError("Mod of " + a.typeString() +
                         (fmod ? "" : " without fmod"));
    auto shape = broadcastShapes(a.shape(), b.shape());
    if (!shape)
      return shape.takeError();
    Tensor out(a.dtype(), *shape);
    if (a.dtype() == DType::F32) {
      broadcastApply<float, float>(
          a, b, out, [](float x, float y) { return std::fmod(x, y); });
      outputs[0] = std::move(out);
      return llvm::Error::success();
    }
    bool byZero = false;
    broadcastApply<int64_t, int64_t>(a, b, out, [&](int64_t x, int64_t y) {
      if (y == 0 || y == -1) { // x % -1 is 0, and INT64_MIN % -1 traps
        byZero |= y == 0;
        return int64_t(0);
      }
      int64_t r = x % y;
      return !fmod && r != 0 && (r < 0) != (y < 0) ? r + y : r;
    });
    if (byZero)
      return kernelError("integer division by zero in Mod of " +
                         a.typeString() + " by " + b.typeString());
    outputs[0] = std::move(out);
    return llvm::Error::success();
  }

private:
  bool fmod;
};

} // namespace

llvm::Expected<Tensor> cpu::integerArithmetic(llvm::StringRef opType,
                                              const Tensor &a,
                                              const Tensor &b) {
  if (a.dtype() != DType::I64 || b.dtype() != DType::I64)
    return kernelError(opType + " of " + a.typeString() + " and " +
                       b.typeString() + ": both must be f32 or both i64");
  auto shape = broadcastShapes(a.shape(), b.shape());
  if (!shape)
    return shape.takeError();
  Tensor out(DType::I64, *shape);
  bool divByZero = false;
  auto fn = [&](int64_t x, int64_t y) -> int64_t {
    if (opType == "Add")
      return x + y;
    if (opType == "Sub")
      return x - y;
    if (opType == "Mul")
      return x * y;
    if (opType == "Max")
      return std::max(x, y);
    if (opType == "Min")
      return std::min(x, y);
    if (y == 0) {
      divByZero = true;
      return 0;
    }
    if (y == -1) // INT64_MIN / -1 would trap: negate, wrapping
      return int64_t(0 - uint64_t(x));
    return x / y; // ONNX integer Div truncates.
  };
  broadcastApply<int64_t, int64_t>(a, b, out, fn);
  if (divByZero)
    return kernelError("integer division by zero in Div of " + a.typeString() +
                       " by " + b.typeString());
  return out;
}

using Factory = llvm::Expected<std::unique_ptr<Kernel>>;

void cpu::registerLogicKernels(KernelRegistry &registry, CPUContextPtr) {
  for (auto [type, c] :
       {std::pair("Equal", Compare::Equal), std::pair("Less", Compare::Less),
        std::pair("Greater", Compare::Greater),
        std::pair("LessOrEqual", Compare::LessOrEqual),
        std::pair("GreaterOrEqual", Compare::GreaterOrEqual)})
    registry.add(type, [c = c](const OpInfo &info) -> Factory {
      if (llvm::Error e = info.checkArity(2, 2))
        return e;
      return std::make_unique<CompareKernel>(c);
    });
  for (auto [type, l] :
       {std::pair("And", Logic::And), std::pair("Or", Logic::Or),
        std::pair("Xor", Logic::Xor)})
    registry.add(type, [l = l](const OpInfo &info) -> Factory {
      if (llvm::Error e = info.checkArity(2, 2))
        return e;
      return std::make_unique<LogicKernel>(l);
    });
  registry.add("Not", [](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(1, 1))
      return e;
    return std::make_unique<NotKernel>();
  });
  registry.add("Where", [](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(3, 3))
      return e;
    return std::make_unique<WhereKernel>();
  });
  registry.add("Mod", [](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(2, 2))
      return e;
    auto fmod = info.attrs.getInt("fmod", 0);
    if (!fmod)
      return fmod.takeError();
    return std::make_unique<ModKernel>(*fmod != 0);
  });
  registry.add("Expand", [](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(2, 2))
      return e;
    return std::make_unique<ExpandKernel>();
  });
}
