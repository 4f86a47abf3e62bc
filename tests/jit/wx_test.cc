// W^X: generated code is never writable and executable at once (jit/xbyak/xbyak_backend.cpp:
// "mapped read+write while it is emitted, then read+execute (never both)").
//
// Three views of it:
//  - the process's mappings after compiling a few dozen kernels (inline and async, NCHW and
//    NHWC): no mapping is both writable and executable, and read+execute anonymous mappings did
//    appear (so the scan saw the kernels), and are gone once the runtime is destroyed;
//  - every protection request the process makes: this file interposes mmap and mprotect (the
//    test program links the static library, so the generator's calls bind here) and records
//    any request for PROT_WRITE | PROT_EXEC, which a scan after the fact could miss because the
//    state is transient;
//  - each kernel straight from the Xbyak backend: its entry point and its whole code lie in one
//    r-x anonymous mapping, which goes away with the kernel.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "spec_key.hpp"
#include "jit_support.hpp"

// ---- Interposed protection requests (forwarded to the kernel unchanged) ----

namespace {
std::atomic<int64_t> g_exec_requests{0};  // requests including PROT_EXEC
std::atomic<int64_t> g_wx_requests{0};    // requests including PROT_WRITE and PROT_EXEC
std::atomic<int> g_first_wx_prot{0};

void note_protection(int prot) {
  if (prot & PROT_EXEC) g_exec_requests.fetch_add(1);
  if ((prot & PROT_EXEC) && (prot & PROT_WRITE)) {
    if (g_wx_requests.fetch_add(1) == 0) g_first_wx_prot.store(prot);
  }
}
}  // namespace

extern "C" int mprotect(void* addr, size_t len, int prot) noexcept {
  note_protection(prot);
  return int(syscall(SYS_mprotect, addr, len, prot));
}

extern "C" void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t offset) noexcept {
  note_protection(prot);
  return reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, offset));
}

