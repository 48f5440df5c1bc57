//===- Dataset.cpp - training and evaluation data in memory ---------------===//

#include "heterps/Runtime/Data/Dataset.h"
#include "heterps/Runtime/NpyFile.h"
#include "heterps/Runtime/ONNXTensor.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <memory>

using namespace heterps::runtime;
using namespace heterps::runtime::data;

static llvm::Error fail(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

/// Reads exactly `bytes` bytes, or says why not.
static llvm::Error readExactly(gzFile file, void *out, size_t bytes,
                               const std::string &path) {
  auto *dst = static_cast<uint8_t *>(out);
  while (bytes > 0) {
    unsigned chunk = static_cast<unsigned>(std::min<size_t>(bytes, 1u << 30));
    int got = gzread(file, dst, chunk);
    if (got < 0) {
      int code;
      return fail(path + ": " + gzerror(file, &code));
    }
    if (got == 0)
      return fail(path + ": truncated IDX file");
    dst += got;
    bytes -= static_cast<size_t>(got);
  }
  return llvm::Error::success();
}

llvm::Expected<Tensor> data::readIdx(const std::string &path, bool asLabels,
                                     float scale) {
  // gzread reads gzipped and plain files alike.
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"),
                                                  gzclose);
  if (!file)
    return fail(path + ": cannot open");
  // Magic: two zero bytes, the element type (0x08: unsigned byte) and the
  // number of dimensions; then each dimension, 32-bit big-endian.
  uint8_t magic[4];
  if (llvm::Error e = readExactly(file.get(), magic, 4, path))
    return std::move(e);
  if (magic[0] != 0 || magic[1] != 0)
    return fail(path + ": not an IDX file (bad magic number)");
  if (magic[2] != 0x08)
    return fail(path + ": IDX element type 0x" + llvm::utohexstr(magic[2]) +
                " is not supported (only 0x08, "
                "unsigned bytes)");
  int rank = magic[3];
  if (rank < 1 || (asLabels && rank != 1))
    return fail(path + ": IDX " +
                (asLabels ? "labels must be 1-D"
                          : "file "
                            "has no dimensions") +
                ", got " + llvm::Twine(rank) + " dimensions");
  Shape shape;
  int64_t count = 1;
  for (int d = 0; d < rank; ++d) {
    uint8_t b[4];
    if (llvm::Error e = readExactly(file.get(), b, 4, path))
      return std::move(e);
    int64_t n = int64_t(b[0]) << 24 | int64_t(b[1]) << 16 | int64_t(b[2]) << 8 |
                int64_t(b[3]);
    shape.push_back(n);
    count *= n;
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(count));
  if (llvm::Error e = readExactly(file.get(), bytes.data(), bytes.size(), path))
    return std::move(e);
  if (asLabels) {
    Tensor t(DType::I64, shape);
    for (int64_t i = 0; i < count; ++i)
      t.data<int64_t>()[i] = bytes[static_cast<size_t>(i)];
    return t;
  }
  Tensor t(DType::F32, shape);
  for (int64_t i = 0; i < count; ++i)
    t.data<float>()[i] = scale * bytes[static_cast<size_t>(i)];
  return t;
}

llvm::Expected<Tensor> data::readSamples(const std::string &path,
                                         bool asLabels) {
  llvm::StringRef ext = llvm::sys::path::extension(path);
  if (ext == ".npy")
    return readNpyFile(path);
  if (ext == ".pb")
    return runtime::readTensorFile(path);
  llvm::Expected<Tensor> t = readIdx(path, asLabels, asLabels ? 1 : 1 / 255.f);
  if (!t || asLabels || t->rank() != 3)
    return t;
  // [N, rows, cols] images: add the channel dimension convolutions expect.
  return t->reshaped({t->dim(0), 1, t->dim(1), t->dim(2)});
}

/// Where Debian's dataset-fashion-mnist puts its files.
static std::string fashionMnistDir() {
  if (const char *dir = std::getenv("HETERPS_FASHION_MNIST_DIR"))
    return dir;
  return "/usr/share/datasets/fashion-mnist";
}

llvm::Expected<Dataset> data::loadDataset(llvm::StringRef spec) {
  Dataset set;
  set.name = spec.str();
  std::string inputs, targets;
  if (spec.consume_front("fashion-mnist")) {
    std::string prefix;
    if (spec.empty() || spec == ":train")
      prefix = "train";
    else if (spec == ":test")
      prefix = "t10k";
    else
      return fail("data spec '" + set.name +
                  "': expected fashion-mnist, fashion-mnist:train or "
                  "fashion-mnist:test");
    std::string dir = fashionMnistDir();
    inputs = dir + "/" + prefix + "-images-idx3-ubyte.gz";
    targets = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
    if (!llvm::sys::fs::exists(inputs))
      return fail("data spec '" + set.name + "': " + inputs +
                  " not found (install Debian's dataset-fashion-mnist)");
  } else {
    llvm::SmallVector<llvm::StringRef> parts;
    spec.split(parts, ',');
    for (llvm::StringRef part : parts) {
      auto [key, value] = part.split('=');
      if (key == "inputs" && !value.empty())
        inputs = value.str();
      else if (key == "targets" && !value.empty())
        targets = value.str();
      else
        return fail("data spec '" + set.name + "': unexpected '" + part +
                    "' (expected fashion-mnist[:train|:test] or "
                    "inputs=FILE,targets=FILE)");
    }
    if (inputs.empty() || targets.empty())
      return fail("data spec '" + set.name +
                  "': needs both inputs=FILE and targets=FILE");
  }
  llvm::Expected<Tensor> x = readSamples(inputs, /*asLabels=*/false);
  if (!x)
    return x.takeError();
  llvm::Expected<Tensor> y = readSamples(targets, /*asLabels=*/true);
  if (!y)
    return y.takeError();
  if (x->rank() < 1 || y->rank() < 1 || x->dim(0) != y->dim(0))
    return fail("data spec '" + set.name + "': " + inputs + " holds " +
                x->typeString() + " but " + targets + " holds " +
                y->typeString() +
                "; both need the same number of samples "
                "(first dimension)");
  set.inputs = std::move(*x);
  set.targets = std::move(*y);
  return set;
}

Tensor data::sampleRows(const Tensor &all, int64_t begin, int64_t count) {
  Shape shape = all.shape();
  shape[0] = count;
  Tensor part(all.dtype(), shape);
  size_t rowBytes = all.dim(0) ? all.bytes() / all.dim(0) : 0;
  std::memcpy(part.rawData(),
              static_cast<const uint8_t *>(all.rawData()) + begin * rowBytes,
              count * rowBytes);
  return part;
}
