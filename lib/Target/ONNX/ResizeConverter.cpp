//===- ResizeConverter.cpp - ONNX Resize and Upsample as hps.resize -------===//
//
// Resize (opsets 10-19) and Upsample (7-9) become one hps.resize whose
// scales or sizes are known at import. Upsample and Resize-10 map
// coordinates asymmetrically and take the input index below (floor); from
// opset 11 the attributes say. The sizes an exporter computes from the
// input's shape (torchvision's segmentation heads: the batch and channels
// of one tensor, the image size of another) fold at import time; a dynamic
// dimension in them must be the input's own, which the op copies (0).
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "heterps/Dialect/HPS/HPS.h"

using namespace mlir;
using namespace mlir::hps;
using namespace mlir::hps::onnx_import;

namespace {

/// The values of a constant float input.
FailureOr<SmallVector<float>> constFloats(NodeImporter &n, unsigned i,
                                          StringRef what) {
  const ConstTensor *t = n.constInput(i);
  if (!t || !t->isFloat())
    return n.unsupported("a non-constant '" + what + "' input");
  return SmallVector<float>(t->floats.begin(), t->floats.end());
}

/// The attributes hps.resize and hps.dynamic_resize share.
struct ResizeAttrs {
  StringAttr mode, transform, rounding;
  FloatAttr cubicA;
  BoolAttr excludeOutside;
  FloatAttr extrapolation;
};

ResizeAttrs resizeAttrs(NodeImporter &n, StringRef transform, bool legacy) {
  OpBuilder &b = n.builder();
  return {b.getStringAttr(n.attrString("mode", "nearest")),
          b.getStringAttr(transform),
          b.getStringAttr(
              legacy ? "floor"
                     : n.attrString("nearest_mode", "round_prefer_floor")),
          b.getF32FloatAttr(n.attrFloat("cubic_coeff_a", -0.75f)),
          b.getBoolAttr(n.attrInt("exclude_outside", 0) != 0),
          b.getF32FloatAttr(n.attrFloat("extrapolation_value", 0.f))};
}

/// Resize whose scales or sizes (or roi) are known only at run time: they
/// become operands, and must speak of every dimension.
LogicalResult convertDynamicResize(NodeImporter &n, Value x,
                                   unsigned targetInput, bool crop,
                                   ArrayRef<int64_t> axes, StringRef transform,
                                   bool legacy) {
  auto type = cast<RankedTensorType>(x.getType());
  if (!type.getElementType().isF32())
    return n.unsupported("Resize of a non-f32 tensor with run-time scales "
                         "or sizes");
  if (static_cast<int64_t>(axes.size()) != type.getRank() ||
      !llvm::equal(axes, llvm::seq<int64_t>(0, type.getRank())))
    return n.unsupported("Resize with 'axes' and run-time scales or sizes");
  FailureOr<Value> target = n.input(targetInput);
  if (failed(target))
    return failure();
  Value roi;
  if (crop) {
    FailureOr<Value> r = n.input(1);
    if (failed(r))
      return failure();
    roi = *r;
  }
  ResizeAttrs a = resizeAttrs(n, transform, legacy);
  n.setOutput(0, n.create<DynamicResizeOp>(
                     n.outputType(0, type.getElementType()), x, *target, roi,
                     a.mode, a.transform, a.rounding, a.cubicA,
                     a.excludeOutside, a.extrapolation));
  return success();
}

} // namespace

