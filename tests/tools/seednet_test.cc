// tools/seednet.cpp, the trainer, run as a program: its command line (usage, bad options, bad
// data, each with exit status and message), a run on a tiny IDX data set made here, a short run
// on Fashion-MNIST whose loss must fall, and the same run on every tier (generic only; JIT
// compiled on first sight inline, on one and on two threads; the default background policy),
// whose per-step losses must be bit for bit the same. The Fashion-MNIST tests skip, saying why,
// when the data is not installed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "tools_support.hpp"

namespace convjit::testing::tools {
namespace {

using nlohmann::json;

#define EXPECT_CONTAINS(text, part) \
  EXPECT_TRUE(contains(text, part)) << "\"" << (part) << "\" not found in:\n" << (text)

ToolRun seednet(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
  return run_tool(seednet_path(), args, env, 300);
}

// Every line of a --loss-trace file, parsed (they are C99 hex floats); a line that does not
// parse fails the test.
std::vector<double> read_loss_trace(const std::string& path) {
  std::vector<double> losses;
  for (const std::string& line : split_lines(read_file(path))) {
    char* end = nullptr;
    const double v = std::strtod(line.c_str(), &end);
    if (line.rfind("0x", 0) != 0 || *end != '\0') {
      ADD_FAILURE() << path << ": \"" << line << "\" is not a hex float";
      continue;
    }
    losses.push_back(v);
  }
  return losses;
}

double mean(const std::vector<double>& v, size_t begin, size_t end) {
  return std::accumulate(v.begin() + long(begin), v.begin() + long(end), 0.0) / double(end - begin);
}

// "test loss X, test accuracy Y" of every epoch line, in order.
std::vector<std::string> test_results(const std::string& out) {
  std::vector<std::string> results;
  static const std::regex pattern("test loss [0-9.]+, test accuracy [0-9.]+");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), pattern); it != std::sregex_iterator(); ++it) {
    results.push_back(it->str());
  }
  return results;
}

// --- the command line ---

TEST(SeednetCli, HelpPrintsUsageAndExitsZero) {
  for (const char* flag : {"--help", "-h"}) {
    const ToolRun run = seednet({flag});
    EXPECT_EQ(run.exit_code, 0) << run.describe();
    EXPECT_CONTAINS(run.out, "usage: seednet [options]");
    for (const char* option : {"--data", "--epochs", "--batch", "--optimizer", "--lr", "--threads", "--limit", "--seed",
                               "--log-every", "--loss-trace"}) {
      EXPECT_CONTAINS(run.out, option);
    }
    EXPECT_EQ(run.err, "");
  }
}

struct BadCommandLine {
  std::vector<std::string> args;
  std::string message;
};

