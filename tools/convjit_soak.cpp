// convjit-soak: a long run of mixed ops, shapes and thread counts on one runtime whose code budget
// keeps it evicting, with forks along the way, ending with a verdict. Not a CI test (it runs for
// minutes); bench/RESULTS.md records its figures.
//
// Several application threads call random problems (forward convolution, backward data and
// backward filter, max and mean pooling forward and backward; ranks 1-3, both layouts, both modes,
// groups and depthwise, strides, dilations, padding) through one runtime (threshold 2, compiles in
// the background, a small code budget); a controller changes the process's thread count and
// forks children that call the library and must exit within 30 s. One result in --check-every is
// compared bitwise with the problem's reference, made once with the problem by a runtime without
// JIT on one thread (the library's contract: every tier and thread count gives the same bits). The kernels' mapped
// bytes are sampled against the budget and the process's resident memory is recorded.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "convjit/convjit.hpp"
#include "convjit/runtime.hpp"

namespace {

using namespace convjit;
using Clock = std::chrono::steady_clock;

struct Options {
  double seconds = 600;
  int app_threads = 3;
  int64_t budget = 256 << 10;
  int check_every = 4;
  double fork_every = 5;
  uint64_t seed = 1;
};

[[noreturn]] void usage(int status) {
  std::fprintf(status ? stderr : stdout,
               "usage: convjit-soak [--seconds S] [--app-threads N] [--budget BYTES] [--check-every N]\n"
               "                    [--fork-every S] [--seed N]\n"
               "Mixed ops, shapes and thread counts on one evicting runtime, forks included; checks one\n"
               "result in N bitwise against the generic tier on one thread. Defaults: 600 s, 3 threads,\n"
               "256 KiB budget, every 4th result, a fork every 5 s. Exit status 0: every check held.\n");
  std::exit(status);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") usage(0);
    if (i + 1 >= argc) usage(2);
    const char* v = argv[++i];
    char* end = nullptr;
    const double number = std::strtod(v, &end);
    if (end == v || *end != '\0' || number < 0) usage(2);
    if (arg == "--seconds")
      o.seconds = number;
    else if (arg == "--app-threads")
      o.app_threads = std::max(1, int(number));
    else if (arg == "--budget")
      o.budget = int64_t(number);
    else if (arg == "--check-every")
      o.check_every = std::max(1, int(number));
    else if (arg == "--fork-every")
      o.fork_every = number;
    else if (arg == "--seed")
      o.seed = uint64_t(number);
    else
      usage(2);
  }
  return o;
}

// The ops the soak calls (Lp-norm pooling, a variant of the others' paths, is left out).
constexpr Op kOps[] = {Op::ConvForward,     Op::ConvBackwardData, Op::ConvBackwardFilter, Op::MaxPoolForward,
                       Op::MeanPoolForward, Op::MaxPoolBackward,  Op::MeanPoolBackward};
constexpr int kOpCount = int(sizeof kOps / sizeof kOps[0]);
constexpr int kOpCodes = int(Op::LpNormPoolBackward) + 1;

int64_t pick(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// A random valid convolution of at most a few MFLOP.
ConvDims random_conv(std::mt19937_64& rng) {
  for (;;) {
    ConvDims d;
    d.rank = int32_t(pick(rng, 1, 10) <= 7 ? 2 : pick(rng, 0, 1) ? 1 : 3);
    d.layout = pick(rng, 0, 1) ? Layout::NHWC : Layout::NCHW;
    d.mode = pick(rng, 0, 4) ? Mode::CrossCorrelation : Mode::Convolution;
    d.batch = pick(rng, 1, 4);
    d.groups = pick(rng, 0, 5) ? 1 : pick(rng, 2, 8);
    const bool depthwise = d.groups > 1 && pick(rng, 0, 1);
    d.in_channels = d.groups * (depthwise ? 1 : pick(rng, 1, 16));
    d.out_channels = d.groups * pick(rng, 1, depthwise ? 2 : 24);
    const int64_t size_cap = d.rank == 1 ? 200 : d.rank == 2 ? 40 : 12;
    for (int i = 0; i < d.rank; ++i) {
      d.in_size[size_t(i)] = pick(rng, 3, size_cap);
      d.kernel[size_t(i)] = pick(rng, 1, d.rank == 3 ? 3 : 7);
      d.stride[size_t(i)] = pick(rng, 0, 3) ? 1 : pick(rng, 2, 3);
      d.dilation[size_t(i)] = pick(rng, 0, 4) ? 1 : 2;
      d.pad_begin[size_t(i)] = pick(rng, 0, 3);
      d.pad_end[size_t(i)] = pick(rng, 0, 3);
    }
    try {
      d.output_size();
      if (d.output_elements() * d.weight_elements() / d.out_channels * 2 < 20e6) return d;
    } catch (const Error&) {
    }
  }
}

PoolDims random_pool(std::mt19937_64& rng) {
  for (;;) {
    PoolDims d;
    d.rank = int32_t(pick(rng, 1, 10) <= 7 ? 2 : pick(rng, 0, 1) ? 1 : 3);
    d.layout = pick(rng, 0, 1) ? Layout::NHWC : Layout::NCHW;
    d.batch = pick(rng, 1, 4);
    d.channels = pick(rng, 1, 40);
    for (int i = 0; i < d.rank; ++i) {
      d.in_size[size_t(i)] = pick(rng, 2, d.rank == 3 ? 12 : 40);
      d.window[size_t(i)] = pick(rng, 1, 3);
      d.stride[size_t(i)] = pick(rng, 1, 3);
      d.pad_begin[size_t(i)] = pick(rng, 0, d.window[size_t(i)] - 1);
      d.pad_end[size_t(i)] = pick(rng, 0, d.window[size_t(i)] - 1);
    }
    try {
      d.output_size();
      return d;
    } catch (const Error&) {
    }
  }
}

std::vector<float> random_floats(std::mt19937_64& rng, int64_t n) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = u(rng);
  return v;
}