namespace convjit::testing::jit {
namespace {

struct Mapping {
  uintptr_t start = 0, end = 0;
  std::string perms, path, line;
  bool readable() const { return perms.size() >= 3 && perms[0] == 'r'; }
  bool writable() const { return perms.size() >= 3 && perms[1] == 'w'; }
  bool executable() const { return perms.size() >= 3 && perms[2] == 'x'; }
  // No backing file: "" or a name given with prctl(PR_SET_VMA_ANON_NAME), "[anon:...]".
  bool anonymous() const { return path.empty() || path.rfind("[anon", 0) == 0; }
  bool read_execute_anonymous() const { return readable() && executable() && !writable() && anonymous(); }
  bool contains(uintptr_t a) const { return a >= start && a < end; }
};

std::vector<Mapping> read_maps() {
  std::vector<Mapping> maps;
  std::ifstream in("/proc/self/maps");
  std::string line;
  while (std::getline(in, line)) {
    Mapping m;
    m.line = line;
    std::istringstream fields(line);
    std::string range, offset, device, inode;
    fields >> range >> m.perms >> offset >> device >> inode;
    std::getline(fields >> std::ws, m.path);
    const size_t dash = range.find('-');
    if (dash == std::string::npos) continue;
    m.start = uintptr_t(std::stoull(range.substr(0, dash), nullptr, 16));
    m.end = uintptr_t(std::stoull(range.substr(dash + 1), nullptr, 16));
    maps.push_back(std::move(m));
  }
  return maps;
}

std::set<std::pair<uintptr_t, uintptr_t>> read_execute_anonymous_ranges(const std::vector<Mapping>& maps) {
  std::set<std::pair<uintptr_t, uintptr_t>> ranges;
  for (const Mapping& m : maps) {
    if (m.read_execute_anonymous()) ranges.insert({m.start, m.end});
  }
  return ranges;
}

std::vector<std::string> writable_and_executable(const std::vector<Mapping>& maps) {
  std::vector<std::string> bad;
  for (const Mapping& m : maps) {
    if (m.writable() && m.executable()) bad.push_back(m.line);
  }
  return bad;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += "\n    " + l;
  return s;
}

// A few dozen problems with pairwise different specialization keys: kernel sizes, strides
// (NCHW kernels take stride 1 or 2 along W), dilation, mode, channel classes, both layouts and
// all ranks. Each is small; what matters is that each is a separate kernel.
std::vector<ConvDims> distinct_kernel_shapes() {
  std::vector<ConvDims> shapes;
  const std::vector<std::pair<int64_t, int64_t>> kernels = {{1, 1}, {3, 3}, {5, 5}, {7, 7}, {1, 3}, {3, 1}};
  for (auto [kh, kw] : kernels) {
    for (int64_t stride : {1, 2}) {
      shapes.push_back(conv(2, Layout::NCHW, 1, 3, 5, 1, {13, 14, 1}, {kh, kw, 1}, {stride, stride, 1}, {1, 1, 0}));
    }
    for (int64_t stride : {1, 2, 3}) {
      shapes.push_back(conv(2, Layout::NHWC, 1, 3, 12, 1, {13, 14, 1}, {kh, kw, 1}, {stride, stride, 1}, {1, 1, 0}));
    }
  }
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    const int64_t oc = layout == Layout::NHWC ? 12 : 6;  // NHWC with <= 8 runs as NCHW (lib/rewrite/nhwc_as_nchw.hpp)
    shapes.push_back(conv(2, layout, 1, 4, oc, 1, {12, 12, 1}, {3, 3, 1}, {1, 1, 1}, {2, 2, 0}, {2, 2, 1}));
    shapes.push_back(
        conv(2, layout, 1, 4, oc, 1, {12, 12, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}, {1, 1, 1}, Mode::Convolution));
    shapes.push_back(conv(1, layout, 2, 3, oc, 1, {40, 1, 1}, {5, 1, 1}, {1, 1, 1}, {2, 0, 0}));
    shapes.push_back(conv(3, layout, 1, 2, oc, 1, {5, 6, 7}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}));
  }
  // NCHW channel classes 1, 2, 3 (each its own register blocking) next to the 4+ above.
  for (int64_t oc : {1, 2, 3}) shapes.push_back(conv(2, Layout::NCHW, 1, 3, oc, 1, {11, 17, 1}, {3, 3, 1}));
  return shapes;
}

TEST(WriteXorExecute, NoMappingIsWritableAndExecutableAfterManyCompiles) {
  const std::vector<Mapping> before = read_maps();
  const auto rx_before = read_execute_anonymous_ranges(before);
  const int64_t exec_requests_before = g_exec_requests.load();
  const std::vector<ConvDims> shapes = distinct_kernel_shapes();
  ASSERT_GE(shapes.size(), 36u);
  {
    Runtime inline_runtime(eager_policy());
    Policy async_policy = eager_policy();
    async_policy.async = true;
    Runtime async_runtime(async_policy);
    CONVJIT_SKIP_WITHOUT_BACKEND(inline_runtime);

    for (size_t i = 0; i < shapes.size(); ++i) {
      const Problem p(shapes[i], case_seed(0x5758, i));
      EXPECT_TRUE(p.matches_reference(p.run(inline_runtime), "inline y")) << "shape " << i;
      p.run(async_runtime);
    }
    async_runtime.wait_for_compiles();
    for (Runtime* runtime : {&inline_runtime, &async_runtime}) {
      const RuntimeStats stats = runtime->stats();
      // Every shape compiled, each into its own kernel: the scan below looks at real code.
      EXPECT_EQ(count_state(stats, "jit"), int64_t(shapes.size()));
      EXPECT_EQ(stats.kernels, int64_t(shapes.size()));
      EXPECT_GT(stats.code_bytes, 0);
    }

    const std::vector<Mapping> after = read_maps();
    const std::vector<std::string> bad = writable_and_executable(after);
    EXPECT_TRUE(bad.empty()) << "writable and executable mappings:" << joined(bad);
    std::vector<std::string> appeared;
    for (const Mapping& m : after) {
      if (m.read_execute_anonymous() && !rx_before.count({m.start, m.end})) appeared.push_back(m.line);
    }
    EXPECT_GE(appeared.size(), 1u) << "no new r-x anonymous mapping after compiling " << shapes.size()
                                   << " kernels twice: were kernels emitted?";
  }
  // Interposed requests: some asked for PROT_EXEC (so they went through the wrappers above), and
  // none ever asked for write and execute together, not even transiently.
  EXPECT_GT(g_exec_requests.load() - exec_requests_before, 0)
      << "no PROT_EXEC request seen: the generator's mmap/mprotect did not bind to this test's wrappers";
  EXPECT_EQ(g_wx_requests.load(), 0) << "first W+X request had prot = " << g_first_wx_prot.load();

  // The runtimes owned that code: none of it is left.
  const std::vector<Mapping> destroyed = read_maps();
  std::vector<std::string> left;
  for (const Mapping& m : destroyed) {
    if (m.read_execute_anonymous() && !rx_before.count({m.start, m.end})) left.push_back(m.line);
  }
  EXPECT_TRUE(left.empty()) << "code mappings left after the runtimes were destroyed:" << joined(left);
}

