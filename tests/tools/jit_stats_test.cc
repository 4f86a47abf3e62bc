// tools/jit_stats.cpp run as a program. Stats files are made by running convjit-workload with
// CONVJIT_STATS (default policy, and the generic tier only) and seednet on a tiny data set made
// here (other configurations); then show (table, --json, --csv), diff, run seed|shapes, and every
// error: exit status and message.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "shapes.hpp"
#include "tools_support.hpp"

namespace convjit::testing::tools {
namespace {

using nlohmann::json;

#define EXPECT_CONTAINS(text, part) \
  EXPECT_TRUE(contains(text, part)) << "\"" << (part) << "\" not found in:\n" << (text)

ToolRun jit_stats(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
  return run_tool(jit_stats_path(), args, env, 120);
}

std::string joined(const json& a) {
  std::string s;
  for (size_t i = 0; i < a.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(a[i].get<int64_t>());
  }
  return s;
}

std::string window_of(const json& c, const char* window) {
  std::string s = joined(c.at(window)) + " s" + joined(c.at("stride"));
  const std::string pb = joined(c.at("pad_begin")), pe = joined(c.at("pad_end"));
  s += " p" + (pb == pe ? pb : pb + "/" + pe);
  bool dilated = false;
  for (const json& d : c.at("dilation")) dilated |= d.get<int64_t>() != 1;
  if (dilated) s += " d" + joined(c.at("dilation"));
  return s;
}

// The notation the tool documents: the op, then "3x3 s1 p1 64->64 56x56 n1" (every spatial entry,
// joined by x) and what else tells configurations apart (d, g, nhwc, flip, bias, relu); pooling
// "2x2 s2x2 p0x0 8 6x6 n1" and nhwc, exclude_padding, p=.
std::string shape_of(const json& c) {
  const std::string op = c.at("op");
  if (op.find("pool") != std::string::npos) {
    std::string s = op + " " + window_of(c, "window") + " " + std::to_string(c.at("channels").get<int64_t>());
    s += " " + joined(c.at("in_size")) + " n" + std::to_string(c.at("batch").get<int64_t>());
    if (c.at("layout") == "nhwc") s += " nhwc";
    if (c.at("exclude_padding").get<bool>()) s += " exclude_padding";
    if (c.contains("p")) s += " p=" + c.at("p").dump();
    return s;
  }
  std::string s = op + " " + window_of(c, "kernel");
  s += " " + std::to_string(c.at("in_channels").get<int64_t>()) + "->" +
       std::to_string(c.at("out_channels").get<int64_t>());
  if (c.at("groups").get<int64_t>() != 1) s += " g" + std::to_string(c.at("groups").get<int64_t>());
  s += " " + joined(c.at("in_size")) + " n" + std::to_string(c.at("batch").get<int64_t>());
  if (c.at("layout") == "nhwc") s += " nhwc";
  if (c.at("mode") == "convolution") s += " flip";
  if (c.at("bias").get<bool>()) s += " bias";
  if (c.at("activation") == "relu") s += " relu";
  return s;
}

double time_spent(const json& c) {
  return c.at("calls").at("generic").get<double>() * c.at("mean_ns").at("generic").get<double>() +
         c.at("calls").at("jit").get<double>() * c.at("mean_ns").at("jit").get<double>();
}

std::string calls_of(const json& c) {
  return std::to_string(c.at("calls").at("generic").get<int64_t>()) + " " +
         std::to_string(c.at("calls").at("jit").get<int64_t>());
}

// The configuration a table row (or diff row) is about: its shape starts the line, followed by
// its generic and jit calls. -1 if none.
int configuration_of_row(const std::string& line, const json& configurations) {
  for (size_t i = 0; i < configurations.size(); ++i) {
    const std::string shape = shape_of(configurations[i]);
    if (line.rfind(shape + " ", 0) != 0) continue;
    std::istringstream rest(line.substr(shape.size()));
    std::string generic, jit;
    rest >> generic >> jit;
    if (generic + " " + jit == calls_of(configurations[i])) return int(i);
  }
  return -1;
}

class JitStats : public ::testing::Test {
 protected:
  void SetUp() override {
    a_path_ = dir_.file("a.json");
    b_path_ = dir_.file("b.json");
    ASSERT_NO_FATAL_FAILURE(make_stats(a_path_, {}));
    ASSERT_NO_FATAL_FAILURE(make_stats(b_path_, {{"CONVJIT_BACKEND", "none"}}));
    a_ = json::parse(read_file(a_path_));
    b_ = json::parse(read_file(b_path_));
    ASSERT_GE(a_.at("configurations").size(), 6u) << "the seed network has six layers";
  }

