// The code budget is full: the kernels whose configurations were called least since the last
// eviction leave (their configurations go back to tier 0 and compile again once they are hot
// again), and their code is unmapped once no call can still be running it.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "runtime_impl.hpp"

namespace convjit {

using detail::ConfigSlot;
using detail::SlotState;

bool Runtime::Impl::evict_to_fit(int64_t bytes) {
  const int64_t budget = policy.code_budget_bytes;
  if (cache_.mapped_bytes() + bytes <= budget) return true;
  if (bytes > budget) return false;
  const std::vector<const jit::CompiledKernel*> kernels = cache_.list();
  std::unordered_map<const jit::CompiledKernel*, int64_t> uses;
  for (const jit::CompiledKernel* k : kernels) uses[k] = 0;
  table_.for_each([&](ConfigSlot& slot) {
    const int64_t calls = slot.calls.load(std::memory_order_relaxed);
    if (const jit::CompiledKernel* k = slot.kernel.load(std::memory_order_relaxed)) {
      if (auto it = uses.find(k); it != uses.end())
        it->second += calls - slot.calls_at_sweep.load(std::memory_order_relaxed);
    }
    slot.calls_at_sweep.store(calls, std::memory_order_relaxed);
  });
  std::vector<const jit::CompiledKernel*> victims = kernels;  // oldest first among equals
  std::stable_sort(victims.begin(), victims.end(),
                   [&](const jit::CompiledKernel* a, const jit::CompiledKernel* b) { return uses[a] < uses[b]; });

  // The least used until the rest fit, unlinked from their slots in one pass, then taken out of
  // the cache.
  std::unordered_set<const jit::CompiledKernel*> leaving;
  int64_t mapped = cache_.mapped_bytes();
  for (const jit::CompiledKernel* victim : victims) {
    if (mapped + bytes <= budget) break;
    leaving.insert(victim);
    mapped -= int64_t(victim->mapped_bytes);
  }
  table_.for_each([&](ConfigSlot& slot) {
    if (!leaving.count(slot.kernel.load(std::memory_order_relaxed))) return;
    slot.kernel.store(nullptr, std::memory_order_seq_cst);  // before the grace period below
    slot.calls_at_cold.store(slot.calls.load(std::memory_order_relaxed), std::memory_order_relaxed);
    slot.kernel_ns.store(-1, std::memory_order_relaxed);
    slot.state.store(int(SlotState::Cold), std::memory_order_release);
  });
  std::vector<std::unique_ptr<jit::CompiledKernel>> evicted;
  for (const jit::CompiledKernel* victim : leaving) evicted.push_back(cache_.take(victim));
  grace_.wait_for_readers();
  kernel_evictions_.fetch_add(int64_t(evicted.size()), std::memory_order_relaxed);
  evicted.clear();  // unmapped
  return cache_.mapped_bytes() + bytes <= budget;
}

}  // namespace convjit