#if defined(CONVJIT_HAVE_XBYAK)
convjit::jit::SpecKey key_2d(int32_t layout, int64_t kh, int64_t kw, int64_t stride, int32_t oc_class, bool relu) {
  convjit::jit::SpecKey k{};
  k.rank = 2;
  k.layout = layout;
  k.flip = 0;
  k.relu = relu ? 1 : 0;
  k.isa = convjit::jit::Isa::Avx2Fma;
  k.oc_class = oc_class;
  const int64_t kernel[3] = {1, kh, kw}, strides[3] = {1, stride, stride};
  for (int d = 0; d < 3; ++d) {
    k.kernel[d] = kernel[d];
    k.stride[d] = strides[d];
    k.dilation[d] = 1;
  }
  return k;
}

TEST(WriteXorExecute, EachXbyakKernelLivesInOneReadExecuteMapping) {
  std::unique_ptr<convjit::jit::Backend> backend = convjit::jit::make_xbyak_backend();
  ASSERT_NE(backend, nullptr);
  if (const std::string reason = backend->unavailable_reason(); !reason.empty()) GTEST_SKIP() << reason;

  std::vector<convjit::jit::CompiledKernel> kernels;
  for (int32_t layout : {CONVJIT_NCHW, CONVJIT_NHWC}) {
    for (int64_t k : {1, 3, 5, 7}) {
      // Each layout's narrowest and widest channel blocking.
      const bool nchw = layout == CONVJIT_NCHW;
      for (int32_t oc_class : {nchw ? 1 : convjit::jit::kNhwcNarrowClass, nchw ? 4 : convjit::jit::kNhwcWideClass}) {
        convjit::jit::CompiledKernel out;
        std::string error;
        const convjit::jit::SpecKey key = key_2d(layout, k, k, 1, oc_class, k == 3);
        ASSERT_TRUE(backend->compile(key, &out, &error)) << key.name() << ": " << error;
        EXPECT_EQ(out.name, key.name());
        EXPECT_TRUE(out.key == key) << key.name();
        EXPECT_GT(out.code_bytes, 0u) << key.name();
        // What the code budget made room for before the mapping is what was mapped.
        const size_t predicted = backend->mapped_bytes_before_compile(key);
        if (predicted != 0) {
          EXPECT_EQ(predicted, out.mapped_bytes) << key.name();
        }
        kernels.push_back(std::move(out));
      }
    }
  }
  const std::vector<Mapping> maps = read_maps();
  std::vector<uintptr_t> entries;
  for (const convjit::jit::CompiledKernel& k : kernels) {
    const uintptr_t entry = reinterpret_cast<uintptr_t>(k.kernel.compute);
    entries.push_back(entry);
    const Mapping* home = nullptr;
    for (const Mapping& m : maps) {
      if (m.contains(entry)) home = &m;
    }
    ASSERT_NE(home, nullptr) << k.name << ": entry point " << std::hex << entry << " is in no mapping";
    EXPECT_TRUE(home->read_execute_anonymous()) << k.name << " lives in: " << home->line;
    EXPECT_LE(entry + k.code_bytes, home->end) << k.name << " runs past its mapping: " << home->line;
  }
  kernels.clear();  // frees the code
  for (const Mapping& m : read_maps()) {
    if (!m.executable()) continue;
    for (uintptr_t entry : entries) {
      EXPECT_FALSE(m.contains(entry)) << "a freed kernel's code is still executable: " << m.line;
    }
  }
}
#else
TEST(WriteXorExecute, EachXbyakKernelLivesInOneReadExecuteMapping) {
  GTEST_SKIP() << "built without Xbyak";
}
#endif