TEST(SeednetCli, BadOptionsExitWithStatus2AndSayWhy) {
  TempDir empty;  // if an option were accepted, the run stops at loading instead of training
  const std::vector<BadCommandLine> cases = {
      {{"--bogus", "1"}, "unknown option --bogus"},
      {{"--batch", "0"}, "bad value for --batch: 0"},
      {{"--batch", "-3"}, "bad value for --batch: -3"},
      {{"--batch", "12abc"}, "bad value for --batch: 12abc"},
      {{"--epochs", "x"}, "bad value for --epochs: x"},
      {{"--epochs", "0"}, "bad value for --epochs: 0"},
      {{"--lr", "0"}, "bad value for --lr: 0"},
      {{"--lr", "nan"}, "bad value for --lr: nan"},
      {{"--threads", "-1"}, "bad value for --threads: -1"},
      {{"--limit", "-5"}, "bad value for --limit: -5"},
      {{"--log-every", "0"}, "bad value for --log-every: 0"},
      {{"--optimizer", "rmsprop"}, "unknown optimizer rmsprop"},
      {{"--batch"}, "missing value for --batch"},
      {{"--data", empty.path(), "stray"}, "unexpected argument stray"},
  };
  for (const BadCommandLine& c : cases) {
    std::vector<std::string> args = {"--data", empty.path()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const ToolRun run = seednet(args);
    EXPECT_EQ(run.exit_code, 2) << run.describe();
    EXPECT_CONTAINS(run.err, "seednet: " + c.message);
    EXPECT_CONTAINS(run.err, "usage: seednet");
    EXPECT_EQ(run.out, "") << "nothing is printed to stdout on a usage error";
  }
}

// Counts are integers: a value the option's type cannot hold, a fraction or an empty string is a
// bad value too (not a silent truncation or 0, and not undefined behaviour converting to int).
TEST(SeednetCli, CountsOutOfRangeFractionalOrEmptyAreBadValues) {
  TempDir empty;
  const std::vector<BadCommandLine> cases = {
      {{"--batch", "3000000000"}, "bad value for --batch: 3000000000"},
      {{"--epochs", "1.5"}, "bad value for --epochs: 1.5"},
      {{"--threads", "1e10"}, "bad value for --threads: 1e10"},
      {{"--seed", "1e12"}, "bad value for --seed: 1e12"},
      {{"--seed", ""}, "bad value for --seed: "},  // strtod reads "" as 0
      {{"--limit", ""}, "bad value for --limit: "},
  };
  for (const BadCommandLine& c : cases) {
    std::vector<std::string> args = {"--data", empty.path()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const ToolRun run = seednet(args);
    EXPECT_EQ(run.exit_code, 2) << run.describe();
    EXPECT_CONTAINS(run.err, "seednet: " + c.message);
  }
}

TEST(SeednetCli, EmptyDataDirectoryNamesTheMissingFile) {
  TempDir empty;
  const ToolRun run = seednet({"--data", empty.path()});
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  EXPECT_CONTAINS(run.err, empty.path() + "/train-images-idx3-ubyte.gz");
  EXPECT_CONTAINS(run.err, "cannot open");
}

// --- a tiny data set made here: the whole program runs without Fashion-MNIST ---

class SeednetTinyData : public ::testing::Test {
 protected:
  static constexpr uint32_t kTrain = 64, kTest = 24;

  // train and t10k files in dir_ (gzip or plain), 28x28 unless told otherwise.
  void make(bool gzip = true, uint32_t rows = 28, uint32_t train_labels = kTrain, bool with_test = true,
            uint8_t bad_label = 0) {
    std::mt19937 rng(3);
    auto write = [&](const std::string& name, const std::string& bytes) {
      if (gzip)
        write_gzip_file(dir_.file(name + ".gz"), bytes);
      else
        write_file(dir_.file(name), bytes);
    };
    auto images = [&](uint32_t count) {
      std::vector<uint8_t> pixels(size_t(count) * rows * 28);
      for (uint8_t& p : pixels) p = uint8_t(rng());
      return idx_images_bytes(count, rows, 28, pixels);
    };
    auto labels = [&](uint32_t count) {
      std::vector<uint8_t> l(count);
      for (uint8_t& v : l) v = uint8_t(rng() % 10);
      if (bad_label && count) l[count - 1] = bad_label;
      return idx_labels_bytes(l);
    };
    write("train-images-idx3-ubyte", images(kTrain));
    write("train-labels-idx1-ubyte", labels(train_labels));
    if (with_test) {
      write("t10k-images-idx3-ubyte", images(kTest));
      write("t10k-labels-idx1-ubyte", labels(kTest));
    }
  }
  TempDir dir_;
};

TEST_F(SeednetTinyData, TrainsTwoEpochsAndPrintsEverything) {
  make();
  const std::string trace = dir_.file("trace");
  const ToolRun run = seednet({"--data", dir_.path(), "--batch", "8", "--epochs", "2", "--log-every", "4", "--threads",
                               "1", "--optimizer", "sgd", "--loss-trace", trace});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_CONTAINS(run.out, "seednet: 64 training / 24 test images, batch 8, sgd lr 0.01, 1 thread(s)");
  EXPECT_CONTAINS(run.out, "time to first forward result");
  EXPECT_CONTAINS(run.out, "epoch 1 step 4/8");
  EXPECT_CONTAINS(run.out, "epoch 2 step 8/8");
  EXPECT_EQ(test_results(run.out).size(), 2u) << run.describe();
  EXPECT_CONTAINS(run.out, "\ntiers (backend ");
  const std::vector<double> losses = read_loss_trace(trace);
  EXPECT_EQ(losses.size(), 16u) << "8 steps in each of 2 epochs";
  for (double l : losses) EXPECT_TRUE(std::isfinite(l) && l > 0) << l;
}

TEST_F(SeednetTinyData, ReadsUncompressedFilesToo) {
  make(/*gzip=*/false);
  const ToolRun run = seednet({"--data", dir_.path(), "--batch", "16", "--threads", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_CONTAINS(run.out, "seednet: 64 training / 24 test images, batch 16");
}

TEST_F(SeednetTinyData, LimitSelectsTheFirstImages) {
  make();
  const ToolRun run = seednet({"--data", dir_.path(), "--batch", "8", "--limit", "40", "--threads", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_CONTAINS(run.out, "seednet: 40 training / 24 test images");
  EXPECT_CONTAINS(run.out, "epoch 1 step 5/5");
}

TEST_F(SeednetTinyData, MissingTestSetNamesTheFile) {
  make(true, 28, kTrain, /*with_test=*/false);
  const ToolRun run = seednet({"--data", dir_.path(), "--threads", "1"});
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  EXPECT_CONTAINS(run.err, dir_.path() + "/t10k-images-idx3-ubyte.gz");
}

TEST_F(SeednetTinyData, LabelCountDisagreeingWithImageCount) {
  make(true, 28, kTrain - 1);
  const ToolRun run = seednet({"--data", dir_.path(), "--threads", "1"});
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  EXPECT_CONTAINS(run.err, "train: 64 images but 63 labels");
}

TEST_F(SeednetTinyData, ImagesThatAreNot28x28) {
  make(true, 27);
  const ToolRun run = seednet({"--data", dir_.path(), "--threads", "1"});
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  EXPECT_CONTAINS(run.err, "train images are 27x28, the seed network takes 28x28");
}

TEST_F(SeednetTinyData, LabelOutsideTheClassesNamesTheFile) {
  make(true, 28, kTrain, true, /*bad_label=*/12);
  const ToolRun run = seednet({"--data", dir_.path(), "--threads", "1"});
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  EXPECT_CONTAINS(run.err, dir_.path() + "/train-labels-idx1-ubyte.gz");
  EXPECT_CONTAINS(run.err, "label 12 at index 63 is not a class 0-9");
}

TEST_F(SeednetTinyData, FewerImagesThanOneBatch) {
  make();
  const ToolRun run = seednet({"--data", dir_.path(), "--batch", "65", "--threads", "1"});
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  EXPECT_CONTAINS(run.err, "fewer training images than one batch");
}

TEST_F(SeednetTinyData, UnwritableLossTrace) {
  make();
  const std::string trace = dir_.file("no-such-directory/trace");
  const ToolRun run = seednet({"--data", dir_.path(), "--batch", "8", "--threads", "1", "--loss-trace", trace});
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  EXPECT_CONTAINS(run.err, trace + ": cannot open for writing");
}

// --- Fashion-MNIST ---

// 100 steps of Adam (3200 images, batch 32): the mean loss of the last 20 steps is well below
// that of the first 20; the progress lines and the epoch line agree with the loss trace.
TEST(SeednetFashionMnist, LossFallsInAShortRun) {
  CONVJIT_REQUIRE_FASHION_MNIST(data);
  TempDir dir;
  const std::string trace = dir.file("trace");
  const ToolRun run = seednet({"--data", data, "--limit", "3200", "--batch", "32", "--epochs", "1", "--threads", "1",
                               "--log-every", "20", "--loss-trace", trace});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  const std::vector<double> losses = read_loss_trace(trace);
  ASSERT_EQ(losses.size(), 100u) << run.describe();
  for (double l : losses) ASSERT_TRUE(std::isfinite(l) && l > 0) << l;
  const double first = mean(losses, 0, 20), last = mean(losses, 80, 100);
  EXPECT_LT(last, 0.75 * first) << "mean loss of the first 20 steps " << first << ", of the last 20 " << last;

  // "epoch 1 step 20/100  loss X": X is the mean of those 20 steps' losses (printed to 4 places).
  static const std::regex progress("epoch 1 step ([0-9]+)/100  loss ([0-9.]+)");
  int windows = 0;
  for (const std::string& line : split_lines(run.out)) {
    std::smatch m;
    if (!std::regex_search(line, m, progress)) continue;
    const size_t end = size_t(std::stoul(m[1]));
    ASSERT_TRUE(end % 20 == 0 && end <= 100) << line;
    EXPECT_NEAR(std::stod(m[2]), mean(losses, end - 20, end), 6e-5) << line;
    ++windows;
  }
  EXPECT_EQ(windows, 5) << run.describe();
  static const std::regex epoch("epoch 1: train loss ([0-9.]+), test loss ([0-9.]+), test accuracy ([0-9.]+)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(run.out, m, epoch)) << run.describe();
  EXPECT_NEAR(std::stod(m[1]), mean(losses, 0, 100), 6e-5);
  EXPECT_GT(std::stod(m[3]), 0.5) << "test accuracy after 100 steps (chance is 0.1)";
}

struct TierRun {
  const char* name;
  std::map<std::string, std::string> env;
  const char* threads;
  bool jit;  // must have run JIT kernels
};

// ~300 steps (9600 images, batch 32) with the loss of every step written exactly: the same
// bits whatever tier each call ran on and however many threads ran it.
TEST(SeednetFashionMnist, SameLossesOnEveryTier) {
  CONVJIT_REQUIRE_FASHION_MNIST(data);
  TempDir dir;
  const std::map<std::string, std::string> inline_jit = {
      {"CONVJIT_BACKEND", "xbyak"}, {"CONVJIT_HOT_THRESHOLD", "0"}, {"CONVJIT_ASYNC", "0"}};
  std::map<std::string, std::string> inline_jit_2 = inline_jit;
  inline_jit_2["CONVJIT_ADAPT_THREADS"] = "0";  // every layer on both threads (by default they run on one)
  const std::vector<TierRun> runs = {
      {"generic", {{"CONVJIT_BACKEND", "none"}}, "1", false},
      {"jit-inline", inline_jit, "1", true},
      {"jit-inline-2-threads", inline_jit_2, "2", true},
      {"default-policy", {}, "1", true},  // generic, then JIT once hot and compiled in the background
  };
  std::string reference_trace, reference_results, reference_name;
  for (const TierRun& r : runs) {
    SCOPED_TRACE(r.name);
    const std::string trace = dir.file(std::string(r.name) + ".trace");
    const std::string stats_path = dir.file(std::string(r.name) + ".json");
    std::map<std::string, std::string> env = r.env;
    env["CONVJIT_STATS"] = stats_path;
    const ToolRun run = seednet({"--data", data, "--limit", "9600", "--batch", "32", "--epochs", "1", "--threads",
                                 r.threads, "--log-every", "100", "--loss-trace", trace},
                                env);
    ASSERT_EQ(run.exit_code, 0) << run.describe();
    const std::string losses = read_file(trace);
    ASSERT_EQ(read_loss_trace(trace).size(), 300u);
    const std::vector<std::string> results = test_results(run.out);
    ASSERT_EQ(results.size(), 1u) << run.describe();

    const json stats = json::parse(read_file(stats_path));
    int64_t calls_generic = 0, calls_jit = 0, jit_configurations = 0;
    for (const json& c : stats.at("configurations")) {
      // The ops with compiled kernels; backward filter runs on tier 0 (declined, with its reason).
      if (c.at("op") != "conv_fwd" && c.at("op") != "conv_bwd_data") {
        EXPECT_EQ(c.at("calls").at("jit"), 0) << c.dump();
        continue;
      }
      calls_generic += c.at("calls").at("generic").get<int64_t>();
      calls_jit += c.at("calls").at("jit").get<int64_t>();
      jit_configurations += c.at("state") == "jit" && c.at("calls").at("jit").get<int64_t>() > 0;
    }
    if (!r.jit) {
      EXPECT_EQ(stats.at("backend"), "none");
      EXPECT_EQ(calls_jit, 0);
      EXPECT_GT(calls_generic, 0);
    } else {
      if (stats.at("backend") == "none") {
        GTEST_SKIP() << "no JIT backend on this host (" << stats.at("backend_unavailable_reason")
                     << "): only the generic tier was compared";
      }
      EXPECT_GT(jit_configurations, 0) << "no configuration ran a JIT kernel: the comparison proves nothing";
      // Inline on first sight: nearly every call is a JIT call; in the background: most (the
      // calls before a kernel arrives run generic, more of them on a loaded machine).
      const int64_t factor = r.env.count("CONVJIT_ASYNC") ? 4 : 1;
      EXPECT_GT(calls_jit, factor * calls_generic) << calls_jit << " JIT calls, " << calls_generic << " generic";
    }
    if (reference_trace.empty()) {
      reference_trace = losses;
      reference_results = results[0];
      reference_name = r.name;
      continue;
    }
    EXPECT_TRUE(losses == reference_trace)
        << "the loss trace of " << r.name << " differs from " << reference_name << "'s (" << trace << ")";
    EXPECT_EQ(results[0], reference_results) << r.name << " vs " << reference_name;
  }
}

}  // namespace
}  // namespace convjit::testing::tools
