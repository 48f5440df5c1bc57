//===- ProfileTest.cpp - reading measured per-layer costs -----------------===//

#include "heterps/Planner/Profile.h"

#include "gtest/gtest.h"

using namespace heterps::planner;

namespace {

/// The error parseProfile gives for `json`, or "" if it parses.
std::string errorOf(llvm::StringRef json) {
  llvm::Expected<Profile> profile = parseProfile(json, "p.json");
  if (profile)
    return "";
  return llvm::toString(profile.takeError());
}

constexpr const char *kWhere = "p.json: node 'conv1', device type 'v100': ";

} // namespace

TEST(Profile, ParsesAValidProfile) {
  llvm::Expected<Profile> profile = parseProfile(R"({
    "conv1": {
      "v100": {"oct_s": 0.002, "odt_s": 0.0005, "alpha": 0.9, "beta": 0.4,
               "b0": 32},
      "xeon": {"oct_s": 0.05, "odt_s": 0, "alpha": 1, "beta": 0, "b0": 1}
    },
    "fc": {"v100": {"oct_s": 1e-4, "odt_s": 2e-3, "alpha": 0, "beta": 1,
                    "b0": 256}}
  })",
                                                 "p.json");
  ASSERT_TRUE(static_cast<bool>(profile))
      << llvm::toString(profile.takeError());
  ASSERT_EQ(profile->size(), 2u);
  ASSERT_EQ(profile->at("conv1").size(), 2u);

  const LayerCost &c = profile->at("conv1").at("v100");
  EXPECT_DOUBLE_EQ(c.oct, 0.002);
  EXPECT_DOUBLE_EQ(c.odt, 0.0005);
  EXPECT_DOUBLE_EQ(c.alpha, 0.9);
  EXPECT_DOUBLE_EQ(c.beta, 0.4);
  EXPECT_DOUBLE_EQ(c.b0, 32);

  const LayerCost &x = profile->at("conv1").at("xeon");
  EXPECT_DOUBLE_EQ(x.oct, 0.05);
  EXPECT_EQ(x.odt, 0.0);
  EXPECT_EQ(x.alpha, 1.0);
  EXPECT_EQ(x.beta, 0.0);
  EXPECT_EQ(x.b0, 1.0);

  const LayerCost &f = profile->at("fc").at("v100");
  EXPECT_DOUBLE_EQ(f.oct, 1e-4);
  EXPECT_DOUBLE_EQ(f.odt, 2e-3);
  EXPECT_DOUBLE_EQ(f.b0, 256);

  // Measured costs feed the formulas: B = 64, k = 2 on conv1/v100:
  // CT = 0.002 * (64/32) * (0.1 + 0.9/2) = 0.004 * 0.55 = 0.0022
  // DT = 0.0005 * 2 * (0.6 + 0.4/2) = 0.001 * 0.8 = 0.0008
  StageTimes t = layerTimes(c, 64, 2);
  EXPECT_NEAR(t.ct, 0.0022, 1e-17);
  EXPECT_NEAR(t.dt, 0.0008, 1e-17);
}

TEST(Profile, EmptyObjectIsAnEmptyProfile) {
  llvm::Expected<Profile> profile = parseProfile("{}", "p.json");
  ASSERT_TRUE(static_cast<bool>(profile))
      << llvm::toString(profile.takeError());
  EXPECT_TRUE(profile->empty());
}

TEST(Profile, UnknownKey) {
  EXPECT_EQ(errorOf(R"({"conv1": {"v100": {"oct_s": 0.002, "odt_s": 0.0005,
                "alpha": 0.9, "beta": 0.4, "b0": 32, "gamma": 1}}})"),
            std::string(kWhere) + "unknown key 'gamma'");
}

TEST(Profile, MissingField) {
  EXPECT_EQ(errorOf(R"({"conv1": {"v100": {"oct_s": 0.002, "odt_s": 0.0005,
                "alpha": 0.9, "b0": 32}}})"),
            std::string(kWhere) + "missing number 'beta'");
  // A field that is not a number counts as missing.
  EXPECT_EQ(errorOf(R"({"conv1": {"v100": {"oct_s": "fast", "odt_s": 0.0005,
                "alpha": 0.9, "beta": 0.4, "b0": 32}}})"),
            std::string(kWhere) + "missing number 'oct_s'");
}

TEST(Profile, OutOfRangeValues) {
  const std::string rangeError =
      std::string(kWhere) +
      "need oct_s, odt_s >= 0, b0 > 0 and alpha, beta in [0, 1]";
  EXPECT_EQ(errorOf(R"({"conv1": {"v100": {"oct_s": 0.002, "odt_s": 0.0005,
                "alpha": 1.5, "beta": 0.4, "b0": 32}}})"),
            rangeError);
  EXPECT_EQ(errorOf(R"({"conv1": {"v100": {"oct_s": 0.002, "odt_s": 0.0005,
                "alpha": -0.1, "beta": 0.4, "b0": 32}}})"),
            rangeError);
  EXPECT_EQ(errorOf(R"({"conv1": {"v100": {"oct_s": 0.002, "odt_s": 0.0005,
                "alpha": 0.9, "beta": 1.01, "b0": 32}}})"),
            rangeError);
  EXPECT_EQ(errorOf(R"({"conv1": {"v100": {"oct_s": -1, "odt_s": 0.0005,
                "alpha": 0.9, "beta": 0.4, "b0": 32}}})"),
            rangeError);
  EXPECT_EQ(errorOf(R"({"conv1": {"v100": {"oct_s": 0.002, "odt_s": 0.0005,
                "alpha": 0.9, "beta": 0.4, "b0": 0}}})"),
            rangeError);
}

TEST(Profile, InvalidJson) {
  EXPECT_EQ(errorOf(R"({"conv1": )"),
            "p.json: invalid JSON: [1:10, byte=10]: Unexpected EOF");
}

TEST(Profile, WrongShapes) {
  EXPECT_EQ(errorOf("[1, 2]"), "p.json: expected an object keyed by node name");
  EXPECT_EQ(errorOf(R"({"conv1": 3})"),
            "p.json: node 'conv1': expected an object keyed by device type");
  EXPECT_EQ(errorOf(R"({"conv1": {"v100": [0.002]}})"),
            std::string(kWhere) + "expected an object");
}

TEST(Profile, LoadReportsAMissingFile) {
  llvm::Expected<Profile> profile = loadProfile("/nonexistent/p.json");
  ASSERT_FALSE(static_cast<bool>(profile));
  std::string error = llvm::toString(profile.takeError());
  EXPECT_EQ(error.rfind("/nonexistent/p.json: cannot open: ", 0), 0u) << error;
}
