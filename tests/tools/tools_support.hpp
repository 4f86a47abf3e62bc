// Helpers for the suites of tools/: run a tool as a child process (its own environment, stdout,
// stderr, exit status and pid, with a deadline), temporary directories, files, IDX files made on
// the spot, and where the Fashion-MNIST data lives. POSIX only, like the tools.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace convjit::testing::tools {

// Paths of the tools under test (set by tests/CMakeLists.txt).
inline const char* seednet_path() {
  return CONVJIT_TEST_SEEDNET;
}
inline const char* jit_stats_path() {
  return CONVJIT_TEST_JIT_STATS;
}
inline const char* workload_path() {
  return CONVJIT_TEST_WORKLOAD;
}

struct ToolRun {
  std::string command;     // as run, for messages
  int exit_code = -1;      // -1 when killed by a signal
  int signal = 0;          // the signal that ended it, or 0
  bool timed_out = false;  // killed after the deadline
  pid_t pid = 0;
  std::string out, err;

  bool ok() const { return exit_code == 0 && !timed_out; }
  // The command, its status and both outputs (the end of long ones), for failure messages.
  std::string describe() const;
};

// Runs `path args...` and waits for it. The child gets this process's environment without any
// CONVJIT_* variable (so the ambient one cannot change what a test checks), plus `env`.
ToolRun run_tool(const std::string& path, const std::vector<std::string>& args,
                 const std::map<std::string, std::string>& env = {}, double timeout_seconds = 300);

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

bool file_exists(const std::string& path);
std::string read_file(const std::string& path);  // fails the test (ADD_FAILURE) and returns "" if unreadable
void write_file(const std::string& path, const std::string& bytes);
void write_gzip_file(const std::string& path, const std::string& bytes);  // through zlib's gzwrite
std::vector<std::string> split_lines(const std::string& text);
bool contains(const std::string& text, const std::string& part);

// IDX bytes: a big-endian header, then the data.
std::string idx_images_bytes(uint32_t count, uint32_t rows, uint32_t cols, const std::vector<uint8_t>& pixels,
                             uint32_t magic = 0x00000803);
std::string idx_labels_bytes(const std::vector<uint8_t>& labels, uint32_t magic = 0x00000801);
std::string big_endian(uint32_t v);

// The directory holding {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]:
// $CONVJIT_TEST_FASHION_MNIST, else /usr/share/datasets/fashion-mnist (Debian's
// dataset-fashion-mnist, installed by tools/bootstrap.sh). Empty, with *why set, if a file is missing.
std::string fashion_mnist_dir(std::string* why);

}  // namespace convjit::testing::tools

// Skips the test, saying what is missing, when the Fashion-MNIST files are not installed.
#define CONVJIT_REQUIRE_FASHION_MNIST(dir_variable)                                                 \
  std::string dir_variable;                                                                         \
  do {                                                                                              \
    std::string why_missing_;                                                                       \
    dir_variable = ::convjit::testing::tools::fashion_mnist_dir(&why_missing_);                     \
    if (dir_variable.empty()) GTEST_SKIP() << "Fashion-MNIST data not available: " << why_missing_; \
  } while (0)