  void make_stats(const std::string& path, std::map<std::string, std::string> env) {
    env["CONVJIT_STATS"] = path;
    const ToolRun run = run_tool(workload_path(), {"--no-shapes", "--steps", "5", "--threads", "1"}, env, 120);
    ASSERT_TRUE(run.ok()) << run.describe();
    ASSERT_TRUE(file_exists(path)) << "CONVJIT_STATS=" << path << " wrote nothing:\n" << run.describe();
  }

  // Stats of seednet on 48 random 28x28 images, batch 8: configurations the workload has not.
  std::string seednet_stats() {
    std::mt19937 rng(1);
    std::vector<uint8_t> pixels(48 * 28 * 28), labels(48);
    for (uint8_t& p : pixels) p = uint8_t(rng());
    for (uint8_t& l : labels) l = uint8_t(rng() % 10);
    for (const char* split : {"train", "t10k"}) {
      write_gzip_file(dir_.file(std::string(split) + "-images-idx3-ubyte.gz"), idx_images_bytes(48, 28, 28, pixels));
      write_gzip_file(dir_.file(std::string(split) + "-labels-idx1-ubyte.gz"), idx_labels_bytes(labels));
    }
    const std::string path = dir_.file("seednet.json");
    const ToolRun run = run_tool(seednet_path(), {"--data", dir_.path(), "--batch", "8", "--threads", "1"},
                                 {{"CONVJIT_STATS", path}}, 120);
    EXPECT_TRUE(run.ok()) << run.describe();
    return path;
  }

