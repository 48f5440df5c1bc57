//===- Dataset.cpp - training and evaluation data in memory ---------------===//

#include "heterps/Runtime/Data/Dataset.h"
#include "heterps/Runtime/MemoryLimit.h"
#include "heterps/Runtime/NonFinite.h"
#include "heterps/Runtime/NpyFile.h"
#include "heterps/Runtime/ONNXTensor.h"
#include "heterps/Support/PrintableLine.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <zlib.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

using namespace heterps;
using namespace heterps::runtime;
using namespace heterps::runtime::data;

static llvm::Error fail(const llvm::Twine &what) {
  return heterps::printableError(what);
}

/// The bytes of an IDX file, inflated when gzipped. Decompression stops at
/// what the header claims (checked against the memory first), so a gzip
/// bomb costs no more than a file of the size it admits to.
class IdxBytes {
public:
  IdxBytes(llvm::StringRef file, llvm::StringRef name)
      : file(file), name(name.str()), gzipped(file.starts_with("\x1f\x8b")) {
    if (!gzipped)
      return;
    stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(file.data()));
    stream.avail_in = static_cast<uInt>(
        std::min<size_t>(file.size(), std::numeric_limits<uInt>::max()));
    // 16 + MAX_WBITS: a gzip header, not a raw zlib stream.
    initialised = inflateInit2(&stream, 16 + MAX_WBITS) == Z_OK;
  }
  ~IdxBytes() {
    if (initialised)
      inflateEnd(&stream);
  }

  /// The most bytes the file can yield: its size, or for gzip the most
  /// that deflate's 1032:1 ratio can expand it to.
  uint64_t mostBytes() const {
    return gzipped ? uint64_t(file.size()) * 1032 : file.size();
  }

  /// The next `count` bytes into `out`.
  llvm::Error read(uint8_t *out, size_t count) {
    if (count == 0)
      return llvm::Error::success();
    if (!gzipped) {
      if (file.size() - offset < count)
        return fail(name + ": truncated IDX file (" + llvm::Twine(file.size()) +
                    " bytes, the header needs " + llvm::Twine(offset + count) +
                    ")");
      std::memcpy(out, file.data() + offset, count);
      offset += count;
      return llvm::Error::success();
    }
    if (!initialised)
      return fail(name + ": cannot start gzip decompression");
    while (count > 0) {
      uInt chunk = static_cast<uInt>(std::min<size_t>(count, 1u << 30));
      stream.next_out = out;
      stream.avail_out = chunk;
      int status = inflate(&stream, Z_NO_FLUSH);
      size_t got = chunk - stream.avail_out;
      out += got;
      count -= got;
      if (count == 0)
        break;
      if (status == Z_STREAM_END || (status == Z_BUF_ERROR && got == 0))
        return fail(name + ": truncated IDX file (the gzip data ends before "
                           "the header's size)");
      if (status != Z_OK)
        return fail(
            name + ": bad gzip data (" +
            (stream.msg ? stream.msg : "zlib error " + std::to_string(status)) +
            ")");
    }
    return llvm::Error::success();
  }

private:
  llvm::StringRef file;
  std::string name;
  bool gzipped;
  bool initialised = false;
  size_t offset = 0;
  z_stream stream{};
};

llvm::Expected<Tensor> data::readIdx(const std::string &path, bool asLabels,
                                     float scale) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail(path + ": cannot open: " + buffer.getError().message());
  return parseIdx((*buffer)->getBuffer(), path, asLabels, scale);
}

