//===- DatasetTest.cpp - IDX, .npy and .pb data sets ----------------------===//

#include "heterps/Runtime/Data/Dataset.h"
#include "heterps/Runtime/ONNXTensor.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <zlib.h>

#include <cstdlib>
#include <fstream>

using namespace heterps::runtime;
using namespace heterps::runtime::data;

namespace {

class DatasetTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("heterps-data", dir));
    dir_ = dir.str().str();
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir_); }

  /// An IDX file of unsigned bytes with `dims`, gzipped when `gzip`.
  std::string writeIdx(const std::string &name, std::vector<uint32_t> dims,
                       const std::vector<uint8_t> &values, bool gzip,
                       uint8_t type = 0x08) {
    std::string bytes = {0, 0, static_cast<char>(type),
                         static_cast<char>(dims.size())};
    for (uint32_t d : dims)
      for (int shift = 24; shift >= 0; shift -= 8)
        bytes += static_cast<char>((d >> shift) & 0xff);
    bytes.append(values.begin(), values.end());
    std::string path = dir_ + "/" + name;
    if (gzip) {
      gzFile f = gzopen(path.c_str(), "wb");
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream(path, std::ios::binary) << bytes;
    }
    return path;
  }

  std::string dir_;
};

TEST_F(DatasetTest, ReadsGzippedAndPlainIdx) {
  std::vector<uint8_t> pixels = {0, 255, 51, 102, 0, 0, 255, 255};
  for (bool gzip : {false, true}) {
    std::string images = writeIdx(gzip ? "x.gz" : "x", {2, 2, 2}, pixels, gzip);
    std::string labels = writeIdx(gzip ? "y.gz" : "y", {2}, {3, 9}, gzip);
    llvm::Expected<Dataset> set =
        loadDataset("inputs=" + images + ",targets=" + labels);
    ASSERT_TRUE(bool(set)) << llvm::toString(set.takeError());
    EXPECT_EQ(set->size(), 2);
    // Images get a channel dimension and are scaled to [0, 1].
    EXPECT_EQ(set->inputs.shape(), (Shape{2, 1, 2, 2}));
    EXPECT_FLOAT_EQ(set->inputs.data<float>()[1], 1.0f);
    EXPECT_FLOAT_EQ(set->inputs.data<float>()[2], 0.2f);
    EXPECT_EQ(set->targets.dtype(), DType::I64);
    EXPECT_EQ(set->targets.data<int64_t>()[1], 9);
  }
}

TEST_F(DatasetTest, ReadsProtobufTensors) {
  Tensor x = Tensor::fromFloats({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor y = Tensor::fromInts({3}, {0, 1, 0});
  std::string xs = dir_ + "/x.pb", ys = dir_ + "/y.pb";
  ASSERT_FALSE(bool(writeTensorFile(x, "x", xs)));
  ASSERT_FALSE(bool(writeTensorFile(y, "y", ys)));
  llvm::Expected<Dataset> set = loadDataset("inputs=" + xs + ",targets=" + ys);
  ASSERT_TRUE(bool(set)) << llvm::toString(set.takeError());
  EXPECT_EQ(set->inputs.shape(), (Shape{3, 2}));
  EXPECT_EQ(set->inputs.data<float>()[5], 6);
}

/// The error of `spec`, which must fail.
std::string errorOf(const std::string &spec) {
  llvm::Expected<Dataset> set = loadDataset(spec);
  if (set)
    return "(loaded)";
  return llvm::toString(set.takeError());
}

TEST_F(DatasetTest, ClearErrors) {
  std::string images =
      writeIdx("x", {3, 2, 2}, std::vector<uint8_t>(12), false);
  std::string labels = writeIdx("y", {2}, {1, 2}, false);
  EXPECT_NE(errorOf("inputs=" + images + ",targets=" + labels)
                .find("both need the same number of samples"),
            std::string::npos);
  std::string truncated = dir_ + "/short";
  std::ofstream(truncated, std::ios::binary)
      << std::string("\0\0\x08\x01\0\0\0\x05\x01", 9);
  EXPECT_EQ(errorOf("inputs=" + images + ",targets=" + truncated),
            truncated + ": truncated IDX file (9 bytes, the header needs 13)");
  std::string ints = writeIdx("i", {2}, {0, 0, 0, 1, 0, 0, 0, 2}, false, 0x0c);
  EXPECT_EQ(errorOf("inputs=" + images + ",targets=" + ints),
            ints + ": IDX element type 0xC is not supported (only 0x08, "
                   "unsigned bytes)");
  std::string text = dir_ + "/text";
  std::ofstream(text) << "hello";
  EXPECT_EQ(errorOf("inputs=" + text + ",targets=" + labels),
            text + ": not an IDX file (bad magic number)");
  EXPECT_EQ(errorOf("inputs=" + dir_ + "/missing,targets=" + labels),
            dir_ + "/missing: cannot open: No such file or directory");
  EXPECT_EQ(errorOf("inputs=" + images),
            "data spec 'inputs=" + images +
                "': needs both inputs=FILE and targets=FILE");
  EXPECT_EQ(errorOf("fashion-mnist:valid"),
            "data spec 'fashion-mnist:valid': expected fashion-mnist, "
            "fashion-mnist:train or fashion-mnist:test");
  EXPECT_EQ(errorOf("images=a"),
            "data spec 'images=a': unexpected 'images=a' (expected "
            "fashion-mnist[:train|:test] or inputs=FILE,targets=FILE)");
}

TEST(FashionMnist, LoadsTheDebianPackage) {
  const char *dir = std::getenv("HETERPS_FASHION_MNIST_DIR");
  std::string path =
      std::string(dir ? dir : "/usr/share/datasets/fashion-mnist") +
      "/t10k-images-idx3-ubyte.gz";
  if (!llvm::sys::fs::exists(path))
    GTEST_SKIP() << path << " not found (Debian package dataset-fashion-mnist)";
  llvm::Expected<Dataset> test = loadDataset("fashion-mnist:test");
  ASSERT_TRUE(bool(test)) << llvm::toString(test.takeError());
  EXPECT_EQ(test->inputs.shape(), (Shape{10000, 1, 28, 28}));
  EXPECT_EQ(test->targets.shape(), (Shape{10000}));
  // Ten classes, a thousand test images each.
  std::vector<int> counts(10);
  for (int64_t i = 0; i < 10000; ++i)
    ++counts.at(static_cast<size_t>(test->targets.data<int64_t>()[i]));
  for (int c : counts)
    EXPECT_EQ(c, 1000);
}

} // namespace
