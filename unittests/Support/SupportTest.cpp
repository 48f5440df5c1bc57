//===- SupportTest.cpp - one-line messages and the nesting bound ----------===//

#include "heterps/Support/NestingDepth.h"
#include "heterps/Support/PrintableLine.h"

#include "gtest/gtest.h"

#include <fstream>
#include <sstream>
#include <string>

using namespace heterps;

namespace {

std::string nested(size_t depth) {
  return "{\"a\": " + std::string(depth, '[') + std::string(depth, ']') + "}";
}

std::string fileText(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace

TEST(PrintableLine, EscapesControlCharactersAndCutsLongText) {
  EXPECT_EQ(printableLine("node 'a\nb\x1b[31m\t'"), "node 'a\\nb\\x1b[31m\\t'");
  EXPECT_EQ(printableLine(std::string("a\0b", 3)), "a\\x00b");
  // UTF-8 names stay readable.
  EXPECT_EQ(printableLine("conv_\xc3\xa9"), "conv_\xc3\xa9");
  EXPECT_EQ(printableLine(std::string(30, 'x'), 10),
            "xxxxxxxxxx... (20 more bytes)");
}

TEST(NestingDepth, BoundsJsonAndYamlNesting) {
  EXPECT_LE(nestingBound(nested(10)), 12u);
  EXPECT_GE(nestingBound(nested(10)), 11u);
  EXPECT_FALSE(bool(checkNestingDepth(nested(900), "p.json")));
  llvm::Error deep = checkNestingDepth(nested(100000), "p.json");
  ASSERT_TRUE(bool(deep));
  EXPECT_EQ(llvm::toString(std::move(deep)),
            "p.json: nested more than 1000 levels deep (brackets, "
            "indentation or '-' entries); not read");
  // Block YAML: compact sequences and indentation count.
  std::string compact = "a:\n  ";
  for (int i = 0; i < 2000; ++i)
    compact += "- ";
  EXPECT_GT(nestingBound(compact + "x\n"), 2000u);
  EXPECT_GE(nestingBound("a:\n" + std::string(1500, ' ') + "b: 1\n"), 1500u);
}

TEST(NestingDepth, QuotesAndCommentsHideNoBrackets) {
  // Brackets inside a JSON string or a YAML comment are not nesting...
  EXPECT_LE(nestingBound("{\"k\": \"[[[[[[[[\"}"), 2u);
  EXPECT_LE(nestingBound("a: 1 # [[[[[[[[\n"), 2u);
  // ...but a quote or '#' inside a plain scalar starts nothing, and a
  // quote ends with its line: neither can hide a real nesting.
  std::string hidden = "a: [x\"" + std::string(5000, '[') + "\n";
  EXPECT_GT(nestingBound(hidden), 5000u);
  EXPECT_GT(nestingBound("a: [x#" + std::string(5000, '[') + "\n"), 5000u);
  EXPECT_GE(nestingBound("a: \"b\n" + std::string(5000, '[') + "\n"), 5000u);
}

TEST(NestingDepth, EveryExampleSpecIsShallow) {
  for (const char *file : {"examples/clusters/heterps-paper.yaml",
                           "examples/clusters/this-machine-cpu.yaml",
                           "examples/placements/fashion_cnn-v100-cpu.json",
                           "test/Transforms/Inputs/two-types-profile.json"}) {
    std::string text = fileText(std::string(HETERPS_SOURCE_DIR) + "/" + file);
    ASSERT_FALSE(text.empty()) << file;
    EXPECT_LT(nestingBound(text), 20u) << file;
  }
}
