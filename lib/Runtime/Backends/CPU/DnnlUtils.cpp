//===- DnnlUtils.cpp - shared pieces of the oneDNN kernels ----------------===//

#include "DnnlUtils.h"

#include "heterps/Runtime/BufferPool.h"

#include "llvm/ADT/STLExtras.h"

#include <charconv>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

llvm::Error cpu::kernelError(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

llvm::Error cpu::checkF32(llvm::ArrayRef<const Tensor *> inputs) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i] && inputs[i]->dtype() != DType::F32)
      return kernelError("input " + llvm::Twine(i) + " is " +
                         inputs[i]->typeString() +
                         ": element type not supported by this cpu kernel "
                         "(f32 only)");
  return llvm::Error::success();
}

memory::dims cpu::toDims(llvm::ArrayRef<int64_t> shape) {
  return memory::dims(shape.begin(), shape.end());
}

memory::desc cpu::plainDesc(llvm::ArrayRef<int64_t> shape,
                            memory::data_type type) {
  memory::dims dims = toDims(shape);
  memory::dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * std::max<int64_t>(dims[i + 1], 1);
  return memory::desc(dims, type, strides);
}

memory::desc cpu::descOf(const Tensor &t) {
  if (const auto *layout = dynamic_cast<const DnnlLayout *>(t.layout().get()))
    return layout->md;
  return plainDesc(t.shape(), t.dtype() == DType::F32 ? memory::data_type::f32
                                                      : memory::data_type::s32);
}

memory cpu::memoryOf(const Tensor &t, const CPUContext &ctx) {
  return memory(descOf(t), ctx.engine, const_cast<void *>(t.rawData()));
}

void cpu::useCallerScratchpad(dnnl::primitive_attr &attr) {
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
}

/// The context's scratch memory, grown to `md`'s size if need be.
static uint8_t *scratchpadFor(const memory::desc &md, CPUContext &ctx) {
  if (md.get_size() > ctx.scratchpadBytes) {
    ctx.scratchpad = nullptr; // free the old one first
    ctx.scratchpad = BufferPool::global().allocate(md.get_size());
    ctx.scratchpadBytes = md.get_size();
  }
  return ctx.scratchpad.get();
}

void cpu::addScratchpad(const memory::desc &md, CPUContext &ctx,
                        std::unordered_map<int, memory> &args) {
  args[DNNL_ARG_SCRATCHPAD] = memory(md, ctx.engine, scratchpadFor(md, ctx));
}

void PrimitiveArgs::set(int arg, const memory::desc &md, const void *data,
                        const dnnl::engine &engine) {
  auto made =
      llvm::find_if(kept, [&](const auto &k) { return k.first == arg; });
  if (made != kept.end() && made->second == &md) {
    args[arg].set_data_handle(const_cast<void *>(data));
    return;
  }
  args[arg] = memory(md, engine, const_cast<void *>(data));
  if (made != kept.end())
    made->second = &md;
  else
    kept.push_back({arg, &md});
}

void PrimitiveArgs::setScratchpad(const memory::desc &md, CPUContext &ctx) {
  set(DNNL_ARG_SCRATCHPAD, md, scratchpadFor(md, ctx), ctx.engine);
}

std::shared_ptr<const Layout> cpu::layoutOf(const memory::desc &md,
                                            llvm::ArrayRef<int64_t> shape,
                                            const CPUContextPtr &ctx) {
  if (md == plainDesc(shape))
    return nullptr;
  return std::make_shared<DnnlLayout>(md, ctx);
}

std::optional<memory::desc> cpu::paddedRows(const memory::desc &md) {
  const dnnl_memory_desc_t &d = md.data;
  if (d.ndims != 2 || d.format_kind != dnnl_blocked ||
      d.format_desc.blocking.inner_nblks != 0)
    return std::nullopt;
  const dnnl_dims_t &strides = d.format_desc.blocking.strides;
  // Row-major (strides {ld, 1}) or column-major (strides {1, ld}).
  int lead = strides[0] == 1 ? 1 : 0;
  if (strides[1 - lead] != 1 || strides[lead] % 256 != 0)
    return std::nullopt;
  memory::dims padded(2);
  padded[lead] = strides[lead] + 16;
  padded[1 - lead] = 1;
  return memory::desc(md.dims(), memory::data_type::f32, padded);
}

std::optional<int64_t> cpu::channelBlockOf(const memory::desc &md,
                                           llvm::ArrayRef<int64_t> shape) {
  if (shape.size() < 2)
    return std::nullopt;
  if (md == plainDesc(shape))
    return 1;
  static const std::pair<Tag, Tag> blocked[] = {{Tag::aBc8b, Tag::aBc16b},
                                                {Tag::aBcd8b, Tag::aBcd16b},
                                                {Tag::aBcde8b, Tag::aBcde16b}};
  if (shape.size() < 3 || shape.size() > 5)
    return std::nullopt;
  auto [by8, by16] = blocked[shape.size() - 3];
  for (auto [block, tag] : {std::pair{8, by8}, {16, by16}})
    if (md == memory::desc(toDims(shape), memory::data_type::f32, tag))
      return block;
  return std::nullopt;
}

