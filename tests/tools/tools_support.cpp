#include "tools_support.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace convjit::testing::tools {
namespace {

std::string tail(const std::string& text, size_t limit) {
  return text.size() <= limit
             ? text
             : "[... " + std::to_string(text.size() - limit) + " bytes]\n" + text.substr(text.size() - limit);
}

}  // namespace

std::string ToolRun::describe() const {
  std::ostringstream s;
  s << "command: " << command << "\n";
  if (timed_out)
    s << "status: killed after the deadline\n";
  else if (signal)
    s << "status: killed by signal " << signal << "\n";
  else
    s << "status: exit " << exit_code << "\n";
  s << "--- stdout\n" << tail(out, 6000) << "--- stderr\n" << tail(err, 3000) << "---";
  return s.str();
}

ToolRun run_tool(const std::string& path, const std::vector<std::string>& args,
                 const std::map<std::string, std::string>& env, double timeout_seconds) {
  ToolRun run;
  run.command = path;
  for (const std::string& a : args) run.command += " " + a;
  for (const auto& [name, value] : env) run.command = name + "=" + value + " " + run.command;

  std::vector<std::string> environment;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "CONVJIT_", 8) != 0) environment.emplace_back(*e);
  }
  for (const auto& [name, value] : env) environment.push_back(name + "=" + value);
  std::vector<char*> envp, argv;
  for (std::string& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> arg_copies = args;
  std::string path_copy = path;
  argv.push_back(path_copy.data());
  for (std::string& a : arg_copies) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return run;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    return run;
  }
  if (pid == 0) {  // the child: only async-signal-safe calls from here
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    execve(argv[0], argv.data(), envp.data());
    const char message[] = "run_tool: execve failed\n";
    (void)!write(2, message, sizeof message - 1);
    _exit(127);
  }
  run.pid = pid;
  close(out_pipe[1]);
  close(err_pipe[1]);

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&run.out, &run.err};
  int open_pipes = 2;
  while (open_pipes > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      run.timed_out = true;
      kill(pid, SIGKILL);  // the child started above, by its pid
      break;
    }
    const int ready = poll(fds, 2, int(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[65536];
      const ssize_t got = read(fds[i].fd, buffer, sizeof buffer);
      if (got > 0) {
        sinks[i]->append(buffer, size_t(got));
      } else if (got == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_pipes;
      }
    }
  }
  for (const pollfd& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
  return run;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/convjit-tools-test-XXXXXX";
  if (!mkdtemp(pattern.data())) {
    ADD_FAILURE() << "mkdtemp " << pattern << ": " << std::strerror(errno);
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ignored);
  std::filesystem::remove_all(path_, ignored);
}

bool file_exists(const std::string& path) {
  return access(path.c_str(), F_OK) == 0;
}

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    ADD_FAILURE() << "cannot read " << path;
    return {};
  }
  std::ostringstream s;
  s << file.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << bytes;
  if (!file) ADD_FAILURE() << "cannot write " << path;
}

void write_gzip_file(const std::string& path, const std::string& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  if (!file) {
    ADD_FAILURE() << "gzopen " << path;
    return;
  }
  if (!bytes.empty() && gzwrite(file, bytes.data(), unsigned(bytes.size())) != int(bytes.size())) {
    ADD_FAILURE() << "gzwrite " << path;
  }
  if (gzclose(file) != Z_OK) ADD_FAILURE() << "gzclose " << path;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string big_endian(uint32_t v) {
  const char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
  return std::string(b, 4);
}

std::string idx_images_bytes(uint32_t count, uint32_t rows, uint32_t cols, const std::vector<uint8_t>& pixels,
                             uint32_t magic) {
  return big_endian(magic) + big_endian(count) + big_endian(rows) + big_endian(cols) +
         std::string(pixels.begin(), pixels.end());
}

std::string idx_labels_bytes(const std::vector<uint8_t>& labels, uint32_t magic) {
  return big_endian(magic) + big_endian(uint32_t(labels.size())) + std::string(labels.begin(), labels.end());
}

std::string fashion_mnist_dir(std::string* why) {
  const char* env = std::getenv("CONVJIT_TEST_FASHION_MNIST");
  const std::string dir = env && *env ? env : "/usr/share/datasets/fashion-mnist";
  for (const char* name :
       {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    const std::string file = dir + "/" + name;
    if (access((file + ".gz").c_str(), R_OK) != 0 && access(file.c_str(), R_OK) != 0) {
      *why = file +
             "[.gz] not found (install dataset-fashion-mnist: tools/bootstrap.sh, or set "
             "CONVJIT_TEST_FASHION_MNIST to a directory holding the four IDX files)";
      return {};
    }
  }
  return dir;
}

}  // namespace convjit::testing::tools