  TempDir dir_;
  std::string a_path_, b_path_;
  json a_, b_;
};

TEST_F(JitStats, ShowPrintsOneRowPerConfigurationSortedByTimeSpent) {
  const ToolRun run = jit_stats({"show", a_path_});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  const std::vector<std::string> lines = split_lines(run.out);
  const json& configurations = a_.at("configurations");
  const size_t n = configurations.size();
  ASSERT_EQ(lines.size(), n + 4) << "backend line, header, a row per configuration, total, code:\n" << run.out;

  std::string backend_line = "backend " + a_.at("backend").get<std::string>();
  if (a_.at("backend_unavailable_reason") != "")
    backend_line += ": " + a_.at("backend_unavailable_reason").get<std::string>();
  backend_line += ", kernels up to " + a_.at("isa").get<std::string>();  // the ISA the runtime's kernels use
  EXPECT_EQ(lines[0], backend_line + ", hot threshold 2");
  for (const char* column : {"configuration", "generic", "jit", "speedup", "compile us", "bytes", "tier"}) {
    EXPECT_CONTAINS(lines[1], column);
  }
  EXPECT_EQ(lines[1].rfind("configuration", 0), 0u);

  std::vector<int> seen(n, 0);
  double previous = 1e300;
  for (size_t r = 0; r < n; ++r) {
    const std::string& line = lines[2 + r];
    const int i = configuration_of_row(line, configurations);
    ASSERT_GE(i, 0) << "row matches no configuration of the file: " << line;
    ++seen[size_t(i)];
    const json& c = configurations[size_t(i)];
    const double spent = time_spent(c);
    EXPECT_LE(spent, previous) << "row " << r << " (" << line << ") spent more than the row above it";
    previous = spent;
    if (c.at("state") == "jit") {
      EXPECT_TRUE(line.size() > c.at("jit_kernel").get<std::string>().size() &&
                  line.substr(line.size() - c.at("jit_kernel").get<std::string>().size()) == c.at("jit_kernel"))
          << "a JIT row ends with its kernel: " << line;
    }
    if (c.at("state") == "declined") {
      EXPECT_CONTAINS(line, "stays generic: " + c.at("reason").get<std::string>());
    }
  }
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(seen[i], 1) << "configuration " << shape_of(configurations[i]);

  int64_t generic = 0, jit = 0;
  for (const json& c : configurations) {
    generic += c.at("calls").at("generic").get<int64_t>();
    jit += c.at("calls").at("jit").get<int64_t>();
  }
  const json& t = a_.at("totals");
  const std::string& total = lines[lines.size() - 2];
  EXPECT_EQ(total.rfind("total: " + std::to_string(n) + " configurations, " + std::to_string(generic) +
                                   " generic + " + std::to_string(jit) + " jit calls",
                               0),
            0u)
      << total;
  EXPECT_CONTAINS(total, std::to_string(t.at("kernels").get<int64_t>()) + " kernels (" +
                             std::to_string(t.at("code_bytes").get<int64_t>()) + " bytes)");
  EXPECT_EQ(lines.back(), "code: " + std::to_string(t.at("mapped_bytes").get<int64_t>()) + " bytes mapped, " +
                              std::to_string(t.at("kernel_evictions").get<int64_t>()) +
                              " kernels evicted by the code budget of " +
                              std::to_string(a_.at("policy").at("code_budget_bytes").get<int64_t>()) + " bytes");
}

TEST_F(JitStats, ShowJsonIsTheFileAgain) {
  for (const std::string& path : {a_path_, b_path_}) {
    const ToolRun run = jit_stats({"show", path, "--json"});
    ASSERT_EQ(run.exit_code, 0) << run.describe();
    json printed;
    ASSERT_NO_THROW(printed = json::parse(run.out)) << run.out;
    EXPECT_EQ(printed, json::parse(read_file(path)));
    EXPECT_EQ(printed.at("configurations").size(), json::parse(read_file(path)).at("configurations").size());
  }
}

TEST_F(JitStats, ShowCsvHasAHeaderAndOneRowPerConfigurationInTableOrder) {
  const ToolRun csv = jit_stats({"show", a_path_, "--csv"});
  const ToolRun table = jit_stats({"show", a_path_});
  ASSERT_EQ(csv.exit_code, 0) << csv.describe();
  ASSERT_EQ(table.exit_code, 0) << table.describe();
  const std::vector<std::string> lines = split_lines(csv.out), table_lines = split_lines(table.out);
  const json& configurations = a_.at("configurations");
  ASSERT_EQ(lines.size(), configurations.size() + 1) << csv.out;
  EXPECT_EQ(lines[0],
            "configuration,state,calls_generic,calls_jit,mean_us_generic,mean_us_jit,speedup,compile_us,code_bytes,"
            "kernel,reason");
  for (size_t r = 1; r < lines.size(); ++r) {
    const std::string& line = lines[r];
    ASSERT_EQ(line.front(), '"') << line;
    const size_t close = line.find('"', 1);
    ASSERT_NE(close, std::string::npos) << line;
    const std::string shape = line.substr(1, close - 1);
    std::vector<std::string> fields;
    std::istringstream rest(line.substr(close + 2));
    for (std::string f; fields.size() < 9 && std::getline(rest, f, ',');) fields.push_back(f);
    std::string reason;
    std::getline(rest, reason);
    ASSERT_EQ(fields.size(), 9u) << line;
    // The same configuration as the table's row r.
    const int i = configuration_of_row(table_lines[1 + r], configurations);
    ASSERT_GE(i, 0) << table_lines[1 + r];
    const json& c = configurations[size_t(i)];
    EXPECT_EQ(shape, shape_of(c)) << "csv row " << r << " vs table row " << table_lines[1 + r];
    EXPECT_EQ(fields[0], c.at("state"));
    EXPECT_EQ(fields[1], std::to_string(c.at("calls").at("generic").get<int64_t>()));
    EXPECT_EQ(fields[2], std::to_string(c.at("calls").at("jit").get<int64_t>()));
    EXPECT_NEAR(std::stod(fields[3]), c.at("mean_ns").at("generic").get<double>() * 1e-3, 6e-4);
    EXPECT_NEAR(std::stod(fields[4]), c.at("mean_ns").at("jit").get<double>() * 1e-3, 6e-4);
    EXPECT_EQ(fields[7], std::to_string(c.at("code_bytes").get<int64_t>()));
    EXPECT_EQ(fields[8], c.at("jit_kernel"));
    EXPECT_EQ(reason, "\"" + c.at("reason").get<std::string>() + "\"");
  }
}

// Matches rows of `diff A B` to the configurations of both files.
void expect_diff(const ToolRun& run, const std::string& a_path, const json& a, const std::string& b_path,
                 const json& b) {
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  const std::vector<std::string> lines = split_lines(run.out);
  std::map<std::string, const json*> in_a, in_b;
  for (const json& c : a.at("configurations")) in_a[shape_of(c)] = &c;
  for (const json& c : b.at("configurations")) in_b[shape_of(c)] = &c;
  std::set<std::string> all;
  for (const auto& [shape, c] : in_a) all.insert(shape);
  for (const auto& [shape, c] : in_b) all.insert(shape);
  ASSERT_EQ(lines.size(), all.size() + 3) << "A, B, header and a row per configuration of either:\n" << run.out;
  EXPECT_EQ(lines[0], "A: " + a_path + " (backend " + a.at("backend").get<std::string>() + ")");
  EXPECT_EQ(lines[1], "B: " + b_path + " (backend " + b.at("backend").get<std::string>() + ")");
  EXPECT_EQ(lines[2].rfind("configuration", 0), 0u) << lines[2];
  auto calls = [](const std::map<std::string, const json*>& side, const std::string& shape) {
    const auto it = side.find(shape);
    if (it == side.end()) return std::string("-");
    return std::to_string(it->second->at("calls").at("generic").get<int64_t>()) + "/" +
           std::to_string(it->second->at("calls").at("jit").get<int64_t>());
  };
  std::set<std::string> rows;
  for (size_t r = 3; r < lines.size(); ++r) {
    const std::string& line = lines[r];
    std::string shape;
    for (const std::string& s : all) {  // the longest shape that starts the line and is followed by its calls
      if (line.rfind(s + " ", 0) != 0) continue;
      std::istringstream rest(line.substr(s.size()));
      std::string ca, cb;
      rest >> ca >> cb;
      if (ca == calls(in_a, s) && cb == calls(in_b, s) && s.size() > shape.size()) shape = s;
    }
    ASSERT_FALSE(shape.empty()) << "diff row matches no configuration (or its calls are wrong): " << line;
    EXPECT_TRUE(rows.insert(shape).second) << shape << " twice";
  }
  EXPECT_EQ(rows, all);
}

TEST_F(JitStats, DiffMatchesConfigurationsOfTwoFiles) {
  expect_diff(jit_stats({"diff", a_path_, b_path_}), a_path_, a_, b_path_, b_);
  // Files with no configuration in common: every row has a "-" on one side.
  const std::string c_path = seednet_stats();
  const json c = json::parse(read_file(c_path));
  for (const json& x : c.at("configurations")) {
    for (const json& y : a_.at("configurations")) ASSERT_NE(shape_of(x), shape_of(y));
  }
  expect_diff(jit_stats({"diff", a_path_, c_path}), a_path_, a_, c_path, c);
}

TEST_F(JitStats, RunSeedShowsFirstResultTableAndTimeline) {
  const ToolRun run = jit_stats({"run", "seed", "--threshold", "0", "--threads", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  const std::vector<std::string> lines = split_lines(run.out);
  ASSERT_GE(lines.size(), 4u) << run.out;
  EXPECT_EQ(lines[0].rfind("seed network: time to first forward result ", 0), 0u) << lines[0];
  EXPECT_CONTAINS(lines[0], "us, to first gradient ");
  const auto header =
      std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("configuration ", 0) == 0; });
  const auto total =
      std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("total: ", 0) == 0; });
  const auto timeline = std::find(lines.begin(), lines.end(),
                                  "tier timeline (ms since the runtime started): first call -> hot -> kernel arrived");
  ASSERT_TRUE(header != lines.end() && total != lines.end() && timeline != lines.end() && header < total &&
              total < timeline)
      << run.out;
  const std::string& backend_line = *(header - 1);
  if (backend_line.rfind("backend none", 0) == 0) GTEST_SKIP() << "no JIT backend on this host: " << backend_line;
  EXPECT_EQ(backend_line.rfind("backend xbyak, kernels up to avx", 0), 0u) << backend_line;  // avx2 or avx512
  EXPECT_CONTAINS(backend_line, ", hot threshold 0");