Tensor cpu::allocate(const memory::desc &md, Shape shape,
                     const CPUContextPtr &ctx) {
  std::shared_ptr<const Layout> layout = layoutOf(md, shape, ctx);
  if (!layout)
    return Tensor(DType::F32, std::move(shape));
  return Tensor(DType::F32, std::move(shape), std::move(layout));
}

Tensor cpu::destination(const Tensor &offered, const memory::desc &md,
                        const Shape &shape, const CPUContextPtr &ctx) {
  if (!offered.isNull() && offered.shape() == shape && descOf(offered) == md)
    return offered;
  return allocate(md, shape, ctx);
}

Tensor cpu::reorderTo(const Tensor &t, const memory::desc &md,
                      const CPUContextPtr &ctx) {
  memory::desc from = descOf(t);
  if (from == md)
    return t;
  Tensor out = allocate(md, t.shape(), ctx);
  memory src = memoryOf(t, *ctx), dst = memoryOf(out, *ctx);
  dnnl::reorder(src, dst).execute(ctx->stream, src, dst);
  ctx->stream.wait();
  return out;
}

memory::desc cpu::channelsLastDesc(llvm::ArrayRef<int64_t> shape) {
  static const Tag tags[] = {Tag::acb, Tag::acdb, Tag::acdeb};
  return memory::desc(toDims(shape), memory::data_type::f32,
                      tags[shape.size() - 3]);
}

bool cpu::isChannelsLast(const Tensor &t) {
  return t.dtype() == DType::F32 && t.rank() >= 3 && t.rank() <= 5 &&
         descOf(t) == channelsLastDesc(t.shape());
}

Tensor cpu::plainOf(const Tensor &t, const CPUContextPtr &ctx) {
  if (t.isPlain())
    return t;
  return reorderTo(t, plainDesc(t.shape()), ctx);
}

llvm::Expected<Tensor> DnnlLayout::toPlain(const Tensor &t) const {
  Tensor plain;
  if (llvm::Error e = guardDnnl([&] {
        plain = plainOf(t, context);
        return llvm::Error::success();
      }))
    return e;
  return plain;
}

llvm::Expected<Tensor> DnnlLayout::fromPlain(const Tensor &plain) const {
  Tensor t;
  if (llvm::Error e = guardDnnl([&] {
        t = reorderTo(plain, md, context);
        return llvm::Error::success();
      }))
    return e;
  return t;
}

bool DnnlLayout::equals(const Layout &other) const {
  const auto *o = dynamic_cast<const DnnlLayout *>(&other);
  return o && o->md == md;
}

/// Appends `v` in decimal.
static void appendInt(std::string &s, int64_t v) {
  char digits[24];
  s.append(digits, std::to_chars(digits, digits + sizeof digits, v).ptr);
}

/// Appends DnnlLayout::describe's text for `md`.
static void appendLayout(std::string &s, const memory::desc &md) {
  const dnnl_memory_desc_t &d = md.data;
  if (d.format_kind != dnnl_blocked) {
    s += "opaque";
    return;
  }
  const dnnl_blocking_desc_t &b = d.format_desc.blocking;
  s += "strides";
  for (int i = 0; i < d.ndims; ++i) {
    s += i ? ',' : '=';
    appendInt(s, b.strides[i]);
  }
  for (int i = 0; i < b.inner_nblks; ++i) {
    s += " block";
    appendInt(s, b.inner_blks[i]);
    s += '@';
    appendInt(s, b.inner_idxs[i]);
  }
}

std::string DnnlLayout::describe() const {
  std::string s;
  appendLayout(s, md);
  return s;
}

std::string cpu::shapeKey(llvm::ArrayRef<const Tensor *> inputs) {
  // Built in one string, not from typeString's temporaries: every kernel
  // run looks its primitive up by this key.
  std::string key;
  key.reserve(64 * inputs.size());
  for (const Tensor *t : inputs) {
    if (!t) {
      key += "-;";
      continue;
    }
    key += dtypeName(t->dtype());
    for (int64_t d : t->shape()) {
      key += ',';
      appendInt(key, d);
    }
    if (t->layout()) {
      key += '|';
      if (const auto *layout =
              dynamic_cast<const DnnlLayout *>(t->layout().get()))
        appendLayout(key, layout->md);
      else
        key += t->layout()->describe();
    }
    if (!t->onHost()) {
      key += '@';
      key += t->space().name();
    }
    key += ';';
  }
  return key;
}

llvm::Expected<Shape> cpu::broadcastShapes(llvm::ArrayRef<int64_t> a,
                                           llvm::ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return kernelError("shapes " + shapeToString(a) + " and " +
                         shapeToString(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t cpu::nativeChannelBlock() {
  return __builtin_cpu_supports("avx512f") ? 16 : 8;
}

double cpu::reorderSeconds(const Tensor &x, const memory::desc &md,
                           const CPUContextPtr &ctx) {
  if (descOf(x) == md)
    return 0;
  return bestSeconds([&] { Tensor copy = reorderTo(x, md, ctx); });
}
