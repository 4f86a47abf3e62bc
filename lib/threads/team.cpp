#include "team.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace convjit::detail {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// How long an idle worker watches for the next call before it sleeps: long enough to stay awake
// between the back-to-back calls of a network's step, short enough not to hold a core an idle
// application or a neighbour could use.
constexpr auto kWorkerSpin = std::chrono::microseconds(200);

// A caller that waits this long, and many times the time of one of its own claims, for a worker's
// last claim has met a worker the OS descheduled (another process on its core, or the host
// taking the vCPU: a wait of milliseconds). Calls then run on their calling thread for a while and
// the team is tried again after it. The while starts short and doubles while stalls keep coming
// soon after each retry (a busy neighbour: one stall then costs a few percent of the time alone),
// and falls back to the shortest after a quiet stretch (a rare preemption costs little more than
// itself).
using Clock = std::chrono::steady_clock;
constexpr auto kStalled = std::chrono::microseconds(200);
constexpr int kStalledClaims = 8;
constexpr Clock::duration kShortestAlone = std::chrono::milliseconds(2), kLongestAlone = std::chrono::milliseconds(200);
constexpr int kQuietAlones = 4;  // a stall after this many times the last while alone starts over

// The least work (flops or element visits, as parallel_for counts it) one claim takes: a claim
// moves a cache line between cores, so tasks far smaller than this are claimed several at once.
constexpr double kClaimWork = 1e5;

class Team {
 public:
  void run(int threads, int64_t tasks, int64_t chunk, TaskFn fn, void* context);

 private:
  struct Job {
    uint32_t id = 0;
    TaskFn fn = nullptr;
    void* context = nullptr;
    uint32_t tasks = 0;
    uint32_t chunk = 1;  // tasks per claim
    int helpers = 0;     // workers 0..helpers-1 take part
  };

  void start_workers(int count);
  void work(int index);
  Job read_job(uint32_t id) const;
  int64_t claim_and_run(const Job& job);  // the claims it ran

  std::atomic<bool> busy_{false};           // a caller owns the team
  std::atomic<Clock::rep> alone_until_{0};  // calls run on their own thread until then
  // The caller that owns the team updates these after a stall.
  Clock::time_point last_stall_{};
  Clock::duration alone_ = kShortestAlone;
  int workers_ = 0;  // started; only the owning caller changes it

  // The current job: its fields are written before `published_`, and a worker may read them
  // mixed with a newer job's; its claims name the job id it read, and the caller closes the old
  // job's claims before it writes a field (each field released, each read acquiring it), so a
  // claim with a newer job's fields never succeeds (a job's fields change only after all of its
  // tasks are done). No lock: the caller never waits for a worker that is not running one of its
  // tasks.
  std::atomic<TaskFn> fn_{nullptr};
  std::atomic<void*> context_{nullptr};
  std::atomic<uint32_t> tasks_{0}, chunk_{1};
  std::atomic<int> helpers_{0};
  std::atomic<uint32_t> published_{0};  // the job id; idle workers wait on it
  std::atomic<uint64_t> claims_{0};     // job id << 32 | next task
  std::atomic<uint32_t> done_{0};       // tasks of the current job that have returned
};

Team::Job Team::read_job(uint32_t id) const {
  Job job;
  job.id = id;
  job.fn = fn_.load(std::memory_order_acquire);
  job.context = context_.load(std::memory_order_acquire);
  job.tasks = tasks_.load(std::memory_order_acquire);
  job.chunk = chunk_.load(std::memory_order_acquire);
  job.helpers = helpers_.load(std::memory_order_acquire);
  return job;
}

int64_t Team::claim_and_run(const Job& job) {
  int64_t claims_run = 0;
  uint64_t claim = claims_.load(std::memory_order_acquire);
  for (;;) {
    if (uint32_t(claim >> 32) != job.id || uint32_t(claim) >= job.tasks) return claims_run;
    const uint32_t first = uint32_t(claim), count = std::min(job.chunk, job.tasks - first);
    if (claims_.compare_exchange_weak(claim, claim + count, std::memory_order_acq_rel, std::memory_order_acquire)) {
      for (uint32_t t = first; t < first + count; ++t) job.fn(job.context, int64_t(t));
      done_.fetch_add(count, std::memory_order_release);
      claim += count;
      ++claims_run;
    }
  }
}

