//===- PlanBuilder.h - building plans by hand in tests ----------*- C++ -*-===//
//
// Tests build small plans directly (the runtime does not depend on the ONNX
// importer or the compiler):
//
//   PlanBuilder b;
//   int x = b.input("x", {1, 3, 8, 8});
//   int w = b.weight("w", wTensor);
//   int y = b.op("Conv", {x, w}, {1, 4, 8, 8}, Attrs().ints("pads",
//   {1,1,1,1})); b.output("y", y); plan::Plan plan = b.build();
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_UNITTESTS_RUNTIME_PLANBUILDER_H
#define HETERPS_UNITTESTS_RUNTIME_PLANBUILDER_H

#include "heterps/Runtime/Plan.pb.h"
#include "heterps/Runtime/Tensor.h"

#include <string>
#include <vector>

namespace heterps::runtime::testutil {

/// Attributes of one op, built by chaining.
class Attrs {
public:
  Attrs &i(const std::string &name, int64_t value);
  Attrs &f(const std::string &name, float value);
  Attrs &s(const std::string &name, const std::string &value);
  Attrs &ints(const std::string &name, std::vector<int64_t> values);
  Attrs &floats(const std::string &name, std::vector<float> values);

  std::vector<plan::Attribute> list;
};

class PlanBuilder {
public:
  /// A graph input; returns its value index.
  int input(const std::string &name, Shape dims, DType type = DType::F32);
  /// An inline weight holding `t`.
  int weight(const std::string &name, const Tensor &t);
  /// A weight read from initializer `initializer` of the plan's model.
  int weightRef(const std::string &initializer, Shape dims,
                DType type = DType::F32);
  /// An op with one output of `outDims`; returns the output's value index.
  int op(const std::string &type, std::vector<int> inputs, Shape outDims,
         const Attrs &attrs = Attrs(), DType outType = DType::F32);
  /// An op with an output per entry of `outDims`; returns their indices.
  std::vector<int> multiOp(const std::string &type, std::vector<int> inputs,
                           std::vector<Shape> outDims,
                           const Attrs &attrs = Attrs());
  /// Places the last op.
  PlanBuilder &place(const std::string &device, int stage);
  void output(const std::string &name, int value);

  plan::Plan build() const { return plan; }
  plan::Plan &get() { return plan; }

private:
  int value(const std::string &name, const Shape &dims, DType type);

  plan::Plan plan = [] {
    plan::Plan p;
    p.set_version(1);
    return p;
  }();
};

} // namespace heterps::runtime::testutil

#endif // HETERPS_UNITTESTS_RUNTIME_PLANBUILDER_H
