// Policy::from_environment: the CONVJIT_* variables, read when a runtime is created. A value that
// does not parse is ignored (with a warning under CONVJIT_VERBOSE) rather than failing the app.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>

#include "convjit/runtime.hpp"

namespace convjit {
namespace {

bool parse_int(const char* name, int64_t minimum, int64_t* out) {
  const char* text = std::getenv(name);
  if (!text || !*text) return false;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || value < minimum) {
    std::fprintf(stderr, "convjit: ignoring %s=%s (expects an integer >= %lld)\n", name, text, (long long)minimum);
    return false;
  }
  *out = value;
  return true;
}

bool parse_bool(const char* name, bool* out) {
  int64_t value;
  if (!parse_int(name, 0, &value)) return false;
  *out = value != 0;
  return true;
}

// One of the named values; "expects a, b or c" otherwise.
template <typename T>
void parse_choice(const char* name, std::initializer_list<std::pair<const char*, T>> choices, T* out) {
  const char* text = std::getenv(name);
  if (!text || !*text) return;
  for (const auto& [word, value] : choices) {
    if (std::strcmp(text, word) == 0) {
      *out = value;
      return;
    }
  }
  std::string expected;
  size_t i = 0;
  for (const auto& choice : choices) {
    expected += i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ";
    expected += choice.first;
    ++i;
  }
  std::fprintf(stderr, "convjit: ignoring %s=%s (expects %s)\n", name, text, expected.c_str());
}

}  // namespace

Policy Policy::from_environment() {
  Policy p;
  parse_choice("CONVJIT_BACKEND",
               {{"auto", Backend::Auto}, {"xbyak", Backend::Xbyak}, {"llvm", Backend::Llvm}, {"none", Backend::None}},
               &p.backend);
  parse_int("CONVJIT_HOT_THRESHOLD", 0, &p.hot_threshold);
  parse_bool("CONVJIT_ASYNC", &p.async);
  int64_t threads;
  if (parse_int("CONVJIT_NUM_THREADS", 0, &threads)) p.num_threads = int(threads);
  parse_bool("CONVJIT_ADAPT_THREADS", &p.adapt_threads);
  parse_bool("CONVJIT_VERBOSE", &p.verbose);
  parse_bool("CONVJIT_SPECIALIZE_SIZES", &p.specialize_sizes);
  parse_bool("CONVJIT_DECLINE_SLOWER", &p.decline_slower);
  parse_int("CONVJIT_MAX_CONFIGURATIONS", 16, &p.max_configurations);
  parse_int("CONVJIT_CODE_BUDGET", 0, &p.code_budget_bytes);
  parse_bool("CONVJIT_PERF_MAP", &p.perf_map);
  parse_choice("CONVJIT_MAX_ISA", {{"auto", Isa::Auto}, {"avx2", Isa::Avx2}, {"avx512", Isa::Avx512}}, &p.max_isa);
  if (const char* dir = std::getenv("CONVJIT_CACHE_DIR")) p.cache_dir = dir;
  return p;
}

}  // namespace convjit