void Team::work(int index) {
  uint32_t seen = 0;
  for (;;) {
    const auto give_up = Clock::now() + kWorkerSpin;
    uint32_t id = published_.load(std::memory_order_acquire);
    for (int spins = 1; id == seen; ++spins) {
      cpu_relax();
      if (spins % 256 == 0 && Clock::now() > give_up) published_.wait(seen, std::memory_order_acquire);
      id = published_.load(std::memory_order_acquire);
    }
    seen = id;
    const Job job = read_job(id);
    if (index < job.helpers) claim_and_run(job);
  }
}

void Team::start_workers(int count) {
  for (; workers_ < count; ++workers_) {
    const int index = workers_;
    std::thread([this, index] { work(index); }).detach();
  }
}

void Team::run(int threads, int64_t tasks, int64_t chunk, TaskFn fn, void* context) {
  const auto start = Clock::now();
  if (start.time_since_epoch().count() < alone_until_.load(std::memory_order_relaxed) ||
      busy_.exchange(true, std::memory_order_acquire)) {
    for (int64_t t = 0; t < tasks; ++t) fn(context, t);
    return;
  }
  start_workers(threads - 1);
  const uint32_t id = published_.load(std::memory_order_relaxed) + 1;
  // Close the last job's claims first: a worker still on it that reads any new field below then
  // sees no claim left under the old id, where it could have paired this job's context and task
  // count with the old job's last claim and run tasks that do not exist.
  claims_.store(uint64_t(id - 1) << 32 | std::numeric_limits<uint32_t>::max(), std::memory_order_relaxed);
  fn_.store(fn, std::memory_order_release);
  context_.store(context, std::memory_order_release);
  tasks_.store(uint32_t(tasks), std::memory_order_release);
  chunk_.store(uint32_t(chunk), std::memory_order_release);
  helpers_.store(threads - 1, std::memory_order_release);
  done_.store(0, std::memory_order_relaxed);
  claims_.store(uint64_t(id) << 32, std::memory_order_release);
  published_.store(id, std::memory_order_release);
  published_.notify_all();
  const Job job = read_job(id);
  const int64_t claims_run = claim_and_run(job);
  // Only tasks already claimed remain; each is running on a worker.
  const auto claimed_all = Clock::now();
  for (int spins = 0; done_.load(std::memory_order_acquire) != job.tasks; ++spins) {
    if (spins < 4096)
      cpu_relax();
    else
      std::this_thread::yield();
  }
  if (claims_run > 0) {
    // A worker that took far longer than a claim takes here was descheduled: its core is busy.
    const auto waited = Clock::now() - claimed_all, claim_time = (claimed_all - start) / claims_run;
    if (waited > std::max<Clock::duration>(kStalled, kStalledClaims * claim_time)) {
      const Clock::time_point now = Clock::now();
      alone_ = now - last_stall_ < kQuietAlones * alone_ ? std::min(2 * alone_, kLongestAlone) : kShortestAlone;
      last_stall_ = now;
      alone_until_.store((now + alone_).time_since_epoch().count(), std::memory_order_relaxed);
    }
  }
  busy_.store(false, std::memory_order_release);
}

// Leaked on purpose: workers are detached and may still be waiting on it while static destructors
// run at exit.
std::atomic<Team*> the_team{nullptr};
std::mutex team_creation;

Team& team() {
  Team* t = the_team.load(std::memory_order_acquire);
  if (t) return *t;
  std::lock_guard<std::mutex> lock(team_creation);
  t = the_team.load(std::memory_order_relaxed);
  if (!t) {
    t = new Team;
    the_team.store(t, std::memory_order_release);
  }
  return *t;
}

// fork() copies the team but none of its workers: the child starts a new one (the old one is
// abandoned).
void before_fork() {
  team_creation.lock();
}
void after_fork_in_parent() {
  team_creation.unlock();
}
void after_fork_in_child() {
  the_team.store(nullptr, std::memory_order_relaxed);
  team_creation.unlock();
}
[[maybe_unused]] const int fork_handlers = pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);

}  // namespace

void run_on_team(int threads, int64_t tasks, double work, TaskFn fn, void* context) {
  if (threads <= 1 || tasks <= 1 || uint64_t(tasks) > std::numeric_limits<uint32_t>::max()) {
    for (int64_t t = 0; t < tasks; ++t) fn(context, t);
    return;
  }
  const double per_task = work / double(tasks);
  const int64_t fair_share = (tasks + threads - 1) / threads;
  const int64_t chunk = std::clamp<int64_t>(int64_t(std::ceil(kClaimWork / per_task)), 1, fair_share);
  team().run(threads, tasks, chunk, fn, context);
}

}  // namespace convjit::detail
