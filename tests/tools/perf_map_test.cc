// Perf map (lib/runtime/perf_map.hpp): with Policy::perf_map (CONVJIT_PERF_MAP=1) every emitted kernel
// is appended to /tmp/perf-PID.map as "ADDR SIZE convjit::NAME [backend]" (hex, no 0x), the
// format `perf report` reads. Checked in this process with an explicit Runtime, and in a tool
// started with CONVJIT_PERF_MAP=1 (the child's pid names its file). Every file is removed after.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "convjit/runtime.hpp"
#include "tools_support.hpp"

namespace convjit::testing::tools {
namespace {

struct MapLine {
  uint64_t address = 0, size = 0;
  std::string name, backend;
};

// Parses every line; a line not of the form "ADDR SIZE convjit::NAME [BACKEND]" fails the test.
std::vector<MapLine> parse_perf_map(const std::string& text) {
  std::vector<MapLine> lines;
  for (const std::string& line : split_lines(text)) {
    std::istringstream in(line);
    std::string address, size, name, backend, rest;
    in >> address >> size >> name >> backend;
    const bool hex = !address.empty() && !size.empty() &&
                     address.find_first_not_of("0123456789abcdef") == std::string::npos &&
                     size.find_first_not_of("0123456789abcdef") == std::string::npos;
    if (!hex || name.rfind("convjit::", 0) != 0 || backend.size() < 3 || backend.front() != '[' ||
        backend.back() != ']' || (in >> rest)) {
      ADD_FAILURE() << "perf map line not \"ADDR SIZE convjit::NAME [backend]\": \"" << line << "\"";
      continue;
    }
    lines.push_back({std::stoull(address, nullptr, 16), std::stoull(size, nullptr, 16), name.substr(9),
                     backend.substr(1, backend.size() - 2)});
  }
  return lines;
}

// Sizes > 0, addresses distinct, code ranges disjoint.
void expect_disjoint(const std::vector<MapLine>& lines) {
  std::map<uint64_t, const MapLine*> by_address;
  for (const MapLine& l : lines) {
    EXPECT_GT(l.size, 0u) << l.name;
    EXPECT_NE(l.address, 0u) << l.name;
    EXPECT_TRUE(by_address.emplace(l.address, &l).second) << "two kernels at " << std::hex << l.address;
  }
  const MapLine* previous = nullptr;
  for (const auto& [address, line] : by_address) {
    if (previous) {
      EXPECT_LE(previous->address + previous->size, address)
          << previous->name << " [" << std::hex << previous->address << ", +" << previous->size << ") overlaps "
          << line->name << " at " << address;
    }
    previous = line;
  }
}

// Whether [address, address + size) lies in one executable mapping of this process.
bool in_executable_mapping(uint64_t address, uint64_t size) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    unsigned long long begin = 0, end = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %4s", &begin, &end, perms) != 3) continue;
    if (address >= begin && address + size <= end) return perms[2] == 'x';
  }
  return false;
}

ConvDims conv2d(Layout layout, Mode mode, int64_t in_channels, int64_t out_channels, Extent in_size, Extent kernel,
                Extent stride, Extent pad) {
  ConvDims d;
  d.rank = 2;
  d.layout = layout;
  d.mode = mode;
  d.batch = 1;
  d.in_channels = in_channels;
  d.out_channels = out_channels;
  d.in_size = in_size;
  d.kernel = kernel;
  d.stride = stride;
  d.pad_begin = d.pad_end = pad;
  return d;
}

class PerfMap : public ::testing::Test {
 protected:
  void SetUp() override { std::remove(path_.c_str()); }
  void TearDown() override { std::remove(path_.c_str()); }
  const std::string path_ = "/tmp/perf-" + std::to_string(getpid()) + ".map";
};

