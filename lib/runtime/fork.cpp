#include "fork.hpp"

#include <pthread.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "runtime_impl.hpp"

namespace convjit::detail {
namespace {

// Leaked on purpose: runtimes may be destroyed after static destructors ran (the default one).
std::mutex& live_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::vector<Runtime::Impl*>& live_runtimes() {
  static auto* v = new std::vector<Runtime::Impl*>;
  return *v;
}

void before_fork() {
  live_mutex().lock();
  for (Runtime::Impl* r : live_runtimes()) r->lock_for_fork();
}
void after_fork_in_parent() {
  for (Runtime::Impl* r : live_runtimes()) r->unlock_after_fork();
  live_mutex().unlock();
}
void after_fork_in_child() {
  for (Runtime::Impl* r : live_runtimes()) r->reset_in_forked_child();
  live_mutex().unlock();
}

}  // namespace

void register_for_fork(Runtime::Impl* runtime) {
  static const int registered = pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
  (void)registered;
  std::lock_guard<std::mutex> lock(live_mutex());
  live_runtimes().push_back(runtime);
}

void unregister_for_fork(Runtime::Impl* runtime) {
  std::lock_guard<std::mutex> lock(live_mutex());
  auto& live = live_runtimes();
  live.erase(std::remove(live.begin(), live.end(), runtime), live.end());
}

}  // namespace convjit::detail

namespace convjit {

// The order every other path takes these locks in (never two at once, but the compile lock with
// the cache's inside it): the compile, the cache, the table, the queue.
void Runtime::Impl::lock_for_fork() {
  compile_serial_.lock();
  cache_.mutex().lock();
  table_.mutex().lock();
  compile_mutex_.lock();
}

void Runtime::Impl::unlock_after_fork() {
  compile_mutex_.unlock();
  table_.mutex().unlock();
  cache_.mutex().unlock();
  compile_serial_.unlock();
}

void Runtime::Impl::reset_in_forked_child() {
  queue_.clear();
  in_flight_ = 0;
  warm_pending_.store(0);
  stopping_ = false;
  (void)worker_.release();  // the parent's thread: not in this process, so never joined here
  (void)work_ready_.release();
  (void)work_done_.release();
  work_ready_ = std::make_unique<std::condition_variable>();
  work_done_ = std::make_unique<std::condition_variable>();
  unlock_after_fork();
  table_.for_each([](detail::ConfigSlot& slot) {
    int queued = int(detail::SlotState::Queued);
    slot.state.compare_exchange_strong(queued, int(detail::SlotState::Cold));
  });
}

}  // namespace convjit
