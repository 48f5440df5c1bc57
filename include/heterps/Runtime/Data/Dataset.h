//===- Dataset.h - training and evaluation data in memory -------*- C++ -*-===//
//
// A data set is two tensors with the same first dimension N, the samples:
// `inputs` (f32, [N, ...]) and `targets` (i64 class labels [N], or f32
// [N, ...] for regression and binary targets). Training reads it through a
// BatchLoader (BatchLoader.h).
//
// Data specs (the --data / --eval-data values of heterps-run):
//   fashion-mnist[:train|:test]   Debian's dataset-fashion-mnist, from
//                                 /usr/share/datasets/fashion-mnist
//                                 (HETERPS_FASHION_MNIST_DIR overrides);
//   inputs=FILE,targets=FILE      each FILE an IDX file (optionally gzipped),
//                                 a NumPy .npy or an ONNX TensorProto .pb.
// IDX images ([N, rows, cols] bytes) become f32 [N, 1, rows, cols] scaled to
// [0, 1], as torchvision's ToTensor does; IDX labels become i64 [N]. Other
// files keep their element type (f32 or i64; f64 and i32 are converted).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_DATA_DATASET_H
#define HETERPS_RUNTIME_DATA_DATASET_H

#include "heterps/Runtime/Tensor.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace heterps::runtime::data {

struct Dataset {
  Tensor inputs, targets;
  /// Where it came from, for messages ("fashion-mnist:train").
  std::string name;

  int64_t size() const { return inputs.isNull() ? 0 : inputs.dim(0); }
};

/// Reads an IDX file (plain or gzipped): unsigned bytes, the layout of the
/// MNIST files. `scale` multiplies every value; the result is f32 with the
/// file's dimensions, or i64 when `asLabels` (then the file must be 1-D).
llvm::Expected<Tensor> readIdx(const std::string &path, bool asLabels,
                               float scale = 1);
/// The same from the file's bytes (`name` for messages). The header's size
/// is checked against the memory before anything is allocated or inflated.
llvm::Expected<Tensor> parseIdx(llvm::StringRef bytes, llvm::StringRef name,
                                bool asLabels, float scale = 1);

/// Reads one side of a data set by extension: .npy, .pb (ONNX TensorProto),
/// else IDX (images scaled to [0, 1] with a channel dimension added, or
/// labels).
llvm::Expected<Tensor> readSamples(const std::string &path, bool asLabels);

/// Loads the data set a spec names (see the file comment); checks that
/// inputs and targets have the same number of samples.
llvm::Expected<Dataset> loadDataset(llvm::StringRef spec);

/// A data set of `inputs` and `targets` (called `inputsName` and
/// `targetsName` in messages): the same number of samples, at least one,
/// and finite numbers.
llvm::Expected<Dataset> makeDataset(Tensor inputs, Tensor targets,
                                    std::string name,
                                    llvm::StringRef inputsName,
                                    llvm::StringRef targetsName);

/// A plain copy of samples [begin, begin + count) of `all` (plain, the
/// first dimension the sample).
Tensor sampleRows(const Tensor &all, int64_t begin, int64_t count);

} // namespace heterps::runtime::data

#endif // HETERPS_RUNTIME_DATA_DATASET_H
