//===- PlanTest.cpp - verifying and loading plans -------------------------===//

#include "PlanBuilder.h"

#include "heterps/Runtime/Plan.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <fstream>

using namespace heterps::runtime;
using namespace heterps::runtime::testutil;

namespace {

/// x -> Relu -> y, valid.
plan::Plan validPlan() {
  PlanBuilder b;
  int x = b.input("x", {-1, 4});
  b.output("y", b.op("Relu", {x}, {-1, 4}));
  return b.build();
}

/// The error verifyPlan reports after `edit`, or "".
std::string errorAfter(const std::function<void(plan::Plan &)> &edit) {
  plan::Plan p = validPlan();
  edit(p);
  llvm::Error e = verifyPlan(p, "p.plan");
  return e ? llvm::toString(std::move(e)) : "";
}

} // namespace

TEST(Plan, ValidPlanVerifies) {
  EXPECT_EQ(errorAfter([](plan::Plan &) {}), "");
}

TEST(Plan, VerifierMessages) {
  EXPECT_EQ(errorAfter([](plan::Plan &p) { p.set_version(2); }),
            "p.plan: plan format version 2 is not supported (this runtime "
            "reads version 1)");
  EXPECT_EQ(errorAfter([](plan::Plan &p) {
              p.mutable_values(0)->set_dtype(plan::DATA_TYPE_UNDEFINED);
            }),
            "p.plan: value 0 'x' has unsupported element type 0 (FLOAT, INT64 "
            "and BOOL are supported)");
  EXPECT_EQ(
      errorAfter([](plan::Plan &p) { p.mutable_values(0)->set_dims(1, -2); }),
      "p.plan: value 0 'x' has invalid dimension -2");
  EXPECT_EQ(
      errorAfter([](plan::Plan &p) { p.mutable_inputs(0)->set_name(""); }),
      "p.plan: graph input 0 has no name");
  EXPECT_EQ(errorAfter([](plan::Plan &p) { *p.add_inputs() = p.inputs(0); }),
            "p.plan: graph input name 'x' is used twice");
  EXPECT_EQ(
      errorAfter([](plan::Plan &p) { p.mutable_inputs(0)->set_value(9); }),
      "p.plan: graph input 'x' refers to value 9, but the plan has 2 "
      "values");
  EXPECT_EQ(errorAfter([](plan::Plan &p) { p.clear_outputs(); }),
            "p.plan: the plan has no graph outputs");
  EXPECT_EQ(errorAfter([](plan::Plan &p) { p.mutable_ops(0)->set_type(""); }),
            "p.plan: op 0 'Relu0' (no type) has no type");
  EXPECT_EQ(
      errorAfter([](plan::Plan &p) { p.mutable_ops(0)->set_inputs(0, 5); }),
      "p.plan: op 0 'Relu0' (Relu): input 0 refers to value 5, but the "
      "plan has 2 values");
  EXPECT_EQ(
      errorAfter([](plan::Plan &p) { p.mutable_ops(0)->set_inputs(0, 1); }),
      "p.plan: op 0 'Relu0' (Relu): input 0 (value 1 'Relu0.out') is not "
      "defined by a graph input, a weight or an earlier op");
  EXPECT_EQ(
      errorAfter([](plan::Plan &p) { p.mutable_ops(0)->set_outputs(0, 0); }),
      "p.plan: op 0 'Relu0' (Relu) defines value 0, which is already "
      "defined");
  EXPECT_EQ(
      errorAfter([](plan::Plan &p) { p.mutable_ops(0)->clear_outputs(); }),
      "p.plan: op 0 'Relu0' (Relu) has no outputs");
  EXPECT_EQ(errorAfter([](plan::Plan &p) {
              for (int i = 0; i < 2; ++i) {
                plan::Attribute *a = p.mutable_ops(0)->add_attributes();
                a->set_name("alpha");
                a->set_f(1.f);
              }
            }),
            "p.plan: op 0 'Relu0' (Relu): attribute 'alpha' is given twice");
  EXPECT_EQ(errorAfter([](plan::Plan &p) {
              p.mutable_ops(0)->add_attributes()->set_name("alpha");
            }),
            "p.plan: op 0 'Relu0' (Relu): attribute 'alpha' has no value");
  EXPECT_EQ(
      errorAfter([](plan::Plan &p) { p.mutable_outputs(0)->set_value(7); }),
      "p.plan: graph output 'y' refers to value 7, but the plan has 2 "
      "values");
  EXPECT_EQ(errorAfter([](plan::Plan &p) {
              p.add_values()->set_dtype(plan::FLOAT);
              p.mutable_outputs(0)->set_value(2);
            }),
            "p.plan: graph output 'y' (value 2) is never defined");
}

