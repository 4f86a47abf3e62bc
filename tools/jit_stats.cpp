// jit-stats: reads and compares convjit's stats files (CONVJIT_STATS, schema convjit-stats v2,
// and v1 of older builds) and runs built-in workloads through the tiers.
//
//   jit-stats show FILE [--json | --csv]
//   jit-stats diff A B
//   jit-stats run seed|shapes [--backend B] [--threshold N] [--threads T] [--shapes PATH]
#include <algorithm>
#include <chrono>
#include <convjit/convjit.hpp>
#include <convjit/runtime.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "seed_network.hpp"
#include "shapes.hpp"

namespace {

using nlohmann::json;

constexpr const char* kUsage =
    "usage: jit-stats COMMAND ...\n"
    "  show FILE [--json|--csv]   configurations of a stats file (CONVJIT_STATS=path writes one at exit),\n"
    "                             sorted by time spent: calls and mean time per tier, speedup, kernel\n"
    "  diff A B                   two stats files side by side, matched by configuration\n"
    "  run WORKLOAD [options]     run a built-in workload through the tiers and show its stats:\n"
    "                             seed (the seed network, forward and gradient, random data) or shapes\n"
    "                             (bench/shapes.json, built in); options --backend auto|xbyak|llvm|none,\n"
    "                             --threshold N, --threads T, --shapes PATH\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One configuration row of a stats file.
struct Row {
  std::string shape, state, kernel, backend, reason;
  int64_t calls_generic = 0, calls_jit = 0, code_bytes = 0;
  double ns_generic = 0, ns_jit = 0, compile_us = 0, first_call_us = -1, hot_us = -1, kernel_us = -1;
  double time_spent_us() const { return (double(calls_generic) * ns_generic + double(calls_jit) * ns_jit) * 1e-3; }
  double speedup() const { return ns_generic > 0 && ns_jit > 0 ? ns_generic / ns_jit : 0; }
};

std::string joined(const json& a, const char* sep = "x") {
  std::string s;
  for (size_t i = 0; i < a.size(); ++i) s += (i ? sep : "") + std::to_string(a[i].get<int64_t>());
  return s;
}

bool any_other_than_one(const json& a) {
  return std::any_of(a.begin(), a.end(), [](const json& v) { return v.get<int64_t>() != 1; });
}

// "3x3 s1 p1" (" d2" when dilated): a window's part of the notation.
std::string window_of(const json& c, const char* window) {
  std::string s = joined(c.at(window)) + " s" + joined(c.at("stride"));
  const std::string pb = joined(c.at("pad_begin")), pe = joined(c.at("pad_end"));
  s += " p" + (pb == pe ? pb : pb + "/" + pe);
  if (any_other_than_one(c.at("dilation"))) s += " d" + joined(c.at("dilation"));
  return s;
}

// The op, then NNlib-like notation: "conv_fwd 3x3 s1 p1 64->64 56x56 n1" plus what else tells
// configurations apart; pooling "maxpool_fwd 2x2 s2 p0 64 56x56 n1".
std::string shape_of(const json& c) {
  const std::string op = c.at("op");
  if (op.find("pool") != std::string::npos) {
    std::string s = op + " " + window_of(c, "window") + " " + std::to_string(c.at("channels").get<int64_t>());
    s += " " + joined(c.at("in_size")) + " n" + std::to_string(c.at("batch").get<int64_t>());
    if (c.at("layout") == "nhwc") s += " nhwc";
    if (c.at("exclude_padding").get<bool>()) s += " exclude_padding";
    if (c.contains("p")) s += " p=" + json(c.at("p").get<double>()).dump();
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

std::vector<Row> rows_of(const json& stats) {
  std::vector<Row> rows;
  for (const json& c : stats.at("configurations")) {
    Row r;
    r.shape = shape_of(c);
    r.state = c.at("state");
    r.kernel = c.at("jit_kernel");
    r.backend = c.at("backend");
    r.reason = c.at("reason");
    r.calls_generic = c.at("calls").at("generic");
    r.calls_jit = c.at("calls").at("jit");
    r.ns_generic = c.at("mean_ns").at("generic");
    r.ns_jit = c.at("mean_ns").at("jit");
    r.compile_us = c.at("compile_us");
    r.code_bytes = c.at("code_bytes");
    r.first_call_us = c.at("timeline_us").at("first_call");
    r.hot_us = c.at("timeline_us").at("hot");
    r.kernel_us = c.at("timeline_us").at("kernel");
    rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.time_spent_us() > b.time_spent_us(); });
  return rows;
}

json load_stats(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error(path + ": cannot open");
  json stats;
  try {
    stats = json::parse(file);
    if (stats.at("schema") != "convjit-stats") throw std::runtime_error("not a convjit stats file (schema)");
    // Version 1 (older builds) has forward convolutions only, with the same fields.
    if (stats.at("version") != 1 && stats.at("version") != 2) {
      throw std::runtime_error("unsupported version " + stats.at("version").dump());
    }
    // Every field the commands read, so that a malformed file fails here, naming itself.
    stats.at("policy").at("hot_threshold").get<int64_t>();
    stats.at("backend").get<std::string>();
    stats.at("backend_unavailable_reason").get<std::string>();
    for (const char* total : {"kernels", "code_bytes", "compile_failures", "evictions"}) {
      stats.at("totals").at(total).get<int64_t>();
    }
    rows_of(stats);
  } catch (const json::exception& e) {
    throw std::runtime_error(path + ": malformed stats file: " + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  return stats;
}

// Why a configuration is (not) on the JIT tier, in words.
std::string tier_note(const Row& r, int64_t threshold, const std::string& backend) {
  if (r.state == "jit") return r.kernel;
  if (backend == "none") return "generic only: no JIT backend";
  if (r.state == "cold") {
    return "not hot yet (" + std::to_string(r.calls_generic) + "/" + std::to_string(threshold) + " calls)";
  }
  if (r.state == "queued") return "compile queued";
  if (r.state == "failed") return "compile failed: " + r.reason;
  if (r.state == "declined") return "stays generic: " + r.reason;
  return r.state;
}

void print_table(const json& stats) {
  const std::vector<Row> rows = rows_of(stats);
  const int64_t threshold = stats.at("policy").at("hot_threshold");
  // Files written before the ISA field (same schema version) have no "isa": the line omits it.
  const std::string isa = stats.contains("isa") ? ", kernels up to " + stats.at("isa").get<std::string>() : "";
  std::printf("backend %s%s%s%s, hot threshold %lld\n", stats.at("backend").get<std::string>().c_str(),
              stats.at("backend_unavailable_reason").get<std::string>().empty() ? "" : ": ",
              stats.at("backend_unavailable_reason").get<std::string>().c_str(), isa.c_str(), (long long)threshold);
  std::printf("%-56s %8s %8s %11s %11s %8s %10s %7s  %s\n", "configuration", "generic", "jit", "generic us", "jit us",
              "speedup", "compile us", "bytes", "tier");
  double total_us = 0;
  int64_t generic = 0, jit = 0;
  for (const Row& r : rows) {
    std::printf("%-56s %8lld %8lld %11.1f %11.1f %7.2fx %10.1f %7lld  %s\n", r.shape.c_str(),
                (long long)r.calls_generic, (long long)r.calls_jit, r.ns_generic * 1e-3, r.ns_jit * 1e-3, r.speedup(),
                r.compile_us, (long long)r.code_bytes, tier_note(r, threshold, stats.at("backend")).c_str());
    total_us += r.time_spent_us();
    generic += r.calls_generic;
    jit += r.calls_jit;
  }
  const json& t = stats.at("totals");
  std::printf(
      "total: %zu configurations, %lld generic + %lld jit calls, %.1f ms spent (sampled), %lld kernels "
      "(%lld bytes), %lld compile failures, %lld evictions\n",
      rows.size(), (long long)generic, (long long)jit, total_us * 1e-3, (long long)t.at("kernels").get<int64_t>(),
      (long long)t.at("code_bytes").get<int64_t>(), (long long)t.at("compile_failures").get<int64_t>(),
      (long long)t.at("evictions").get<int64_t>());
  // Files written before kernel eviction (same schema version) have neither field.
  if (t.contains("kernel_evictions")) {
    std::printf("code: %lld bytes mapped, %lld kernels evicted by the code budget of %lld bytes\n",
                (long long)t.at("mapped_bytes").get<int64_t>(), (long long)t.at("kernel_evictions").get<int64_t>(),
                (long long)stats.at("policy").value("code_budget_bytes", int64_t(0)));
  }
}

void print_csv(const json& stats) {
  std::printf(
      "configuration,state,calls_generic,calls_jit,mean_us_generic,mean_us_jit,speedup,compile_us,code_bytes,kernel,"
      "reason\n");
  for (const Row& r : rows_of(stats)) {
    std::printf("\"%s\",%s,%lld,%lld,%.3f,%.3f,%.3f,%.1f,%lld,%s,\"%s\"\n", r.shape.c_str(), r.state.c_str(),
                (long long)r.calls_generic, (long long)r.calls_jit, r.ns_generic * 1e-3, r.ns_jit * 1e-3, r.speedup(),
                r.compile_us, (long long)r.code_bytes, r.kernel.c_str(), r.reason.c_str());
  }
}

void print_timeline(const json& stats) {
  std::vector<Row> rows = rows_of(stats);
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.first_call_us < b.first_call_us; });
  std::printf("\ntier timeline (ms since the runtime started): first call -> hot -> kernel arrived\n");
  auto ms = [](double us) { return us < 0 ? std::string("-") : std::to_string(us * 1e-3).substr(0, 7); };
  for (const Row& r : rows) {
    std::printf("  %-56s %8s -> %8s -> %8s\n", r.shape.c_str(), ms(r.first_call_us).c_str(), ms(r.hot_us).c_str(),
                ms(r.kernel_us).c_str());
  }
}

int show(const std::vector<std::string>& args) {
  std::string path, format = "table";
  for (const std::string& a : args) {
    if (a == "--json" || a == "--csv")
      format = a.substr(2);
    else if (a.rfind("--", 0) == 0)
      throw UsageError("unknown option " + a);
    else if (path.empty())
      path = a;
    else
      throw UsageError("show takes one file");
  }
  if (path.empty()) throw UsageError("show needs a stats file");
  const json stats = load_stats(path);
  if (format == "json")
    std::printf("%s\n", stats.dump(2).c_str());
  else if (format == "csv")
    print_csv(stats);
  else
    print_table(stats);
  return 0;
}

int diff(const std::vector<std::string>& args) {
  if (args.size() != 2) throw UsageError("diff needs two stats files");
  const json a = load_stats(args[0]), b = load_stats(args[1]);
  std::map<std::string, std::pair<const Row*, const Row*>> matched;
  const std::vector<Row> rows_a = rows_of(a), rows_b = rows_of(b);
  for (const Row& r : rows_a) matched[r.shape].first = &r;
  for (const Row& r : rows_b) matched[r.shape].second = &r;
  std::printf("A: %s (backend %s)\nB: %s (backend %s)\n", args[0].c_str(), a.at("backend").get<std::string>().c_str(),
              args[1].c_str(), b.at("backend").get<std::string>().c_str());
  std::printf("%-56s %12s %12s %12s %12s %8s\n", "configuration", "A calls g/j", "B calls g/j", "A best us",
              "B best us", "B vs A");
  auto best = [](const Row* r) {  // mean time per call on the tier it ended on
    if (!r) return 0.0;
    return (r->calls_jit > 0 && r->ns_jit > 0 ? r->ns_jit : r->ns_generic) * 1e-3;
  };
  auto calls = [](const Row* r) {
    return r ? std::to_string(r->calls_generic) + "/" + std::to_string(r->calls_jit) : std::string("-");
  };
  for (const auto& [shape, pair] : matched) {
    const double ta = best(pair.first), tb = best(pair.second);
    std::printf("%-56s %12s %12s %12.1f %12.1f %7.2fx\n", shape.c_str(), calls(pair.first).c_str(),
                calls(pair.second).c_str(), ta, tb, ta > 0 && tb > 0 ? ta / tb : 0.0);
  }
  return 0;
}

using Clock = std::chrono::steady_clock;

void run_seed() {
  const seednet::Batch batch = seednet::random_batch(seednet::kDesignBatch, 7);
  const int64_t kBatch = batch.size;
  const std::vector<float>& x = batch.x;
  const std::vector<int32_t>& labels = batch.labels;
  seednet::SeedNetwork net(kBatch, 42);
  const Clock::time_point start = Clock::now();
  net.forward(x.data(), labels.data(), kBatch);
  const double first_forward = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  net.backward(x.data());
  const double first_gradient = std::chrono::duration<double, std::micro>(Clock::now() - start).count() - first_forward;
  std::printf("seed network: time to first forward result %.1f us, to first gradient %.1f us\n", first_forward,
              first_gradient);
  for (int step = 0; step < 200; ++step) {
    net.forward(x.data(), labels.data(), kBatch);
    net.backward(x.data());
  }
}

void run_shapes(const std::string& path) {
  const convjit_bench::ShapeSet shapes = convjit_bench::load_shapes(path);
  for (const convjit_bench::ConvShape& s : shapes.conv) {
    const convjit::ConvDims dims = s.dims(convjit::Layout::NCHW);
    convjit_bench::Buffer x(size_t(s.x_elements())), w(size_t(s.w_elements())), y(size_t(s.y_elements()));
    convjit_bench::fill_random(x, 1);
    convjit_bench::fill_random(w, 2);
    const Clock::time_point start = Clock::now();
    convjit::conv_forward(dims, x.data(), w.data(), y.data());
    std::printf("%-15s first call %10.1f us\n", s.name.c_str(),
                std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    const int repeats = std::clamp(int(5e8 / s.flops()), 3, 50);
    for (int i = 0; i < repeats; ++i) convjit::conv_forward(dims, x.data(), w.data(), y.data());
  }
}

int run(const std::vector<std::string>& args) {
  if (args.empty()) throw UsageError("run needs a workload: seed or shapes");
  const std::string workload = args[0];
  if (workload != "seed" && workload != "shapes") throw UsageError("unknown workload " + workload);
  const char* env_shapes = std::getenv("CONVJIT_SHAPES");
  std::string shapes_path = env_shapes ? env_shapes : "";
  // The default runtime reads the environment when it is first used: set the policy there.
  for (size_t i = 1; i < args.size(); ++i) {
    if (i + 1 >= args.size()) throw UsageError("missing value for " + args[i]);
    const std::string& value = args[++i];
    if (args[i - 1] == "--backend")
      setenv("CONVJIT_BACKEND", value.c_str(), 1);
    else if (args[i - 1] == "--threshold")
      setenv("CONVJIT_HOT_THRESHOLD", value.c_str(), 1);
    else if (args[i - 1] == "--threads")
      setenv("CONVJIT_NUM_THREADS", value.c_str(), 1);
    else if (args[i - 1] == "--shapes")
      shapes_path = value;
    else
      throw UsageError("unknown option " + args[i - 1]);
  }
  if (workload == "seed")
    run_seed();
  else
    run_shapes(shapes_path);
  convjit::Runtime& runtime = convjit::Runtime::process_default();
  runtime.wait_for_compiles();
  const std::string path = "/tmp/jit-stats-run-" + std::to_string(getpid()) + ".json";
  runtime.write_stats(path);
  const json stats = load_stats(path);
  std::remove(path.c_str());
  std::printf("\n");
  print_table(stats);
  print_timeline(stats);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty()) throw UsageError("missing command");
    const std::string command = args[0];
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (command == "--help" || command == "-h" || command == "help") {
      std::printf("%s", kUsage);
      return 0;
    }
    if (command == "show") return show(rest);
    if (command == "diff") return diff(rest);
    if (command == "run") return run(rest);
    throw UsageError("unknown command " + command);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "jit-stats: %s\n%s", e.what(), kUsage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jit-stats: %s\n", e.what());
    return 1;
  }
}