// One random problem of `op`, run on a runtime, its output returned.
struct Problem {
  Op op;
  ConvDims conv;
  PoolDims pool;
  bool bias = false;
  Activation activation = Activation::Identity;
  std::vector<float> a, b, c;  // the op's inputs, in its argument order

  Problem(Op which, std::mt19937_64& rng) : op(which) {
    if (op <= Op::ConvBackwardFilter) {
      conv = random_conv(rng);
      bias = pick(rng, 0, 1);
      activation = pick(rng, 0, 1) ? Activation::Relu : Activation::Identity;
      if (op == Op::ConvForward) {
        a = random_floats(rng, conv.input_elements());
        b = random_floats(rng, conv.weight_elements());
        c = random_floats(rng, conv.out_channels);
      } else if (op == Op::ConvBackwardData) {
        a = random_floats(rng, conv.output_elements());
        b = random_floats(rng, conv.weight_elements());
      } else {
        a = random_floats(rng, conv.input_elements());
        b = random_floats(rng, conv.output_elements());
      }
    } else {
      pool = random_pool(rng);
      a = random_floats(rng, pool.input_elements());
      if (op == Op::MaxPoolBackward) {
        b.resize(size_t(pool.output_elements()));
        maxpool_forward(pool, a.data(), b.data());
        c = random_floats(rng, pool.output_elements());
      } else if (op == Op::MeanPoolBackward) {
        c = random_floats(rng, pool.output_elements());
      }
    }
  }

  std::vector<float> run(Runtime& runtime) const {
    std::vector<float> out;
    switch (op) {
      case Op::ConvForward:
        out.resize(size_t(conv.output_elements()));
        runtime.conv_forward(conv, a.data(), b.data(), bias ? c.data() : nullptr, activation, out.data());
        break;
      case Op::ConvBackwardData:
        out.resize(size_t(conv.input_elements()));
        runtime.conv_backward_data(conv, a.data(), b.data(), out.data());
        break;
      case Op::ConvBackwardFilter:
        out.resize(size_t(conv.weight_elements()));
        runtime.conv_backward_filter(conv, a.data(), b.data(), out.data());
        break;
      case Op::MaxPoolForward:
        out.resize(size_t(pool.output_elements()));
        runtime.maxpool_forward(pool, a.data(), out.data());
        break;
      case Op::MeanPoolForward:
        out.resize(size_t(pool.output_elements()));
        runtime.meanpool_forward(pool, a.data(), out.data());
        break;
      case Op::MaxPoolBackward:
        out.resize(size_t(pool.input_elements()));
        runtime.maxpool_backward(pool, a.data(), b.data(), c.data(), out.data());
        break;
      case Op::MeanPoolBackward:
        out.resize(size_t(pool.input_elements()));
        runtime.meanpool_backward(pool, c.data(), out.data());
        break;
    }
    return out;
  }
};

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * int64_t(sysconf(_SC_PAGESIZE));
}

Policy soak_policy(int64_t budget) {
  Policy p;
  p.backend = Backend::Auto;
  p.hot_threshold = 2;
  p.async = true;
  p.code_budget_bytes = budget;
  return p;
}

Policy generic_policy() {
  Policy p;
  p.backend = Backend::None;
  p.num_threads = 1;
  return p;
}