TEST_F(PerfMap, EveryKernelOfAnInlineRuntimeIsListedWithItsAddressAndSize) {
  Policy policy;
  policy.backend = Backend::Auto;
  policy.hot_threshold = 0;
  policy.async = false;
  policy.decline_slower = false;  // compile every configuration below
  policy.perf_map = true;
  Runtime runtime(policy);
  if (runtime.stats().backend == "none") {
    GTEST_SKIP() << "no JIT backend on this host: " << runtime.stats().backend_unavailable_reason;
  }

  constexpr Layout C = Layout::NCHW, L = Layout::NHWC;
  constexpr Mode X = Mode::CrossCorrelation, V = Mode::Convolution;
  const Extent k1{1, 1, 1}, k3{3, 3, 1}, k5{5, 5, 1}, s1{1, 1, 1}, s2{2, 2, 1}, p0{0, 0, 0}, p1{1, 1, 0};
  struct Call {
    ConvDims dims;
    Activation activation;
  };
  const std::vector<Call> calls = {
      {conv2d(C, X, 1, 2, {12, 40, 1}, k3, s1, p0), Activation::Relu},
      {conv2d(C, X, 3, 2, {10, 44, 1}, k3, s1, p0), Activation::Relu},  // same key as the first: one kernel
      {conv2d(C, V, 3, 3, {12, 40, 1}, k3, s1, p1), Activation::Identity},
      {conv2d(C, X, 4, 8, {20, 70, 1}, k5, s2, p1), Activation::Identity},
      {conv2d(C, X, 16, 16, {8, 40, 1}, k1, s1, p0), Activation::Relu},
      {conv2d(L, X, 16, 16, {10, 40, 1}, k3, s1, p1), Activation::Identity},
  };
  for (const Call& c : calls) {
    std::vector<float> x(size_t(c.dims.input_elements()), 0.5f), w(size_t(c.dims.weight_elements()), 0.25f);
    std::vector<float> y(size_t(c.dims.output_elements()));
    runtime.conv_forward(c.dims, x.data(), w.data(), nullptr, c.activation, y.data());
  }
  const RuntimeStats stats = runtime.stats();
  std::map<std::string, int64_t> kernels;  // name -> code bytes, from the stats
  for (const ConfigStats& c : stats.configurations) {
    EXPECT_EQ(c.state, "jit") << "every configuration compiles (threshold 0, inline, decline_slower off): "
                              << c.failure;
    if (!c.kernel.empty()) kernels[c.kernel] = c.code_bytes;
  }
  ASSERT_GE(kernels.size(), 4u) << "the calls above should make at least four distinct kernels";
  EXPECT_EQ(int64_t(kernels.size()), stats.kernels);

  ASSERT_TRUE(file_exists(path_)) << path_ << " was not written";
  const std::vector<MapLine> lines = parse_perf_map(read_file(path_));
  EXPECT_EQ(lines.size(), kernels.size()) << "one line per emitted kernel:\n" << read_file(path_);
  std::set<std::string> listed;
  for (const MapLine& l : lines) {
    EXPECT_TRUE(listed.insert(l.name).second) << l.name << " listed twice";
    EXPECT_EQ(l.backend, stats.backend);
    const auto k = kernels.find(l.name);
    if (k == kernels.end()) {
      ADD_FAILURE() << "perf map names " << l.name << ", which no configuration's stats name";
      continue;
    }
    EXPECT_EQ(int64_t(l.size), k->second) << l.name << ": size differs from the stats' code bytes";
    EXPECT_TRUE(in_executable_mapping(l.address, l.size))
        << l.name << " at " << std::hex << l.address << " +" << l.size << " is not inside an executable mapping";
  }
  for (const auto& [name, bytes] : kernels) EXPECT_TRUE(listed.count(name)) << name << " missing from " << path_;
  expect_disjoint(lines);
}

