//===- TensorTest.cpp - tensors and ONNX TensorProto conversion -----------===//

#include "heterps/Runtime/Tensor.h"
#include "heterps/Runtime/NonFinite.h"
#include "heterps/Runtime/NpyFile.h"
#include "heterps/Runtime/ONNXTensor.h"
#include "heterps/Runtime/Plan.h"
#include "heterps/Runtime/Weights.h"

#include "llvm/Support/FileSystem.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

using namespace heterps::runtime;

TEST(Tensor, ViewsShareAndClonesCopy) {
  Tensor t = Tensor::fromFloats({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(t.typeString(), "f32[2, 3]");
  EXPECT_EQ(t.bytes(), 24u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.rawData()) % 64, 0u);
  Tensor view = t.reshaped({3, 2});
  EXPECT_EQ(view.rawData(), t.rawData());
  EXPECT_EQ(view.shape(), (Shape{3, 2}));
  Tensor copy = t.clone();
  copy.data<float>()[0] = 42;
  EXPECT_EQ(t.data<float>()[0], 1);
  EXPECT_TRUE(Tensor().isNull());
  EXPECT_EQ(Tensor::fromInts({}, {7}).typeString(), "i64[]");
}

TEST(Tensor, PartsShareTheBufferAndKeepItAlive) {
  Tensor part;
  const float *whole;
  {
    Tensor t = Tensor::fromFloats({2, 3}, {1, 2, 3, 4, 5, 6});
    whole = t.data<float>();
    part = t.part(3 * sizeof(float), {1, 3}, nullptr);
    EXPECT_FALSE(t.ownsBufferAlone());
  }
  EXPECT_EQ(part.data<float>(), whole + 3);
  EXPECT_EQ(part.bytes(), 12u);
  EXPECT_EQ(part.data<float>()[2], 6);
  EXPECT_TRUE(part.ownsBufferAlone());
}

TEST(ONNXTensor, RoundTripsThroughFiles) {
  llvm::SmallString<128> file;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("tensor", "pb", file));
  Tensor t = Tensor::fromFloats({2, 2}, {1.5f, -2, 3, 4});
  ASSERT_FALSE(static_cast<bool>(writeTensorFile(t, "input_0", file)));
  std::string name;
  auto back = readTensorFile(file, &name);
  ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(name, "input_0");
  EXPECT_EQ(back->typeString(), "f32[2, 2]");
  EXPECT_EQ(back->data<float>()[1], -2);
  llvm::sys::fs::remove(file);
}

TEST(ONNXTensor, ConvertsTypedFieldsAndRejectsOtherTypes) {
  onnx::TensorProto p;
  p.set_name("idx");
  p.set_data_type(onnx::TensorProto::INT32);
  p.add_dims(3);
  for (int v : {1, -2, 3})
    p.add_int32_data(v);
  auto t = tensorFromProto(p, "");
  ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  EXPECT_EQ(t->typeString(), "i64[3]");
  EXPECT_EQ(t->data<int64_t>()[1], -2);

  p.add_int32_data(4);
  EXPECT_EQ(llvm::toString(tensorFromProto(p, "").takeError()),
            "tensor 'idx': holds 4 values, expected 3");
  p.set_data_type(onnx::TensorProto::DOUBLE);
  EXPECT_EQ(llvm::toString(tensorFromProto(p, "").takeError()),
            "tensor 'idx': element type DOUBLE is not supported by the "
            "runtime (FLOAT, INT64, INT32, BOOL)");
}

TEST(Tensor, CreateChecksTheShapeBeforeAllocating) {
  auto ok = Tensor::create(DType::F32, {2, 0, 3}, "t");
  ASSERT_TRUE(static_cast<bool>(ok));
  EXPECT_EQ(ok->bytes(), 0u);
  // 2^62 x 1 x 28 x 28 floats: the byte count wraps around 2^64 to 0.
  auto wraps = Tensor::create(DType::F32, {int64_t(1) << 62, 1, 28, 28}, "x");
  ASSERT_FALSE(static_cast<bool>(wraps));
  EXPECT_EQ(llvm::toString(wraps.takeError()),
            "x: shape [4611686018427387904, 1, 28, 28] has more elements "
            "than fit in 64 bits");
  auto negative = Tensor::create(DType::I64, {3, -1}, "y");
  ASSERT_FALSE(static_cast<bool>(negative));
  EXPECT_EQ(llvm::toString(negative.takeError()),
            "y: shape [3, -1] has a negative dimension");
  // More than any memory: refused with the sizes, not by an abort.
  auto huge = Tensor::create(DType::F32, {int64_t(1) << 40, 1024}, "z");
  ASSERT_FALSE(static_cast<bool>(huge));
  EXPECT_NE(llvm::toString(huge.takeError())
                .find("z (f32[1099511627776, 1024]) needs 4.0 PiB, more "
                      "than the "),
            std::string::npos);
}

TEST(Tensor, NpyOfZeroElementsWithHugeDimensionsIsEmpty) {
  // Found by fuzzing: a Fortran-order header whose shape holds a 0 next to
  // dimensions whose product overflows; the reorder's strides overflowed.
  std::string header = "{'descr': '<f4', 'fortran_order': True, 'shape': "
                       "(88888888, 88888888, 88888888, 0, 2), }";
  header += std::string(118 - 10 - header.size() - 1, ' ') + "\n";
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) +
                      char(header.size() & 0xff) + char(header.size() >> 8) +
                      header;
  auto t = parseNpy(bytes, "z.npy");
  ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  EXPECT_EQ(t->numElements(), 0);
  EXPECT_EQ(t->shape(), (Shape{88888888, 88888888, 88888888, 0, 2}));
}

// A weight of infinities only (an attention mask's -inf) is a constant:
// the trained-weights check passes it, and still names an infinity or a
// NaN among other values.
TEST(Weights, InfiniteFillsAreConstantsNotDivergence) {
  float inf = std::numeric_limits<float>::infinity();
  Tensor fill = Tensor::fromFloats({}, {-inf});
  Tensor mixed = Tensor::fromFloats({2}, {1.f, inf});
  EXPECT_TRUE(isInfiniteFill(fill));
  EXPECT_FALSE(isInfiniteFill(mixed));
  EXPECT_FALSE(isInfiniteFill(Tensor::fromFloats({1}, {std::nanf("")})));
  plan::Plan plan;
  plan.add_values()->set_name("mask_fill");
  plan.add_values()->set_name("w");
  EXPECT_FALSE(bool(checkFiniteWeights(plan, {{0, fill}})));
  EXPECT_EQ(llvm::toString(checkFiniteWeights(plan, {{1, mixed}})),
            "parameter 'w' holds 1 infinite of its 2 values: training "
            "diverged (a NaN or infinity in the data or an overflow in the "
            "model)");
}