// A forked child: a few problems through the inherited runtime and a new one, each checked.
int child_main(Runtime& inherited, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Runtime fresh(soak_policy(1 << 20)), generic(generic_policy());
  set_num_threads(int(pick(rng, 1, 3)));
  for (int i = 0; i < 12; ++i) {
    const Problem p(kOps[pick(rng, 0, kOpCount - 1)], rng);
    const std::vector<float> want = p.run(generic);
    if (!same_bits(p.run(inherited), want) || !same_bits(p.run(fresh), want)) return 1;
  }
  inherited.wait_for_compiles();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  Runtime runtime(soak_policy(o.budget)), generic(generic_policy());
  std::atomic<int64_t> calls[kOpCodes] = {}, checks{0}, mismatches{0}, over_budget{0}, samples{0};
  std::atomic<int64_t> peak_rss{0}, peak_mapped{0}, forks{0}, fork_failures{0};
  std::atomic<bool> stop{false};
  const auto end = Clock::now() + std::chrono::duration<double>(o.seconds);

  std::vector<std::thread> apps;
  for (int t = 0; t < o.app_threads; ++t) {
    apps.emplace_back([&, t] {
      std::mt19937_64 rng(o.seed * 1000003 + uint64_t(t));
      // A pool of problems per thread, called again and again (so they go hot) and renewed now
      // and then (so the hot set moves and the budget evicts).
      std::vector<Problem> pool;
      std::vector<std::vector<float>> want;  // each problem's reference
      auto fresh = [&] {
        Problem p(kOps[pick(rng, 0, kOpCount - 1)], rng);
        std::vector<float> reference = p.run(generic);
        return std::make_pair(std::move(p), std::move(reference));
      };
      for (int i = 0; i < 24; ++i) {
        auto [p, reference] = fresh();
        pool.push_back(std::move(p));
        want.push_back(std::move(reference));
      }
      for (int64_t n = 0; !stop.load(std::memory_order_relaxed); ++n) {
        const size_t i = size_t(pick(rng, 0, int64_t(pool.size()) - 1));
        if (pick(rng, 0, 40) == 0) std::tie(pool[i], want[i]) = fresh();
        const Problem& p = pool[i];
        const std::vector<float> got = p.run(runtime);
        calls[int(p.op)].fetch_add(1, std::memory_order_relaxed);
        if (n % o.check_every == 0) {
          checks.fetch_add(1, std::memory_order_relaxed);
          if (!same_bits(got, want[i])) {
            if (mismatches.fetch_add(1) < 5) std::fprintf(stderr, "convjit-soak: MISMATCH in %s\n", op_name(p.op));
          }
        }
      }
    });
  }

  std::mt19937_64 rng(o.seed);
  auto next_fork = Clock::now() + std::chrono::duration<double>(o.fork_every);
  while (Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    set_num_threads(int(pick(rng, 1, 3)));  // the process setting, changed under running calls
    const RuntimeStats s = runtime.stats();
    samples.fetch_add(1);
    if (s.mapped_bytes > o.budget) over_budget.fetch_add(1);
    peak_mapped.store(std::max(peak_mapped.load(), s.mapped_bytes));
    peak_rss.store(std::max(peak_rss.load(), resident_bytes()));
    if (o.fork_every > 0 && Clock::now() >= next_fork) {
      next_fork = Clock::now() + std::chrono::duration<double>(o.fork_every);
      const uint64_t child_seed = rng();
      const pid_t pid = fork();
      if (pid == 0) _exit(child_main(runtime, child_seed));
      forks.fetch_add(1);
      int status = 0;
      const auto give_up = Clock::now() + std::chrono::seconds(30);
      pid_t done = 0;
      while ((done = waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (done == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        std::fprintf(stderr, "convjit-soak: a forked child did not exit within 30 s\n");
        fork_failures.fetch_add(1);
      } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "convjit-soak: a forked child failed (status %d)\n", status);
        fork_failures.fetch_add(1);
      }
    }
  }
  stop.store(true);
  for (std::thread& t : apps) t.join();
  runtime.wait_for_compiles();

  const RuntimeStats s = runtime.stats();
  int64_t total = 0;
  for (const auto& c : calls) total += c.load();
  std::printf("convjit-soak: %.0f s, %d application threads, code budget %lld bytes, backend %s\n", o.seconds,
              o.app_threads, (long long)o.budget, s.backend.c_str());
  std::printf("calls: %lld (", (long long)total);
  for (int i = 0; i < kOpCount; ++i) {
    std::printf("%s%s %lld", i ? ", " : "", op_name(kOps[i]), (long long)calls[int(kOps[i])].load());
  }
  std::printf(")\n");
  std::printf("checked bitwise against their references: %lld, mismatches %lld\n", (long long)checks.load(),
              (long long)mismatches.load());
  std::printf("compiles %lld, kernels evicted %lld, kernels held %lld, configurations %zu (recycled %lld)\n",
              (long long)s.compiles, (long long)s.kernel_evictions, (long long)s.kernels, s.configurations.size(),
              (long long)s.evictions);
  std::printf("mapped code: peak %lld bytes of a %lld budget, over it in %lld of %lld samples; peak RSS %.1f MiB\n",
              (long long)peak_mapped.load(), (long long)o.budget, (long long)over_budget.load(),
              (long long)samples.load(), double(peak_rss.load()) / (1 << 20));
  std::printf("forks: %lld, failed %lld\n", (long long)forks.load(), (long long)fork_failures.load());
  const bool ok = mismatches.load() == 0 && over_budget.load() == 0 && fork_failures.load() == 0 && checks.load() > 0;
  std::printf("%s\n", ok ? "soak passed" : "SOAK FAILED");
  return ok ? 0 : 1;
}
