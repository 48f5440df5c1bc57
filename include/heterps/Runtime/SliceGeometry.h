//===- SliceGeometry.h - which elements an ONNX Slice takes -----*- C++ -*-===//
//
// Shared by the Slice kernel and its backward: per axis, the first index,
// the step and the count, after ONNX's rules (negative starts and ends
// count from the end and are clamped; a negative step walks backwards).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_SLICEGEOMETRY_H
#define HETERPS_RUNTIME_SLICEGEOMETRY_H

#include "heterps/Runtime/Attributes.h"
#include "heterps/Runtime/Tensor.h"

#include <algorithm>
#include <optional>

namespace heterps::runtime {

struct SliceGeometry {
  std::vector<int64_t> first, step, count;

  /// Calls fn(outIndex, inIndex) for every element the slice takes, of an
  /// input of `shape`, in output order.
  template <typename Fn> void forEach(const Shape &shape, Fn &&fn) const {
    int64_t rank = static_cast<int64_t>(shape.size());
    std::vector<int64_t> strides(rank, 1), index(rank, 0);
    for (int64_t a = rank - 2; a >= 0; --a)
      strides[a] = strides[a + 1] * shape[a + 1];
    for (int64_t k = 0, total = numElements(count); k < total; ++k) {
      int64_t offset = 0;
      for (int64_t a = 0; a < rank; ++a)
        offset += (first[a] + index[a] * step[a]) * strides[a];
      fn(k, offset);
      for (int64_t a = rank - 1; a >= 0 && ++index[a] == count[a]; --a)
        index[a] = 0;
    }
  }

  /// Whether the slice takes a range of channels (axis 1, step 1) and
  /// every index of the other axes of `shape`.
  bool takesChannelRange(const Shape &shape) const {
    for (size_t a = 0; a < shape.size(); ++a)
      if (step[a] != 1 || (a != 1 && (first[a] != 0 || count[a] != shape[a])))
        return false;
    return shape.size() > 1;
  }

  /// The input offset of the slice's first element when the slice is one
  /// run of consecutive input elements (a view could stand for it).
  std::optional<int64_t> singleRun(const Shape &shape) const {
    int64_t total = numElements(count), rank = shape.size();
    if (total == 0 || rank == 0)
      return std::nullopt;
    int64_t a = rank - 1, inner = 1;
    for (; a > 0 && first[a] == 0 && step[a] == 1 && count[a] == shape[a]; --a)
      inner *= shape[a];
    if (count[a] * inner != total || (step[a] != 1 && count[a] != 1))
      return std::nullopt;
    int64_t offset = 0, stride = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      offset += first[d] * stride;
      stride *= shape[d];
    }
    return offset;
  }

  /// Like forEach, in runs: fn(outIndex, inIndex, length) for `length`
  /// consecutive elements of both. A run is the innermost axis not taken
  /// whole, when its step is 1, with every axis after it (a channel half
  /// of [N, C, H, W] is N runs of C / 2 * H * W); when its step is not 1,
  /// the axes after it (every other column of channels-last [N, H, W, C]
  /// is runs of C, Swin's patch merging).
  template <typename Fn> void forEachRun(const Shape &shape, Fn &&fn) const {
    int64_t a = static_cast<int64_t>(shape.size()) - 1, inner = 1;
    for (; a > 0 && first[a] == 0 && step[a] == 1 && count[a] == shape[a]; --a)
      inner *= shape[a];
    if (shape.empty() || count[a] == 0 || inner == 0 ||
        (step[a] != 1 && inner == 1)) {
      forEach(shape, [&](int64_t k, int64_t offset) { fn(k, offset, 1); });
      return;
    }
    // Runs over axis a too where it steps by 1, else over the axes after it.
    int64_t from = step[a] == 1 ? a : a + 1;
    int64_t length = step[a] == 1 ? count[a] * inner : inner;
    SliceGeometry rows = *this;
    for (int64_t b = from; b < static_cast<int64_t>(shape.size()); ++b)
      rows.count[b] = 1;
    rows.forEach(shape, [&](int64_t k, int64_t offset) {
      fn(k * length, offset, length);
    });
  }
};

/// A Slice's attributes: `axes` and `steps` may be empty (all axes from 0,
/// steps of 1).
struct SliceParams {
  std::vector<int64_t> starts, ends, axes, steps;
};

/// `p`, or an error unless ends (and axes, steps when given) match starts.
inline llvm::Expected<SliceParams> checkCounts(SliceParams p) {
  size_t n = p.starts.size();
  if (p.ends.size() != n || (!p.axes.empty() && p.axes.size() != n) ||
      (!p.steps.empty() && p.steps.size() != n))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "Slice needs as many ends, axes and steps as starts");
  return p;
}

inline llvm::Expected<SliceParams> readSliceParams(const OpAttributes &a) {
  SliceParams p;
  for (auto [name, field] :
       {std::pair("starts", &p.starts), std::pair("ends", &p.ends),
        std::pair("axes", &p.axes), std::pair("steps", &p.steps)}) {
    auto values = a.getInts(name, std::vector<int64_t>());
    if (!values)
      return values.takeError();
    *field = std::move(*values);
  }
  return checkCounts(std::move(p));
}

/// A Slice's bounds given as its inputs 1 to 4 (1-D i64 tensors, computed
/// at run time), when it has them; std::nullopt when it has only input 0.
inline llvm::Expected<std::optional<SliceParams>>
sliceParamsOfInputs(llvm::ArrayRef<const Tensor *> inputs) {
  if (inputs.size() < 3)
    return std::nullopt;
  SliceParams p;
  std::vector<int64_t> *fields[] = {&p.starts, &p.ends, &p.axes, &p.steps};
  for (size_t i = 1; i < inputs.size() && i <= 4; ++i) {
    const Tensor *t = inputs[i];
    if (!t)
      continue;
    if (t->dtype() != DType::I64 || t->rank() != 1)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "Slice bounds must be 1-D i64 tensors, not " + t->typeString());
    fields[i - 1]->assign(t->data<int64_t>(),
                          t->data<int64_t>() + t->numElements());
  }
  return checkCounts(std::move(p));
}

inline llvm::Expected<SliceGeometry> sliceGeometry(const Shape &shape,
                                                   const SliceParams &p) {
  llvm::ArrayRef<int64_t> starts = p.starts, ends = p.ends, axes = p.axes,
                          steps = p.steps;
  int64_t rank = static_cast<int64_t>(shape.size());
  SliceGeometry g{std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 1),
                  shape};
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    if (a < 0)
      a += rank;
    int64_t s = steps.empty() ? 1 : steps[i];
    if (a < 0 || a >= rank || s == 0)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "Slice axis " + llvm::Twine(a) + " with step " + llvm::Twine(s) +
              " on a rank-" + llvm::Twine(rank) + " tensor");
    int64_t n = shape[a];
    auto clampIndex = [&](int64_t v) {
      if (v < 0)
        v += n;
      return s > 0 ? std::clamp<int64_t>(v, 0, n)
                   : std::clamp<int64_t>(v, -1, n - 1);
    };
    int64_t begin = clampIndex(starts[i]), end = clampIndex(ends[i]);
    g.first[a] = begin;
    g.step[a] = s;
    g.count[a] = s > 0 ? std::max<int64_t>(0, (end - begin + s - 1) / s)
                       : std::max<int64_t>(0, (begin - end - s - 1) / -s);
  }
  return g;
}

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_SLICEGEOMETRY_H