  // Seed network forward (6) and backward data (6) configurations; all but the declined ones on
  // the JIT tier, their tier column the kernel's name.
  const long rows = total - header - 1;
  EXPECT_GE(rows, 12) << run.out;
  EXPECT_CONTAINS(*total, "total: " + std::to_string(rows) + " configurations");
  int jit_rows = 0;
  for (auto it = header + 1; it != total; ++it) jit_rows += contains(*it, "conv2d_fwd_f32_k3x3_s1");
  EXPECT_GE(jit_rows, 6) << run.out;

  // The timeline: one line per configuration, ordered by first call.
  double previous = -1;
  long timeline_rows = 0;
  for (auto it = timeline + 1; it != lines.end(); ++it) {
    const size_t arrow = it->find(" -> ");
    ASSERT_NE(arrow, std::string::npos) << *it;
    EXPECT_NE(it->find(" -> ", arrow + 4), std::string::npos) << *it;
    std::istringstream before(it->substr(0, arrow));
    std::string token, last;
    while (before >> token) last = token;
    const double first_call = std::stod(last);
    EXPECT_GE(first_call, previous) << *it;
    previous = first_call;
    ++timeline_rows;
  }
  EXPECT_EQ(timeline_rows, rows);
}

TEST_F(JitStats, RunShapesFromAGivenFile) {
  const std::string shapes = dir_.file("shapes.json");
  write_file(shapes, R"({"conv": [
    {"name": "tiny_3x3", "n": 1, "ic": 4, "oc": 8, "groups": 1, "in": [20, 40], "k": [3, 3], "stride": [1, 1], "pad": [1, 1], "dilation": [1, 1]},
    {"name": "tiny_1x1", "n": 2, "ic": 8, "oc": 8, "groups": 1, "in": [10, 40], "k": [1, 1], "stride": [1, 1], "pad": [0, 0], "dilation": [1, 1]}
  ]})");
  const ToolRun run = jit_stats({"run", "shapes", "--shapes", shapes, "--threshold", "0", "--threads", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(run.out.rfind("tiny_3x3", 0), 0u) << run.out;
  EXPECT_CONTAINS(run.out, "\ntiny_1x1 ");
  EXPECT_CONTAINS(run.out, "total: 2 configurations");
  EXPECT_CONTAINS(run.out, "3x3 s1x1 p1x1 4->8 20x40 n1");
  EXPECT_CONTAINS(run.out, "1x1 s1x1 p0x0 8->8 10x40 n2");

  const ToolRun missing = jit_stats({"run", "shapes", "--shapes", dir_.file("absent.json")});
  EXPECT_EQ(missing.exit_code, 1) << missing.describe();
  EXPECT_CONTAINS(missing.err, dir_.file("absent.json"));
}

// No file given and no CONVJIT_SHAPES: the list built in from bench/shapes.json, every conv shape.
TEST_F(JitStats, RunShapesWithoutAFileRunsTheBuiltInList) {
  const ToolRun run = jit_stats({"run", "shapes", "--threshold", "0", "--threads", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  const convjit_bench::ShapeSet built_in = convjit_bench::load_shapes("");
  ASSERT_FALSE(built_in.conv.empty());
  for (const convjit_bench::ConvShape& s : built_in.conv) EXPECT_CONTAINS(run.out, s.name + " ");
}

// Without a backend nothing ever compiles: the tier column must not say a configuration called
// hundreds of times is "not hot yet".
TEST_F(JitStats, WithoutABackendTheTierColumnDoesNotClaimNotHotYet) {
  const ToolRun run = jit_stats({"show", b_path_});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  const json& configurations = b_.at("configurations");
  const int64_t threshold = b_.at("policy").at("hot_threshold");
  for (const std::string& line : split_lines(run.out)) {
    const int i = configuration_of_row(line, configurations);
    if (i < 0) continue;
    if (configurations[size_t(i)].at("calls").at("generic").get<int64_t>() >= threshold) {
      EXPECT_FALSE(contains(line, "not hot yet")) << line;
    }
  }
}

struct ErrorCase {
  std::string name;
  std::vector<std::string> args;
  int exit_code;
  std::vector<std::string> message;  // parts of stderr
};

TEST_F(JitStats, ErrorsExitNonZeroWithAMessage) {
  const std::string missing = dir_.file("missing.json"), malformed = dir_.file("malformed.json"),
                    schema = dir_.file("schema.json"), version = dir_.file("version.json"),
                    field = dir_.file("field.json"), array = dir_.file("array.json");
  write_file(malformed, "{\"schema\": \"convjit-stats\", \"version\": 1, \"configurations\": [");
  write_file(schema, R"({"schema": "something-else", "version": 1, "configurations": []})");
  write_file(version, R"({"schema": "convjit-stats", "version": 3, "configurations": []})");
  write_file(array, "[1, 2, 3]");
  json no_stride = a_;
  no_stride["configurations"][0].erase("stride");
  write_file(field, no_stride.dump());

  const std::vector<ErrorCase> cases = {
      {"missing file", {"show", missing}, 1, {missing + ": cannot open"}},
      {"a directory", {"show", dir_.path()}, 1, {dir_.path() + ": "}},
      {"malformed JSON", {"show", malformed}, 1, {malformed + ": malformed stats file"}},
      {"not an object", {"show", array}, 1, {array + ": malformed stats file"}},
      {"wrong schema", {"show", schema}, 1, {schema + ": not a convjit stats file"}},
      {"wrong version", {"show", version}, 1, {version + ": unsupported version 3"}},
      {"configuration without a field", {"show", field, "--csv"}, 1, {field + ": malformed stats file", "stride"}},
      {"diff with a bad file", {"diff", a_path_, malformed}, 1, {malformed + ": malformed stats file"}},
      {"diff with a missing file", {"diff", missing, a_path_}, 1, {missing + ": cannot open"}},
      {"unknown option", {"show", a_path_, "--xml"}, 2, {"unknown option --xml", "usage: jit-stats"}},
      {"two files to show", {"show", a_path_, b_path_}, 2, {"show takes one file", "usage: jit-stats"}},
      {"no file to show", {"show"}, 2, {"show needs a stats file", "usage: jit-stats"}},
      {"one file to diff", {"diff", a_path_}, 2, {"diff needs two stats files", "usage: jit-stats"}},
      {"unknown command", {"frobnicate"}, 2, {"unknown command frobnicate", "usage: jit-stats"}},
      {"no command", {}, 2, {"missing command", "usage: jit-stats"}},
      {"run without workload", {"run"}, 2, {"run needs a workload", "usage: jit-stats"}},
      {"unknown workload", {"run", "mnist"}, 2, {"unknown workload mnist", "usage: jit-stats"}},
      {"unknown run option", {"run", "seed", "--bogus", "1"}, 2, {"unknown option --bogus", "usage: jit-stats"}},
      {"run option without value", {"run", "seed", "--threshold"}, 2, {"missing value for --threshold"}},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    const ToolRun run = jit_stats(c.args);
    EXPECT_EQ(run.exit_code, c.exit_code) << run.describe();
    EXPECT_EQ(run.err.rfind("jit-stats: ", 0), 0u) << run.describe();
    for (const std::string& part : c.message) EXPECT_CONTAINS(run.err, part);
    EXPECT_EQ(run.out, "") << "nothing on stdout when the command fails";
  }

  if (geteuid() != 0) {  // root reads a mode-000 file anyway
    const std::string unreadable = dir_.file("unreadable.json");
    write_file(unreadable, read_file(a_path_));
    ASSERT_EQ(chmod(unreadable.c_str(), 0), 0);
    const ToolRun run = jit_stats({"show", unreadable});
    EXPECT_EQ(run.exit_code, 1) << run.describe();
    EXPECT_CONTAINS(run.err, unreadable + ": cannot open");
  }

  const ToolRun help = jit_stats({"--help"});
  EXPECT_EQ(help.exit_code, 0) << help.describe();
  EXPECT_CONTAINS(help.out, "usage: jit-stats COMMAND");
}

// Every op has its rows: a pooling configuration (its own fields) and a version-1 file of an older
// build (forward convolutions only) are shown too.
TEST_F(JitStats, ShowsPoolingRowsAndReadsVersionOneFiles) {
  json with_pool = a_;
  json pool = a_.at("configurations").at(0);
  for (const char* field : {"mode", "in_channels", "out_channels", "groups", "kernel", "activation", "bias"}) {
    pool.erase(field);
  }
  pool["op"] = "lpnormpool_bwd";
  pool["channels"] = 8;
  pool["window"] = pool.at("in_size");
  pool["exclude_padding"] = false;
  pool["p"] = 3.0;
  pool["state"] = "declined";
  pool["reason"] = "the xbyak backend compiles no lpnormpool_bwd kernels for it (yet): tier 0 runs it";
  with_pool["configurations"].push_back(pool);
  const std::string pool_path = dir_.file("pool.json");
  write_file(pool_path, with_pool.dump());
  const ToolRun shown = jit_stats({"show", pool_path});
  ASSERT_EQ(shown.exit_code, 0) << shown.describe();
  EXPECT_CONTAINS(shown.out, shape_of(pool) + " ");
  EXPECT_CONTAINS(shown.out, "stays generic: " + pool.at("reason").get<std::string>());

  json v1 = a_;
  v1["version"] = 1;
  json forward = json::array();
  for (const json& c : a_.at("configurations")) {
    if (c.at("op") == "conv_fwd") forward.push_back(c);
  }
  ASSERT_FALSE(forward.empty());
  v1["configurations"] = forward;
  const std::string v1_path = dir_.file("v1.json");
  write_file(v1_path, v1.dump());
  const ToolRun old = jit_stats({"show", v1_path, "--csv"});
  ASSERT_EQ(old.exit_code, 0) << old.describe();
  EXPECT_EQ(split_lines(old.out).size(), forward.size() + 1) << old.out;
}

// A file with the right schema and version but without a top-level section is reported like any
// other malformed file: naming the file, not as a bare JSON library exception.
TEST_F(JitStats, MissingTopLevelSectionNamesTheFile) {
  for (const char* section : {"policy", "totals", "backend"}) {
    SCOPED_TRACE(section);
    json broken = a_;
    broken.erase(section);
    const std::string path = dir_.file(std::string("no-") + section + ".json");
    write_file(path, broken.dump());
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"show", path}, std::vector<std::string>{"diff", path, a_path_}}) {
      const ToolRun run = jit_stats(args);
      if (run.exit_code == 0) continue;  // that command does not read the section
      EXPECT_EQ(run.exit_code, 1) << run.describe();
      EXPECT_CONTAINS(run.err, path + ": malformed stats file");
      EXPECT_CONTAINS(run.err, section);
    }
  }
}

}  // namespace
}  // namespace convjit::testing::tools