TEST_F(PerfMap, NotWrittenUnlessAsked) {
  Policy policy;
  policy.hot_threshold = 0;
  policy.async = false;
  policy.decline_slower = false;
  Runtime runtime(policy);  // perf_map off (the default)
  if (runtime.stats().backend == "none") {
    GTEST_SKIP() << "no JIT backend on this host: " << runtime.stats().backend_unavailable_reason;
  }
  const ConvDims d = conv2d(Layout::NCHW, Mode::CrossCorrelation, 2, 4, {12, 40, 1}, {3, 3, 1}, {1, 1, 1}, {});
  std::vector<float> x(size_t(d.input_elements()), 1.0f), w(size_t(d.weight_elements()), 1.0f);
  std::vector<float> y(size_t(d.output_elements()));
  runtime.conv_forward(d, x.data(), w.data(), nullptr, Activation::Identity, y.data());
  ASSERT_EQ(runtime.stats().kernels, 1);
  EXPECT_FALSE(file_exists(path_)) << path_ << " written although perf_map is off";
}

// CONVJIT_PERF_MAP=1 in a tool's environment: its own /tmp/perf-PID.map lists exactly the kernels
// of its stats file.
TEST(PerfMapEnvironment, AToolWritesItsKernelsToItsOwnMap) {
  TempDir dir;
  const std::string stats_path = dir.file("stats.json");
  const ToolRun run = run_tool(workload_path(), {"--no-shapes", "--steps", "3", "--threads", "1"},
                               {{"CONVJIT_PERF_MAP", "1"}, {"CONVJIT_STATS", stats_path}}, 120);
  const std::string map_path = "/tmp/perf-" + std::to_string(run.pid) + ".map";
  const bool map_written = file_exists(map_path);
  const std::string map_text = map_written ? read_file(map_path) : std::string();
  std::remove(map_path.c_str());
  ASSERT_TRUE(run.ok()) << run.describe();

  const nlohmann::json stats = nlohmann::json::parse(read_file(stats_path));
  if (stats.at("backend") == "none") {
    GTEST_SKIP() << "no JIT backend on this host: " << stats.at("backend_unavailable_reason");
  }
  std::map<std::string, int64_t> kernels;
  for (const auto& c : stats.at("configurations")) {
    if (c.at("jit_kernel") != "") kernels[c.at("jit_kernel")] = c.at("code_bytes");
  }
  ASSERT_FALSE(kernels.empty()) << "the workload compiled nothing:\n" << run.describe();
  EXPECT_EQ(int64_t(kernels.size()), stats.at("totals").at("kernels").get<int64_t>());
  ASSERT_TRUE(map_written) << map_path << " was not written by pid " << run.pid;
  const std::vector<MapLine> lines = parse_perf_map(map_text);
  EXPECT_EQ(lines.size(), kernels.size()) << map_text;
  for (const MapLine& l : lines) {
    const auto k = kernels.find(l.name);
    if (k == kernels.end()) {
      ADD_FAILURE() << l.name << " is in the perf map but not in the stats";
      continue;
    }
    EXPECT_EQ(int64_t(l.size), k->second) << l.name;
    EXPECT_EQ(l.backend, stats.at("backend").get<std::string>());
    kernels.erase(k);
  }
  for (const auto& [name, bytes] : kernels) ADD_FAILURE() << name << " (stats) missing from the perf map";
  expect_disjoint(lines);
}

TEST(PerfMapEnvironment, NoMapWithoutTheVariable) {
  const ToolRun run = run_tool(workload_path(), {"--no-shapes", "--steps", "3", "--threads", "1"}, {}, 120);
  const std::string map_path = "/tmp/perf-" + std::to_string(run.pid) + ".map";
  const bool written = file_exists(map_path);
  if (written) std::remove(map_path.c_str());
  ASSERT_TRUE(run.ok()) << run.describe();
  EXPECT_FALSE(written) << map_path << " written without CONVJIT_PERF_MAP";
}

}  // namespace
}  // namespace convjit::testing::tools