// The LLVM backend's code comes from ORC's JITLink memory manager: written while read+write,
// finalized read+execute. Its kernels' entry points lie in read+execute mappings, no request
// ever asked for write and execute together, and no mapping is both.
#if defined(CONVJIT_HAVE_LLVM)
TEST(WriteXorExecute, LlvmKernelsAreReadExecuteAndNeverWritableAndExecutable) {
  std::unique_ptr<convjit::jit::Backend> backend = convjit::jit::make_llvm_backend();
  ASSERT_NE(backend, nullptr);
  if (const std::string reason = backend->unavailable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  const int64_t exec_requests_before = g_exec_requests.load();
  std::vector<convjit::jit::CompiledKernel> kernels;
  for (int64_t k : {1, 3, 5}) {
    for (int64_t stride : {1, 2}) {
      convjit::jit::CompiledKernel out;
      std::string error;
      convjit::jit::SpecKey key{};
      key.rank = 2;
      key.layout = CONVJIT_NCHW;
      key.isa = convjit::jit::Isa::Avx2Fma;
      key.oc_class = int32_t(k);
      key.relu = stride == 2;
      for (int d = 0; d < 3; ++d) {
        key.kernel[d] = d == 0 ? 1 : k;
        key.stride[d] = d == 0 ? 1 : stride;
        key.dilation[d] = 1;
      }
      ASSERT_TRUE(backend->compile(key, &out, &error)) << key.name() << ": " << error;
      kernels.push_back(std::move(out));
    }
  }
  const std::vector<Mapping> maps = read_maps();
  for (const convjit::jit::CompiledKernel& k : kernels) {
    const uintptr_t entry = reinterpret_cast<uintptr_t>(k.kernel.compute);
    const Mapping* home = nullptr;
    for (const Mapping& m : maps) {
      if (m.contains(entry)) home = &m;
    }
    ASSERT_NE(home, nullptr) << k.name << ": entry point " << std::hex << entry << " is in no mapping";
    EXPECT_TRUE(home->readable() && home->executable() && !home->writable()) << k.name << " lives in: " << home->line;
  }
  const std::vector<std::string> bad = writable_and_executable(maps);
  EXPECT_TRUE(bad.empty()) << "writable and executable mappings:" << joined(bad);
  EXPECT_GT(g_exec_requests.load() - exec_requests_before, 0)
      << "no PROT_EXEC request seen: LLVM's mmap/mprotect did not bind to this test's wrappers";
  EXPECT_EQ(g_wx_requests.load(), 0) << "first W+X request had prot = " << g_first_wx_prot.load();
}
#else
TEST(WriteXorExecute, LlvmKernelsAreReadExecuteAndNeverWritableAndExecutable) {
  GTEST_SKIP() << "built without LLVM";
}
#endif

}  // namespace
}  // namespace convjit::testing::jit
