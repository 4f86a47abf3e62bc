// Warm start across processes (lib/runtime/warm_start.hpp, CONVJIT_CACHE_DIR): a first run of
// convjit-workload (default policy) saves its JIT configurations (forward and backward data) in
// DIR/hot-configurations; a
// second run with the same directory compiles them in the background from its start, and a call
// waits for its own compile, so every listed configuration runs only specialized kernels, from
// its first call.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tools_support.hpp"

namespace convjit::testing::tools {
namespace {

using nlohmann::json;

constexpr const char* kHeader = "convjit-hot-configurations 2";
constexpr const char* kHeaderV1 = "convjit-hot-configurations 1";

int op_code(const json& c) {
  return c.at("op") == "conv_fwd" ? 0 : c.at("op") == "conv_bwd_data" ? 1 : 2;
}

// A conv configuration in the cache file's words: op rank layout mode batch in out groups, then
// in_size kernel stride dilation pad_begin pad_end (rank values each), activation, bias.
std::string key_of(const json& c) {
  std::ostringstream s;
  const int64_t rank = c.at("rank");
  s << op_code(c) << ' ' << rank << ' ' << (c.at("layout") == "nhwc" ? 1 : 0) << ' '
    << (c.at("mode") == "convolution" ? 1 : 0) << ' ' << c.at("batch").get<int64_t>() << ' '
    << c.at("in_channels").get<int64_t>() << ' ' << c.at("out_channels").get<int64_t>() << ' '
    << c.at("groups").get<int64_t>();
  for (const char* field : {"in_size", "kernel", "stride", "dilation", "pad_begin", "pad_end"}) {
    for (int64_t d = 0; d < rank; ++d) s << ' ' << c.at(field).at(size_t(d)).get<int64_t>();
  }
  s << ' ' << (c.at("activation") == "relu" ? 1 : 0) << ' ' << (c.at("bias").get<bool>() ? 1 : 0);
  return s.str();
}

// The configuration lines of a cache file; a malformed file fails the test.
std::vector<std::string> cache_lines(const std::string& path) {
  std::vector<std::string> lines = split_lines(read_file(path));
  if (lines.empty() || lines[0] != kHeader) {
    ADD_FAILURE() << path << " does not start with \"" << kHeader << "\"";
    return {};
  }
  lines.erase(lines.begin());
  for (const std::string& line : lines) {
    std::istringstream in(line);
    std::vector<int64_t> v;
    for (int64_t x; in >> x;) v.push_back(x);
    EXPECT_TRUE(in.eof()) << "not all integers: " << line;
    EXPECT_TRUE(v.size() > 1 && v[0] >= 0 && v[0] <= 1) << "not an op with compiled kernels: " << line;
    EXPECT_TRUE(v.size() > 1 && v[1] >= 1 && v[1] <= 3 && int64_t(v.size()) == 1 + 7 + 6 * v[1] + 2)
        << "wrong field count for its rank: " << line;
  }
  return lines;
}

std::string first_loss(const std::string& out) {
  std::smatch m;
  static const std::regex pattern("time to first forward result .*\\(loss ([0-9.]+)\\)");
  return std::regex_search(out, m, pattern) ? m[1].str() : std::string("?");
}

class WarmStart : public ::testing::Test {
 protected:
  ToolRun workload(const std::map<std::string, std::string>& extra, const std::string& stats) {
    std::map<std::string, std::string> env = extra;
    env["CONVJIT_CACHE_DIR"] = cache_.path();
    env["CONVJIT_STATS"] = stats;
    return run_tool(workload_path(), {"--no-shapes", "--steps", "20", "--threads", "1"}, env, 120);
  }
  // Two runs with a fresh cache directory, default policy; skips without a backend.
  void two_runs() {
    first_ = workload({}, work_.file("first.json"));
    ASSERT_TRUE(first_.ok()) << first_.describe();
    first_stats_ = json::parse(read_file(work_.file("first.json")));
    if (first_stats_.at("backend") == "none") {
      GTEST_SKIP() << "no JIT backend on this host: " << first_stats_.at("backend_unavailable_reason");
    }
    ASSERT_TRUE(file_exists(cache_file())) << cache_file() << " not written:\n" << first_.describe();
    listed_ = cache_lines(cache_file());
    second_ = workload({}, work_.file("second.json"));
    ASSERT_TRUE(second_.ok()) << second_.describe();
    second_stats_ = json::parse(read_file(work_.file("second.json")));
  }
  std::string cache_file() const { return cache_.file("hot-configurations"); }