llvm::Expected<Tensor> data::parseIdx(llvm::StringRef file,
                                      llvm::StringRef name, bool asLabels,
                                      float scale) {
  IdxBytes in(file, name);
  // Magic: two zero bytes, the element type (0x08: unsigned byte) and the
  // number of dimensions; then each dimension, 32-bit big-endian.
  uint8_t magic[4];
  if (llvm::Error e = in.read(magic, 4))
    return std::move(e);
  if (magic[0] != 0 || magic[1] != 0)
    return fail(name + ": not an IDX file (bad magic number)");
  if (magic[2] != 0x08)
    return fail(name + ": IDX element type 0x" + llvm::utohexstr(magic[2]) +
                " is not supported (only 0x08, unsigned bytes)");
  int rank = magic[3];
  if (rank < 1 || (asLabels && rank != 1))
    return fail(name + ": IDX " +
                (asLabels ? "labels must be 1-D" : "file has no dimensions") +
                ", got " + llvm::Twine(rank) + " dimensions");
  Shape shape;
  for (int d = 0; d < rank; ++d) {
    uint8_t b[4];
    if (llvm::Error e = in.read(b, 4))
      return std::move(e);
    shape.push_back(int64_t(b[0]) << 24 | int64_t(b[1]) << 16 |
                    int64_t(b[2]) << 8 | int64_t(b[3]));
  }
  // The sizes are checked before anything is read or allocated: against
  // what the file can hold, then (8 or 4 bytes per element) the memory.
  llvm::Expected<uint64_t> count = checkedByteSize(shape, 1);
  if (!count)
    return fail(name + ": " + llvm::toString(count.takeError()));
  if (*count > in.mostBytes())
    return fail(name + ": the IDX header claims " + shapeToString(shape) +
                " bytes, more than the file's " + llvm::Twine(file.size()) +
                " bytes can hold");
  llvm::Expected<Tensor> t = Tensor::create(asLabels ? DType::I64 : DType::F32,
                                            shape, name + ": the IDX data");
  if (!t)
    return t.takeError();
  std::vector<uint8_t> bytes(*count);
  if (llvm::Error e = in.read(bytes.data(), *count))
    return std::move(e);
  if (asLabels) {
    for (size_t i = 0; i < *count; ++i)
      t->data<int64_t>()[i] = bytes[i];
    return t;
  }
  for (size_t i = 0; i < *count; ++i)
    t->data<float>()[i] = scale * bytes[i];
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

/// An error naming the first sample of `t` that holds a NaN or an infinity:
/// it would make the first layer's weights NaN, and a Relu or MaxPool after
/// it can hide that from the loss.
static llvm::Error checkFinite(const Tensor &t, llvm::StringRef spec,
                               llvm::StringRef file) {
  if (t.dtype() != DType::F32)
    return llvm::Error::success();
  int64_t i = findNonFinite(t.data<float>(), t.numElements());
  if (i < 0)
    return llvm::Error::success();
  int64_t perSample = t.numElements() / t.dim(0);
  float bad = t.data<float>()[i];
  return fail("data spec '" + spec + "': " + file + ": sample " +
              llvm::Twine(i / perSample) + " holds " +
              (std::isnan(bad) ? "NaN" : "an infinity") + " (element " +
              llvm::Twine(i % perSample) + "); training needs finite numbers");
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
  return makeDataset(std::move(*x), std::move(*y), set.name, inputs, targets);
}

llvm::Expected<Dataset> data::makeDataset(Tensor x, Tensor y, std::string name,
                                          llvm::StringRef inputsName,
                                          llvm::StringRef targetsName) {
  if (x.rank() < 1 || y.rank() < 1 || x.dim(0) != y.dim(0))
    return fail("data spec '" + name + "': " + inputsName + " holds " +
                x.typeString() + " but " + targetsName + " holds " +
                y.typeString() +
                "; both need the same number of samples "
                "(first dimension)");
  if (x.dim(0) == 0)
    return fail("data spec '" + name + "': " + inputsName +
                " holds no samples");
  for (auto [what, t] : {std::pair(inputsName, &x), std::pair(targetsName, &y)})
    if (llvm::Error e = checkFinite(*t, name, what))
      return std::move(e);
  return Dataset{std::move(x), std::move(y), std::move(name)};
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