LogicalResult mlir::hps::onnx_import::convertResize(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  auto type = dyn_cast<RankedTensorType>(x->getType());
  if (!type)
    return n.unsupported("Resize of an input of unknown rank");
  int64_t rank = type.getRank();
  bool upsample = n.node.op_type() == "Upsample";
  bool legacy = upsample || n.opset < 11;
  if (n.attrInt("antialias", 0) != 0)
    return n.unsupported("Resize with antialias");
  std::string policy = n.attrString("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch")
    return n.unsupported("Resize with keep_aspect_ratio_policy '" + policy +
                         "'");
  std::string transform =
      legacy ? "asymmetric"
             : n.attrString("coordinate_transformation_mode", "half_pixel");

  // The dimensions scales, sizes and roi speak of (opset 18's `axes`).
  SmallVector<int64_t> axes;
  if (std::optional<SmallVector<int64_t>> attr = n.attrInts("axes")) {
    for (int64_t a : *attr) {
      int64_t axis = a < 0 ? a + rank : a;
      if (axis < 0 || axis >= rank || llvm::is_contained(axes, axis))
        return n.fail("'axes' has " + Twine(a) +
                      ", out of range or repeated for rank " + Twine(rank));
      axes.push_back(axis);
    }
  } else {
    for (int64_t a = 0; a < rank; ++a)
      axes.push_back(a);
  }
  int64_t count = axes.size();

  SmallVector<float> scales(rank, 1.f);
  SmallVector<int64_t> sizes;
  unsigned scalesInput = legacy ? 1 : 2, sizesInput = 3;
  bool haveScales = upsample && n.opset < 9
                        ? true
                        : n.hasInput(scalesInput) &&
                              (!n.constInput(scalesInput) ||
                               n.constInput(scalesInput)->numElements() > 0);
  bool haveSizes = !legacy && n.hasInput(sizesInput);
  if (haveScales == haveSizes)
    return n.fail("needs exactly one of 'scales' and 'sizes'");
  unsigned targetInput = haveScales ? scalesInput : sizesInput;
  bool crop = transform == "tf_crop_and_resize";
  if ((!(upsample && n.opset < 9) && !n.constInput(targetInput)) ||
      (crop && !n.constInput(1)))
    return convertDynamicResize(n, *x, targetInput, crop, axes, transform,
                                legacy);
  if (haveScales) {
    FailureOr<SmallVector<float>> given =
        upsample && n.opset < 9
            ? FailureOr<SmallVector<float>>(
                  n.attrFloats("scales").value_or(SmallVector<float>()))
            : constFloats(n, scalesInput, "scales");
    if (failed(given))
      return failure();
    if (static_cast<int64_t>(given->size()) != count)
      return n.fail("'scales' has " + Twine(given->size()) + " values for " +
                    Twine(count) + " dimensions");
    for (auto [axis, scale] : llvm::zip(axes, *given))
      scales[axis] = scale;
  } else {
    const ConstTensor *t = n.constInput(sizesInput);
    std::optional<SmallVector<SymInt>> inDims =
        n.symbolicShape(n.node.input(0));
    if (t->isFloat())
      return n.fail("'sizes' must be integers");
    if (t->numElements() != count)
      return n.fail("'sizes' has " + Twine(t->numElements()) + " values for " +
                    Twine(count) + " dimensions");
    sizes.assign(rank, 0);
    for (auto [axis, size] : llvm::zip(axes, t->ints)) {
      if (size.isKnown()) {
        if (size.value < 0)
          return n.fail("'sizes' has a negative size " + Twine(size.value));
        // hps.resize's 0 stands for the input's own size.
        if (size.value == 0)
          return n.unsupported("Resize to a size of 0");
        sizes[axis] = size.value;
      } else if (!inDims || (*inDims)[axis].symbol != size.symbol) {
        // A dynamic size is allowed only where it is the input's own.
        return n.unsupported("Resize to a dynamic size '" + size.symbol +
                             "' that is not the input's dimension " +
                             Twine(axis));
      }
    }
  }

  SmallVector<float> roi;
  if (crop) {
    FailureOr<SmallVector<float>> given = constFloats(n, 1, "roi");
    if (failed(given))
      return failure();
    if (static_cast<int64_t>(given->size()) != 2 * count)
      return n.fail("'roi' has " + Twine(given->size()) + " values for " +
                    Twine(count) + " dimensions (a begin and an end each)");
    // Dimensions the roi does not name are taken whole.
    roi.assign(rank, 0.f);
    roi.append(rank, 1.f);
    for (auto [i, axis] : llvm::enumerate(axes)) {
      roi[axis] = (*given)[i];
      roi[rank + axis] = (*given)[count + i];
    }
  }

  ResizeAttrs a = resizeAttrs(n, transform, legacy);
  OpBuilder &b = n.builder();
  n.setOutput(0, n.create<ResizeOp>(n.outputType(0, type.getElementType()), *x,
                                    b.getDenseF32ArrayAttr(scales),
                                    b.getDenseI64ArrayAttr(sizes),
                                    b.getDenseF32ArrayAttr(roi), a.mode,
                                    a.transform, a.rounding, a.cubicA,
                                    a.excludeOutside, a.extrapolation));
  return success();
}