TEST(Plan, WeightMessages) {
  auto withWeight =
      [](const std::function<void(plan::Plan &, plan::Weight &)> &edit) {
        return errorAfter([&](plan::Plan &p) {
          plan::Value *v = p.add_values();
          v->set_name("w");
          v->set_dtype(plan::FLOAT);
          v->add_dims(4);
          plan::Weight *w = p.add_weights();
          w->set_value(2);
          w->set_raw_data(std::string(16, '\0'));
          edit(p, *w);
        });
      };
  EXPECT_EQ(withWeight([](plan::Plan &, plan::Weight &) {}), "");
  EXPECT_EQ(
      withWeight([](plan::Plan &, plan::Weight &w) { w.set_raw_data("abc"); }),
      "p.plan: weight 0 ('w') holds 3 bytes, expected 16");
  EXPECT_EQ(
      withWeight([](plan::Plan &, plan::Weight &w) { w.set_initializer("w"); }),
      "p.plan: weight 0 ('w') refers to initializer 'w', but the plan "
      "names no model file");
  EXPECT_EQ(withWeight([](plan::Plan &, plan::Weight &w) { w.clear_source(); }),
            "p.plan: weight 0 ('w') has neither an initializer name nor data");
  EXPECT_EQ(withWeight([](plan::Plan &p, plan::Weight &) {
              p.mutable_values(2)->set_dims(0, -1);
            }),
            "p.plan: weight 0 ('w') has a dynamic shape");
  EXPECT_EQ(withWeight([](plan::Plan &p, plan::Weight &w) {
              p.mutable_values(0)->set_dims(0, 4);
              w.set_value(0);
              w.set_raw_data(std::string(64, '\0'));
            }),
            "p.plan: weight 0 ('x') defines value 0, which is already "
            "defined");
}

TEST(Plan, StageMessages) {
  PlanBuilder b;
  int x = b.input("x", {4});
  int y = b.op("Relu", {x}, {4});
  b.place("cpu", 1);
  int z = b.op("Relu", {y}, {4});
  b.place("cpu", 0);
  b.output("z", z);
  llvm::Error e = verifyPlan(b.build(), "p.plan");
  EXPECT_EQ(llvm::toString(std::move(e)),
            "p.plan: op 1 'Relu1' (Relu) is in stage 0 but follows an op of "
            "stage 1 (ops must be ordered by stage)");

  plan::Plan p = validPlan();
  p.add_stages()->set_replicas(1);
  p.mutable_ops(0)->set_stage(1);
  EXPECT_EQ(llvm::toString(verifyPlan(p, "p.plan")),
            "p.plan: op 0 'Relu0' (Relu) is in stage 1, but the plan has 1 "
            "stages");
  p.mutable_ops(0)->set_stage(0);
  p.mutable_stages(0)->set_replicas(0);
  EXPECT_EQ(llvm::toString(verifyPlan(p, "p.plan")),
            "p.plan: stage 0 has 0 replicas (at least 1 is needed)");
}

namespace {
class PlanFiles : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("heterps-plans", dir));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }
  std::string path(const std::string &name) const {
    llvm::SmallString<128> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }
  llvm::SmallString<128> dir;
};
} // namespace

TEST_F(PlanFiles, RoundTripsBinaryAndText) {
  plan::Plan p = validPlan();
  for (const char *name : {"plan.pb", "plan.pbtxt"}) {
    ASSERT_FALSE(static_cast<bool>(savePlan(p, path(name))));
    auto loaded = loadPlan(path(name));
    ASSERT_TRUE(static_cast<bool>(loaded))
        << llvm::toString(loaded.takeError());
    EXPECT_EQ(loaded->SerializeAsString(), p.SerializeAsString()) << name;
  }
}

TEST_F(PlanFiles, LoadErrors) {
  auto errorOf = [](const std::string &file) {
    auto plan = loadPlan(file);
    return plan ? "" : llvm::toString(plan.takeError());
  };
  EXPECT_EQ(errorOf(path("none.pb")),
            path("none.pb") + ": cannot read plan: No such file or directory");
  std::ofstream(path("bad.pbtxt")) << "version: 1\nops { typo: 3 }\n";
  EXPECT_EQ(errorOf(path("bad.pbtxt")),
            path("bad.pbtxt") +
                ": invalid plan text: line 2, column 11: Message type "
                "\"heterps.runtime.plan.Op\" has no field named \"typo\".");
  std::ofstream(path("bad.pb")) << "\xff\xff\xff";
  EXPECT_EQ(errorOf(path("bad.pb")),
            path("bad.pb") + ": not a binary plan (protobuf parse failed)");
  std::ofstream(path("old.pbtxt")) << "version: 0\n";
  EXPECT_EQ(errorOf(path("old.pbtxt")),
            path("old.pbtxt") + ": plan format version 0 is not supported "
                                "(this runtime reads version 1)");
}
