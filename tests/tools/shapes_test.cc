// bench/shapes.cpp, the benchmark shape list the tools and benchmarks share: the list built into
// the programs is the repository's bench/shapes.json, read in full; a file given by path is read
// instead; errors name the file.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <stdexcept>
#include <string>

#include "shapes.hpp"
#include "tools_support.hpp"

namespace convjit::testing::tools {
namespace {

namespace cb = convjit_bench;

void expect_same_conv(const cb::ConvShape& a, const cb::ConvShape& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.rank, b.rank) << a.name;
  EXPECT_EQ(a.n, b.n) << a.name;
  EXPECT_EQ(a.ic, b.ic) << a.name;
  EXPECT_EQ(a.oc, b.oc) << a.name;
  EXPECT_EQ(a.groups, b.groups) << a.name;
  EXPECT_EQ(a.in, b.in) << a.name;
  EXPECT_EQ(a.k, b.k) << a.name;
  EXPECT_EQ(a.stride, b.stride) << a.name;
  EXPECT_EQ(a.pad, b.pad) << a.name;
  EXPECT_EQ(a.dilation, b.dilation) << a.name;
}

TEST(Shapes, TheBuiltInListIsTheRepositorysFile) {
  const cb::ShapeSet built_in = cb::load_shapes("");
  const cb::ShapeSet file = cb::load_shapes(CONVJIT_TEST_SHAPES_FILE);
  ASSERT_FALSE(file.conv.empty());
  ASSERT_FALSE(file.pool.empty());
  ASSERT_EQ(built_in.conv.size(), file.conv.size());
  for (size_t i = 0; i < file.conv.size(); ++i) expect_same_conv(built_in.conv[i], file.conv[i]);
  ASSERT_EQ(built_in.pool.size(), file.pool.size());
  for (size_t i = 0; i < file.pool.size(); ++i) {
    EXPECT_EQ(built_in.pool[i].name, file.pool[i].name);
    EXPECT_EQ(built_in.pool[i].op, file.pool[i].op);
    EXPECT_EQ(built_in.pool[i].in, file.pool[i].in);
    EXPECT_EQ(built_in.pool[i].window, file.pool[i].window);
    EXPECT_EQ(built_in.pool[i].stride, file.pool[i].stride);
  }
  EXPECT_EQ(cb::shapes_origin(""), "built-in bench/shapes.json");
  EXPECT_EQ(cb::shapes_origin("/x/y.json"), "/x/y.json");
}

TEST(Shapes, NamesAreUniqueAndEveryShapeIsAValidProblem) {
  const cb::ShapeSet set = cb::load_shapes("");
  std::set<std::string> names;
  for (const cb::ConvShape& s : set.conv) {
    EXPECT_TRUE(names.insert(s.name).second) << "duplicate " << s.name;
    EXPECT_GT(s.flops(), 0.0) << s.name;
    for (int i = 0; i < s.rank; ++i) EXPECT_GE(s.out()[i], 1) << s.name;
  }
  for (const cb::PoolShape& s : set.pool) {
    EXPECT_TRUE(names.insert(s.name).second) << "duplicate " << s.name;
    EXPECT_TRUE(s.op == "max" || s.op == "mean") << s.name << ": " << s.op;
    for (int i = 0; i < s.rank; ++i) EXPECT_GE(s.out()[i], 1) << s.name;
  }
}

TEST(Shapes, AGivenFileIsReadInsteadAndErrorsNameIt) {
  TempDir dir;
  const std::string path = dir.file("one.json");
  std::ofstream(path) << R"({"conv": [{"name": "only", "n": 2, "ic": 3, "oc": 4, "in": [9], "k": [3]}]})";
  const cb::ShapeSet set = cb::load_shapes(path);
  ASSERT_EQ(set.conv.size(), 1u);
  EXPECT_EQ(set.conv[0].name, "only");
  EXPECT_EQ(set.conv[0].rank, 1);
  EXPECT_EQ(set.conv[0].out()[0], 7);
  EXPECT_TRUE(set.pool.empty());

  const std::string absent = dir.file("absent.json");
  try {
    cb::load_shapes(absent);
    ADD_FAILURE() << "no error for a missing file";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(absent), std::string::npos) << e.what();
  }
  const std::string broken = dir.file("broken.json");
  std::ofstream(broken) << R"({"conv": [)";
  try {
    cb::load_shapes(broken);
    ADD_FAILURE() << "no error for a file that is not JSON";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(broken), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace convjit::testing::tools