  TempDir cache_, work_;
  ToolRun first_, second_;
  json first_stats_, second_stats_;
  std::vector<std::string> listed_;
};

TEST_F(WarmStart, TheFirstRunSavesItsJitConfigurations) {
  two_runs();
  if (IsSkipped() || HasFatalFailure()) return;
  std::set<std::string> jit;
  std::set<std::string> ops;
  for (const json& c : first_stats_.at("configurations")) {
    if (c.at("state") == "jit") {
      jit.insert(key_of(c));
      ops.insert(c.at("op"));
    }
  }
  EXPECT_GE(jit.size(), 6u) << "the seed network's layers should be on the JIT tier after 20 steps";
  EXPECT_EQ(ops, (std::set<std::string>{"conv_fwd", "conv_bwd_data"})) << "its gradient's backward data too";
  EXPECT_EQ(std::set<std::string>(listed_.begin(), listed_.end()), jit)
      << "the cache file lists exactly the configurations that were on the JIT tier:\n"
      << read_file(cache_file());
  EXPECT_EQ(listed_.size(), jit.size()) << "each once";
}

TEST_F(WarmStart, ARestartedProcessRunsSpecializedKernelsFromItsFirstCalls) {
  two_runs();
  if (IsSkipped() || HasFatalFailure()) return;
  ASSERT_FALSE(listed_.empty());
  std::map<std::string, const json*> second;
  for (const json& c : second_stats_.at("configurations")) {
    if (c.at("op") != "conv_bwd_filter") second[key_of(c)] = &c;
  }
  for (const std::string& key : listed_) {
    const auto it = second.find(key);
    ASSERT_NE(it, second.end()) << "listed configuration " << key << " not called in the second run";
    const json& c = *it->second;
    EXPECT_EQ(c.at("state"), "jit") << key;
    EXPECT_EQ(c.at("calls").at("generic").get<int64_t>(), 0) << key << ": calls before its kernel arrived";
    EXPECT_GT(c.at("calls").at("jit").get<int64_t>(), 0) << key;
  }
  // Same numbers: the first forward's loss of both runs.
  EXPECT_EQ(first_loss(first_.out), first_loss(second_.out));
  EXPECT_NE(first_loss(first_.out), "?") << first_.out;
  // The second run rewrote the file with the same configurations.
  const std::vector<std::string> again = cache_lines(cache_file());
  EXPECT_EQ(std::set<std::string>(again.begin(), again.end()), std::set<std::string>(listed_.begin(), listed_.end()));
}

// Every configuration that was called has a first call on its timeline, warm-started or not.
TEST_F(WarmStart, TimelineOfAWarmConfigurationHasItsFirstCall) {
  two_runs();
  if (IsSkipped() || HasFatalFailure()) return;
  for (const json& c : second_stats_.at("configurations")) {
    if (c.at("op") == "conv_bwd_filter") continue;
    const int64_t calls = c.at("calls").at("generic").get<int64_t>() + c.at("calls").at("jit").get<int64_t>();
    if (calls == 0) continue;
    const json& t = c.at("timeline_us");
    EXPECT_GE(t.at("first_call").get<double>(), 0)
        << key_of(c) << " (" << c.at("state") << ", " << calls << " calls): timeline " << t.dump();
    if (c.at("state") == "jit") {
      EXPECT_GE(t.at("kernel").get<double>(), 0) << key_of(c);
    }
  }
}

TEST_F(WarmStart, AProcessWithoutBackendLeavesTheCacheAlone) {
  two_runs();
  if (IsSkipped() || HasFatalFailure()) return;
  const std::string before = read_file(cache_file());
  const ToolRun generic = workload({{"CONVJIT_BACKEND", "none"}}, work_.file("generic.json"));
  ASSERT_TRUE(generic.ok()) << generic.describe();
  EXPECT_EQ(read_file(cache_file()), before);
  const json stats = json::parse(read_file(work_.file("generic.json")));
  EXPECT_EQ(stats.at("totals").at("calls_jit").get<int64_t>(), 0);
  EXPECT_EQ(first_loss(generic.out), first_loss(first_.out));
}

// The file is only a hint: malformed or impossible lines are skipped, the rest is used.
TEST_F(WarmStart, MalformedLinesAreSkipped) {
  two_runs();
  if (IsSkipped() || HasFatalFailure()) return;
  ASSERT_FALSE(listed_.empty());
  const std::string kept = listed_[0];
  write_file(cache_file(), std::string(kHeader) + "\n" +
                               "garbage\n"
                               "0 2 0 0 5 1 2\n"                                    // cut short
                               "0 2 0 0 5 1 2 1 4 4 9 9 1 1 1 1 0 0 0 0 1 1\n"      // kernel larger than the input
                               "0 7 0 0 5 1 2 1 28 28 3 3 1 1 1 1 0 0 0 0 1 1\n"    // rank 7
                               "9 2 0 0 5 1 2 1 28 28 3 3 1 1 1 1 0 0 0 0 1 1\n" +  // no such op
                               kept +
                               "\n");
  const ToolRun run = workload({}, work_.file("third.json"));
  ASSERT_TRUE(run.ok()) << run.describe();
  const json stats = json::parse(read_file(work_.file("third.json")));
  bool found = false;
  for (const json& c : stats.at("configurations")) {
    if (c.at("op") == "conv_bwd_filter" || key_of(c) != kept) continue;
    found = true;
    EXPECT_EQ(c.at("state"), "jit");
    EXPECT_EQ(c.at("calls").at("generic").get<int64_t>(), 0) << kept;
  }
  EXPECT_TRUE(found) << kept;
}

// A file of the first version (forward convolutions, no op column) still warm-starts them.
TEST_F(WarmStart, AVersionOneFileIsStillRead) {
  two_runs();
  if (IsSkipped() || HasFatalFailure()) return;
  std::string kept;
  for (const std::string& line : listed_) {
    if (line.rfind("0 ", 0) == 0) kept = line;
  }
  ASSERT_FALSE(kept.empty()) << "no forward configuration listed";
  write_file(cache_file(), std::string(kHeaderV1) + "\n" + kept.substr(2) + "\n");
  const ToolRun run = workload({}, work_.file("v1.json"));
  ASSERT_TRUE(run.ok()) << run.describe();
  const json stats = json::parse(read_file(work_.file("v1.json")));
  bool found = false;
  for (const json& c : stats.at("configurations")) {
    if (c.at("op") != "conv_fwd" || key_of(c) != kept) continue;
    found = true;
    EXPECT_EQ(c.at("state"), "jit");
    EXPECT_EQ(c.at("calls").at("generic").get<int64_t>(), 0) << kept << ": calls before its kernel arrived";
  }
  EXPECT_TRUE(found) << kept;
  EXPECT_EQ(cache_lines(cache_file()).empty(), false) << "rewritten in the current version";
}

TEST(WarmStartDirectory, AnUnwritableDirectoryIsReportedNotFatal) {
  TempDir work;
  const std::string dir = work.file("no/such/dir");
  const ToolRun run = run_tool(workload_path(), {"--no-shapes", "--steps", "5", "--threads", "1"},
                               {{"CONVJIT_CACHE_DIR", dir}, {"CONVJIT_STATS", work.file("s.json")}}, 120);
  ASSERT_TRUE(run.ok()) << run.describe();
  const json stats = json::parse(read_file(work.file("s.json")));
  if (stats.at("backend") == "none") GTEST_SKIP() << "no JIT backend: nothing is saved";
  EXPECT_TRUE(contains(run.err, "CONVJIT_CACHE_DIR: cannot write " + dir + "/hot-configurations")) << run.describe();
}

}  // namespace
}  // namespace convjit::testing::tools
