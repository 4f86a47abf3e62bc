#include "config_table.hpp"

#include <array>
#include <cstring>
#include <initializer_list>

#include "describe.hpp"

namespace convjit::detail {
namespace {

// Per field of a configuration, an odd multiplier (splitmix64's sequence): configuration_id sums
// the fields' products, independent multiplies instead of one chain of 29 dependent steps (which
// was about half of a call's ~50 ns dispatch).
constexpr int kIdFields = 11 + 6 * 3;
constexpr std::array<uint64_t, kIdFields> kFieldMultipliers = [] {
  std::array<uint64_t, kIdFields> m{};
  uint64_t state = 0x243f6a8885a308d3ull;
  for (uint64_t& k : m) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    k = (z ^ (z >> 31)) | 1;
  }
  return m;
}();

uint64_t weighted_sum(std::initializer_list<int64_t> scalars, int32_t rank,
                      std::initializer_list<const int64_t*> extents) {
  uint64_t h = 0;
  int i = 0;
  for (int64_t v : scalars) h += uint64_t(v) * kFieldMultipliers[size_t(i++)];
  for (int d = 0; d < rank && d < 3; ++d) {
    for (const int64_t* extent : extents) h += uint64_t(extent[d]) * kFieldMultipliers[size_t(i++)];
  }
  return h;
}

int64_t round_up_power_of_two(int64_t n) {
  int64_t p = 16;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace

Configuration conv_configuration(int32_t op, const convjit_conv_params& params, int32_t activation, bool has_bias) {
  Configuration c;
  c.op = op;
  c.conv = params;
  c.activation = activation;
  c.has_bias = has_bias;
  return c;
}

Configuration pool_configuration(int32_t op, const convjit_pool_params& params, float p) {
  Configuration c;
  c.op = op;
  c.pool = params;
  c.p = p;
  return c;
}

std::string describe_configuration(const Configuration& c) {
  return std::string(op_name(c.op)) + " " +
         (c.is_pool() ? describe_pool(c.pool, c.p,
                                      c.op == CONVJIT_OP_LPNORMPOOL_FORWARD || c.op == CONVJIT_OP_LPNORMPOOL_BACKWARD)
                      : describe_conv(c.conv, c.activation, c.has_bias)) +
         (c.phase ? " phase " + std::to_string(c.phase) : std::string());
}

uint64_t configuration_id(const Configuration& c) {
  uint64_t h;
  if (c.is_pool()) {
    const convjit_pool_params& p = c.pool;
    uint32_t p_bits;
    std::memcpy(&p_bits, &c.p, sizeof p_bits);
    h = weighted_sum({int64_t(c.op), int64_t(p.rank), int64_t(p.layout), int64_t(p.exclude_padding), p.batch,
                      p.channels, int64_t(p_bits)},
                     p.rank, {p.in_size, p.window, p.stride, p.dilation, p.pad_begin, p.pad_end});
  } else {
    const convjit_conv_params& p = c.conv;
    h = weighted_sum({int64_t(c.op), int64_t(p.rank), int64_t(p.layout), int64_t(p.mode), p.batch, p.in_channels,
                      p.out_channels, p.groups, int64_t(c.activation), int64_t(c.has_bias), int64_t(c.phase)},
                     p.rank, {p.in_size, p.kernel, p.stride, p.dilation, p.pad_begin, p.pad_end});
  }
  // Mix the high bits into the low ones (the table's index).
  h ^= h >> 32;
  h *= 0x9e3779b97f4a7c15ull;
  h ^= h >> 29;
  return h == 0 ? 1 : h;
}

ConfigTable::ConfigTable(int64_t capacity)
    : capacity_(round_up_power_of_two(capacity)), mask_(capacity_ - 1), slots_(new ConfigSlot[size_t(capacity_)]) {}

ConfigSlot* ConfigTable::find(uint64_t id) {
  for (int64_t i = 0; i < kProbeWindow; ++i) {
    ConfigSlot& slot = slots_[(int64_t(id) + i) & mask_];
    if (slot.id.load(std::memory_order_acquire) == id) return &slot;
  }
  return nullptr;
}

ConfigSlot& ConfigTable::find_or_insert(uint64_t id, const Configuration& configuration, bool* inserted) {
  *inserted = false;
  if (ConfigSlot* slot = find(id)) return *slot;
  std::lock_guard<std::mutex> lock(mutex_);
  if (ConfigSlot* slot = find(id)) return *slot;  // another thread inserted it meanwhile

  // An empty slot of the window, else the one with the fewest recent calls. Every slot looked at
  // ages (its recent count halves), so configurations that stopped being called drift out.
  ConfigSlot* victim = nullptr;
  int64_t fewest = INT64_MAX;
  for (int64_t i = 0; i < kProbeWindow; ++i) {
    ConfigSlot& slot = slots_[(int64_t(id) + i) & mask_];
    if (slot.id.load(std::memory_order_relaxed) == 0) {
      victim = &slot;
      break;
    }
    const int64_t calls = slot.calls.load(std::memory_order_relaxed);
    const int64_t recent = calls - slot.calls_at_aging.load(std::memory_order_relaxed);
    slot.calls_at_aging.store(calls - recent / 2, std::memory_order_relaxed);
    if (recent < fewest) {
      fewest = recent;
      victim = &slot;
    }
  }
  if (victim->id.load(std::memory_order_relaxed) != 0) evictions_.fetch_add(1, std::memory_order_relaxed);
  victim->id.store(0, std::memory_order_release);
  for (auto* counter : {&victim->calls, &victim->calls_jit, &victim->sampled_ns_generic, &victim->samples_generic,
                        &victim->sampled_ns_jit, &victim->samples_jit, &victim->calls_at_aging,
                        &victim->calls_at_sweep, &victim->calls_at_cold}) {
    counter->store(0, std::memory_order_relaxed);
  }
  victim->thread_times_generic.clear();
  victim->thread_times_jit.clear();
  for (auto* moment : {&victim->first_call_ns, &victim->hot_ns, &victim->kernel_ns}) {
    moment->store(-1, std::memory_order_relaxed);
  }
  victim->kernel.store(nullptr, std::memory_order_relaxed);
  victim->state.store(int(SlotState::Cold), std::memory_order_relaxed);
  if (!victim->details) victim->details = std::make_unique<ConfigSlot::Details>();
  *victim->details = {configuration, {}, 0};
  victim->id.store(id, std::memory_order_release);
  *inserted = true;
  return *victim;
}

}  // namespace convjit::detail
