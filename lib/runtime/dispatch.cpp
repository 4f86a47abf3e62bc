// The per-call path of the tiered runtime, for every op: validate, find the configuration's
// detector slot (no lock), count the call, and run the slot's specialized kernel if one has
// arrived for this specialization key, else the generic tier; the call that makes a
// configuration hot requests its compile (once: the slot's state moves Cold -> Queued by
// compare-and-swap) or declines it, saying why. Backward data runs as forwards where it can
// (stride 1; strided pointwise; the phases of other strides). Ops that no backend compiles yet
// (the rest of backward data, Lp pooling) are counted, timed and declined the
// same way, and run on tier 0.
// Max and mean pooling, forward and backward, take compiled rows where the backend compiles them
// (Xbyak), and so does backward filter (NHWC itself, NCHW as its NHWC twin) where tier 0 would
// run its register tile.
#include <cassert>
#include <chrono>
#include <cstdio>

#include "backward_as_forward.hpp"
#include "conv_forward.hpp"
#include "describe.hpp"
#include "nhwc_as_nchw.hpp"
#include "ops_internal.hpp"
#include "runtime_impl.hpp"
#include "select_tier.hpp"
#include "thread_choice.hpp"
#include "threads.hpp"

namespace convjit {
namespace {

using Clock = std::chrono::steady_clock;
using detail::ConfigSlot;
using detail::Configuration;
using detail::SlotState;

// One call in kSampleEvery of each tier is timed (steady_clock costs ~20 ns); the mean of the
// samples stands for all (with adapt_threads, the samples of both thread choices).
constexpr int64_t kSampleEvery = 16;

// Runs run(threads) for the calls-th call of slot, `compiled` telling the tier; each tier's first
// call and every kSampleEvery-th after it are timed. threads: the runtime's, or one where the
// slot's timed calls ran faster so lately (adapt: thread_choice.hpp); a small call's side and
// timing follow the runtime's window of small calls (small_calls counts them; at each window that
// follows the sides rather than probing them, the calls' side is decided again from the probes).
template <typename Run>
void run_sampled(ConfigSlot& slot, int64_t calls, bool compiled, detail::CallThreads call, bool adapt,
                 detail::SmallCalls& small_calls, Run&& run) {
  const int64_t tier_call = compiled ? slot.calls_jit.fetch_add(1, std::memory_order_relaxed) + 1
                                     : calls - slot.calls_jit.load(std::memory_order_relaxed);
  const bool sampled = tier_call % kSampleEvery == 1;
  detail::ThreadTimes& times = compiled ? slot.thread_times_jit : slot.thread_times_generic;
  adapt = adapt && call.threads > 1;
  const int64_t small_call = adapt && call.small ? small_calls.next() : -1;
  if (small_call >= 0 && small_call % detail::kWindowCalls == 0 &&
      detail::small_call_probe(small_call, small_calls.side().rare) < 0) {
    small_calls.decide();
  }
  const detail::CallChoice choice = detail::choose_call_threads(
      times, adapt, small_call, sampled ? tier_call / kSampleEvery : -1, small_calls.side());
  const bool timed = sampled || choice.timed;
  const Clock::time_point start = timed ? Clock::now() : Clock::time_point{};
  run(choice.alone ? 1 : call.threads);
  if (!timed) return;
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  if (sampled) {
    (compiled ? slot.sampled_ns_jit : slot.sampled_ns_generic).fetch_add(ns, std::memory_order_relaxed);
    (compiled ? slot.samples_jit : slot.samples_generic).fetch_add(1, std::memory_order_relaxed);
  }
  if (choice.timed && tier_call > 1) {  // not the tier's first, cold call
    detail::record_time(times, choice.alone, ns);
    if (small_call >= 0) small_calls.add_probe(times);
  }
}

// One forward call of g (as given: params) on the kernels chosen for what runs it: g, or its
// twin in the other layout (as_twin) on copies of its operands. A backward data problem's weights
// are packed in place where the kernel packs its blocks (then the twin copies only x and y), else
// taken as rows.
void run_forward_call(const detail::ConvGeometry& g, const convjit_conv_params& params, bool as_twin,
                      const detail::ConvGeometry& runs, const detail::ForwardKernels& kernels, int threads,
                      const float* x, const detail::ForwardWeights& weights, const float* bias, bool relu, float* y) {
  const bool in_place = weights.backward && detail::packs_backward_weights_in_place(runs, kernels);
  assert((!in_place || (!bias && !relu)) && "a backward data problem has neither");
  const float* w = in_place ? nullptr : weights.as_rows(threads);
  auto run = [&](const float* on_x, const float* on_w, float* on_y) {
    if (in_place) {
      detail::run_conv_forward_on_backward_weights(
          runs, kernels, threads, on_x, detail::backward_weights(*weights.backward, weights.backward_w), on_y);
    } else {
      detail::run_conv_forward(runs, kernels, threads, on_x, on_w, bias, relu, on_y);
    }
  };
  if (!as_twin) {
    run(x, w, y);
    return;
  }
  const detail::TwinCopies twin = detail::copy_to_twin(g, params, x, w, threads);
  run(twin.x, twin.w, twin.y);
  detail::copy_output_from_twin(g, twin, y, threads);
}

int32_t pool_op_code(detail::PoolOp op, bool backward) {
  switch (op) {
    case detail::PoolOp::Max: return backward ? CONVJIT_OP_MAXPOOL_BACKWARD : CONVJIT_OP_MAXPOOL_FORWARD;
    case detail::PoolOp::Mean: return backward ? CONVJIT_OP_MEANPOOL_BACKWARD : CONVJIT_OP_MEANPOOL_FORWARD;
    case detail::PoolOp::LpNorm: return backward ? CONVJIT_OP_LPNORMPOOL_BACKWARD : CONVJIT_OP_LPNORMPOOL_FORWARD;
  }
  return CONVJIT_OP_MAXPOOL_FORWARD;
}

}  // namespace

int Runtime::Impl::threads() const {
  return policy.num_threads > 0 ? policy.num_threads : detail::thread_count();
}

detail::CallThreads Runtime::Impl::threads_for(const detail::ConvGeometry& g) const {
  return detail::conv_call_threads(threads(), g.flops());
}

ConfigSlot& Runtime::Impl::count_call(const Configuration& c, uint64_t* id, int64_t* calls) {
  *id = detail::configuration_id(c);
  bool inserted = false;  // a first call is told by the call count: the warm start inserts slots too
  ConfigSlot& slot = table_.find_or_insert(*id, c, &inserted);
  *calls = slot.calls.fetch_add(1, std::memory_order_relaxed) + 1;
  // The first call, also of a slot the warm start made before any call.
  if (*calls == 1) slot.first_call_ns.store(now_ns(), std::memory_order_relaxed);
  if (*calls == 1 && policy.verbose && c.phase == 0) {  // a companion is no call of its own
    std::fprintf(stderr, "convjit: first call of %s: generic\n", detail::describe_configuration(c).c_str());
  }
  return slot;
}

detail::Status Runtime::Impl::conv_forward(const convjit_conv_params* params, const float* x, const float* w,
                                           const float* bias, int32_t activation, float* y) {
  detail::ConvGeometry g;
  CONVJIT_RETURN_IF_ERROR(detail::validate_conv_forward(params, x, w, activation, y, &g));
  run_forward(detail::conv_configuration(CONVJIT_OP_CONV_FORWARD, *params, activation, bias != nullptr), g, *params, x,
              {.rows = w}, bias, activation == CONVJIT_ACT_RELU, y, [](int) {});
  return detail::Status::success();
}

template <typename After>
void Runtime::Impl::run_forward(const Configuration& c, const detail::ConvGeometry& g,
                                const convjit_conv_params& params, const float* x, const detail::ForwardWeights& w,
                                const float* bias, bool relu, float* y, After&& after) {
  uint64_t id;
  int64_t calls;
  ConfigSlot& slot = count_call(c, &id, &calls);
  const bool as_twin = detail::forward_runs_as_twin(g, isa_cap_, w.backward != nullptr);
  const detail::ConvGeometry runs = as_twin ? detail::forward_twin(params) : g;
  std::optional<detail::GracePeriods::Reader> reading;
  const convjit_conv_kernel* compiled = compiled_kernel(slot, id, calls, runs, params.rank, relu, &reading);
  run_sampled(slot, calls, compiled != nullptr, threads_for(g), policy.adapt_threads, small_calls_, [&](int threads) {
    run_forward_call(g, params, as_twin, runs, detail::select_tier(runs, compiled, isa_cap_), threads, x, w, bias, relu,
                     y);
    after(threads);
  });
}

void Runtime::Impl::run_backward_data_phases(const Configuration& c, const detail::ConvGeometry& g,
                                             const convjit_conv_params& params,
                                             const detail::BackwardDataPhases& phases, const float* dy, const float* w,
                                             float* dx) {
  uint64_t id;
  int64_t calls;
  ConfigSlot& slot = count_call(c, &id, &calls);
  // What runs each phase: its forward, or that forward's twin; its key, made where first asked for.
  struct PhaseProblem {
    detail::ConvGeometry forward, runs;
    bool as_twin;
    std::optional<jit::SpecKey> key;
  };
  PhaseProblem problems[detail::kMaxBackwardDataPhases];
  for (int i = 0; i < phases.count; ++i) {
    PhaseProblem& p = problems[i];
    detail::make_conv_geometry(phases.phase[i].forward, &p.forward);  // checked by the rule
    p.as_twin = detail::forward_runs_as_twin(p.forward, isa_cap_, false);
    p.runs = p.as_twin ? detail::forward_twin(phases.phase[i].forward) : p.forward;
  }
  auto key_of = [&](int i) -> const jit::SpecKey& {
    if (!problems[i].key) problems[i].key = spec_key(problems[i].runs, params.rank, false);
    return *problems[i].key;
  };
  // Per kernel size among the phases, at the index of its first phase: its slot (the call's own
  // for phase 0's size, a companion configuration's for each other) and its compiled kernel.
  ConfigSlot* size_slot[detail::kMaxBackwardDataPhases];
  bool size_arrived[detail::kMaxBackwardDataPhases] = {};
  const jit::CompiledKernel* size_kernel[detail::kMaxBackwardDataPhases] = {};
  for (int i = 0; i < phases.count; ++i) {
    if (phases.kernel_of(i) != i) continue;
    if (i > 0 && !backend_) break;  // nothing to compile: no companion slots
    uint64_t size_id = id;
    int64_t size_calls = calls;
    if (i == 0) {
      size_slot[i] = &slot;
    } else {
      Configuration companion = c;
      companion.phase = i;
      size_slot[i] = &count_call(companion, &size_id, &size_calls);
    }
    size_arrived[i] = arrived(
        *size_slot[i], size_id, size_calls, [&] { return key_of(i); },
        [&](const jit::SpecKey& key) {
          return detail::jit_declined_because(problems[i].runs, isa_cap_, *backend_, key);
        });
  }
  // One grace period for all of them, begun after every wait for a compile.
  std::optional<detail::GracePeriods::Reader> reading;
  for (int i = 0; i < phases.count; ++i) {
    if (size_arrived[i]) size_kernel[i] = published(*size_slot[i], key_of(i), &reading);
  }
  run_sampled(
      slot, calls, size_kernel[0] != nullptr, threads_for(g), policy.adapt_threads, small_calls_, [&](int threads) {
        int64_t grid_floats = 0, w_phase_floats = 0;
        for (int i = 0; i < phases.count; ++i) {
          const detail::BackwardDataPhase& phase = phases.phase[i];
          grid_floats = std::max(grid_floats, g.batch * g.in_channels * phase.grid[0] * phase.grid[1] * phase.grid[2]);
          w_phase_floats =
              std::max(w_phase_floats, g.in_channels * g.oc_per_group * phase.taps[0] * phase.taps[1] * phase.taps[2]);
        }
        float* grid = detail::thread_rewrite_outputs(size_t(grid_floats));
        float* w_phase = detail::thread_operands(size_t(w_phase_floats));
        for (int i = 0; i < phases.count; ++i) {
          const detail::BackwardDataPhase& phase = phases.phase[i];
          const PhaseProblem& p = problems[i];
          // A phase whose rows take another key than its size's first (another ISA, or
          // other sizes where the policy specializes on them) runs on tier 0.
          const jit::CompiledKernel* kernel = size_kernel[phases.kernel_of(i)];
          const bool same_key = kernel && key_of(i) == kernel->key;
          detail::phase_weights(g, phase, w, w_phase);
          run_forward_call(p.forward, phase.forward, p.as_twin, p.runs,
                           detail::select_tier(p.runs, same_key ? &kernel->kernel : nullptr, isa_cap_), threads, dy,
                           {.rows = w_phase}, nullptr, false, grid);
          detail::spread_grid(
              g,
              {{phase.grid[0], phase.grid[1], phase.grid[2]}, {phase.residue[0], phase.residue[1], phase.residue[2]}},
              grid, dx, false, threads);
        }
      });
}

template <typename KeyOf, typename DeclinedBecause>
bool Runtime::Impl::arrived(ConfigSlot& slot, uint64_t id, int64_t calls, KeyOf&& key_of_call,
                            DeclinedBecause&& declined_because) {
  if (!backend_) return false;
  // The key only where a kernel is asked for or checked: calls that stay generic skip it.
  const jit::CompiledKernel* kernel = slot.kernel.load(std::memory_order_acquire);
  if (!kernel && calls - slot.calls_at_cold.load(std::memory_order_relaxed) >= policy.hot_threshold &&
      slot.state.load(std::memory_order_relaxed) == int(SlotState::Cold)) {
    const jit::SpecKey key = key_of_call();
    if (std::string reason = policy.decline_slower ? declined_because(key) : std::string(); !reason.empty()) {
      decline(slot, id, reason);
    } else {
      request_compile(slot, id, key);
      kernel = slot.kernel.load(std::memory_order_acquire);  // arrived already if compiled inline
    }
  }
  if (!kernel && warm_pending_.load(std::memory_order_relaxed) > 0 &&
      slot.state.load(std::memory_order_acquire) == int(SlotState::Queued)) {
    wait_for_slot(slot);  // its warm-start compile is on the way: tens of microseconds
    kernel = slot.kernel.load(std::memory_order_acquire);
  }
  return kernel != nullptr;
}

const jit::CompiledKernel* Runtime::Impl::published(ConfigSlot& slot, const jit::SpecKey& key,
                                                    std::optional<detail::GracePeriods::Reader>* reading) {
  // From before the kernel is read until it has returned (an eviction waits for it); never held
  // while waiting for a compile, so an eviction never waits for a call that waits for it.
  if (!*reading) reading->emplace(grace_);
  const jit::CompiledKernel* kernel = slot.kernel.load(std::memory_order_seq_cst);  // not evicted meanwhile
  return kernel && kernel->key == key ? kernel : nullptr;                           // else a recycled slot's
}

template <typename KeyOf, typename DeclinedBecause>
const jit::CompiledKernel* Runtime::Impl::compiled(ConfigSlot& slot, uint64_t id, int64_t calls, KeyOf&& key_of_call,
                                                   DeclinedBecause&& declined_because,
                                                   std::optional<detail::GracePeriods::Reader>* reading) {
  if (!arrived(slot, id, calls, key_of_call, declined_because)) return nullptr;
  return published(slot, key_of_call(), reading);
}

const convjit_conv_kernel* Runtime::Impl::compiled_kernel(ConfigSlot& slot, uint64_t id, int64_t calls,
                                                          const detail::ConvGeometry& g, int32_t rank, bool relu,
                                                          std::optional<detail::GracePeriods::Reader>* reading) {
  const jit::CompiledKernel* kernel = compiled(
      slot, id, calls, [&] { return spec_key(g, rank, relu); },
      [&](const jit::SpecKey& key) { return detail::jit_declined_because(g, isa_cap_, *backend_, key); }, reading);
  return kernel ? &kernel->kernel : nullptr;
}

template <typename Run>
void Runtime::Impl::run_on_tier0(const Configuration& c, detail::CallThreads call_threads, Run&& run,
                                 const std::string& why) {
  uint64_t id;
  int64_t calls;
  ConfigSlot& slot = count_call(c, &id, &calls);
  if (backend_ && calls >= policy.hot_threshold && slot.state.load(std::memory_order_relaxed) == int(SlotState::Cold)) {
    decline(slot, id,
            !why.empty() ? why
                         : std::string("the ") + backend_->name() + " backend compiles no " + detail::op_name(c.op) +
                               " kernels for it (yet): tier 0 runs it");
  }
  run_sampled(slot, calls, false, call_threads, policy.adapt_threads, small_calls_, run);
}

detail::Status Runtime::Impl::conv_backward_data(const convjit_conv_params* params, const float* dy, const float* w,
                                                 float* dx) {
  detail::ConvGeometry g;
  CONVJIT_RETURN_IF_ERROR(detail::validate_conv_backward_data(params, dy, w, dx, &g));
  const Configuration c = detail::conv_configuration(CONVJIT_OP_CONV_BACKWARD_DATA, *params);
  convjit_conv_params forward;
  if (detail::strided_pointwise_backward_data_as_forward(g, *params, &forward)) {
    detail::ConvGeometry forward_geometry;
    CONVJIT_RETURN_IF_ERROR(detail::make_conv_geometry(forward, &forward_geometry));
    float* grid = detail::thread_rewrite_outputs(size_t(g.batch * g.in_channels * g.out_pixels()));
    run_forward(
        c, forward_geometry, forward, dy, {.backward = &g, .backward_w = w}, nullptr, false, grid,
        [&](int threads) { detail::spread_grid(g, detail::strided_pointwise_placement(g), grid, dx, true, threads); });
    return detail::Status::success();
  }
  if (detail::BackwardDataPhases phases; detail::strided_backward_data_phases(g, *params, &phases)) {
    run_backward_data_phases(c, g, *params, phases, dy, w, dx);
    return detail::Status::success();
  }
  if (!detail::backward_data_as_forward(g, *params, &forward)) {
    const bool as_nhwc = detail::nchw_depthwise_backward_data_runs_as_nhwc(g, *params);
    run_on_tier0(c, threads_for(g), [&](int threads) {
      if (as_nhwc) {
        detail::depthwise_backward_data_as_nhwc(g, *params, threads, dy, w, dx);
      } else {
        detail::run_conv_backward_data(g, threads, dy, w, dx);
      }
    });
    return detail::Status::success();
  }
  detail::ConvGeometry forward_geometry;
  CONVJIT_RETURN_IF_ERROR(detail::make_conv_geometry(forward, &forward_geometry));
  run_forward(c, forward_geometry, forward, dy, {.backward = &g, .backward_w = w}, nullptr, false, dx, [](int) {});
  return detail::Status::success();
}

detail::Status Runtime::Impl::conv_backward_filter(const convjit_conv_params* params, const float* x, const float* dy,
                                                   float* dw) {
  detail::ConvGeometry g;
  CONVJIT_RETURN_IF_ERROR(detail::validate_conv_backward_filter(params, x, dy, dw, &g));
  const Configuration c = detail::conv_configuration(CONVJIT_OP_CONV_BACKWARD_FILTER, *params);
  const bool as_nchw = detail::nhwc_backward_filter_runs_as_nchw(g, *params);
  // The direct kernel sums in its own order: past its few channels, only where no compiled twin
  // may later take the problem with the register tile's order.
  const detail::DirectFilterScope direct = detail::nchw_backward_filter_can_run_as_nhwc(g)
                                               ? detail::DirectFilterScope::FewChannels
                                               : detail::DirectFilterScope::InsteadOfTile;
  auto run_tier0 = [&](int threads) {
    if (as_nchw) {
      detail::backward_filter_as_nchw(g, *params, threads, x, dy, dw);
    } else {
      detail::run_conv_backward_filter(g, direct, threads, x, dy, dw);
    }
  };
  // Where tier 0 sums in another order (its own kernels), compiled rows would change the bits.
  detail::ConvGeometry runs;
  if (std::string why = detail::filter_rows_problem(g, *params, &runs);
      !backend_ || !backend_->compiles(CONVJIT_OP_CONV_BACKWARD_FILTER) || !why.empty()) {
    run_on_tier0(c, threads_for(g), run_tier0, why);
    return detail::Status::success();
  }
  run_counted(
      c, threads_for(g), [&] { return filter_spec_key(runs, params->rank); },
      [&](const jit::SpecKey& key) { return backend_->rows_decline_reason(key); },
      [&](int threads, const jit::CompiledKernel* kernel) {
        if (!kernel) {
          run_tier0(threads);
        } else if (g.layout == CONVJIT_NCHW) {
          detail::backward_filter_as_nhwc(g, runs, threads, x, dy, dw, kernel->filter);
        } else {
          detail::run_conv_backward_filter_rows(runs, threads, x, dy, dw, kernel->filter);
        }
      });
  return detail::Status::success();
}

template <typename KeyOf, typename DeclinedBecause, typename Run>
void Runtime::Impl::run_counted(const Configuration& c, detail::CallThreads call_threads, KeyOf&& key_of_call,
                                DeclinedBecause&& declined_because, Run&& run) {
  uint64_t id;
  int64_t calls;
  ConfigSlot& slot = count_call(c, &id, &calls);
  std::optional<detail::GracePeriods::Reader> reading;
  const jit::CompiledKernel* kernel = compiled(slot, id, calls, key_of_call, declined_because, &reading);
  run_sampled(slot, calls, kernel != nullptr, call_threads, policy.adapt_threads, small_calls_,
              [&](int threads) { run(threads, kernel); });
}

template <typename Run>
void Runtime::Impl::run_pool(const Configuration& c, detail::PoolOp op, int32_t code, int32_t rank, Run&& run) {
  if (!backend_ || !backend_->compiles(code)) {
    run_on_tier0(c, {threads(), false}, [&](int threads) { run(threads, nullptr); });
    return;
  }
  // What the compiled rows see: the NHWC problem (the twin of an NCHW one).
  detail::PoolGeometry runs;
  detail::pool_rows_geometry(c, &runs);  // valid: the caller's problem is
  run_counted(
      c, {threads(), false}, [&] { return pool_spec_key(runs, code, rank); },
      [&](const jit::SpecKey& key) { return detail::pool_jit_declined_because(runs, op, *backend_, key); },
      [&](int threads, const jit::CompiledKernel* kernel) { run(threads, kernel ? kernel->pool_row : nullptr); });
}

detail::Status Runtime::Impl::pool_forward(detail::PoolOp op, const convjit_pool_params* params, float p,
                                           const float* x, float* y) {
  detail::PoolGeometry g;
  CONVJIT_RETURN_IF_ERROR(detail::validate_pool_forward(op, params, p, x, y, &g));
  const float lp = op == detail::PoolOp::LpNorm ? p : 0.0f;
  const int32_t code = pool_op_code(op, false);
  const Configuration c = detail::pool_configuration(code, *params, lp);
  // NCHW runs as its NHWC twin where tier 0's NCHW kernel would lose to it, and wherever the
  // twin's compiled rows have arrived (pool_rows_geometry: the twin where one can run it).
  auto run = [&](int threads, convjit_pool_row_fn compiled) {
    const bool as_nhwc =
        detail::nchw_pool_forward_runs_as_nhwc(g, *params, op) || (compiled && g.layout == Layout::NCHW);
    if (as_nhwc) {
      detail::pool_forward_as_nhwc(op, g, *params, threads, x, y, compiled);
    } else {
      detail::run_pool_forward(op, g, threads, lp, x, y, compiled);
    }
  };
  run_pool(c, op, code, params->rank, run);
  return detail::Status::success();
}

detail::Status Runtime::Impl::pool_backward(detail::PoolOp op, const convjit_pool_params* params, float p,
                                            const float* x, const float* y, const float* dy, float* dx) {
  detail::PoolGeometry g;
  CONVJIT_RETURN_IF_ERROR(detail::validate_pool_backward(op, params, p, x, y, dy, dx, &g));
  const float lp = op == detail::PoolOp::LpNorm ? p : 0.0f;
  const bool as_nhwc = detail::nchw_pool_backward_runs_as_nhwc(g, *params, op);
  const int32_t code = pool_op_code(op, true);
  run_pool(detail::pool_configuration(code, *params, lp), op, code, params->rank,
           [&](int threads, convjit_pool_row_fn compiled) {
             if (as_nhwc) {
               detail::pool_backward_as_nhwc(op, g, *params, threads, x, y, dy, dx, compiled);
             } else {
               detail::run_pool_backward(op, g, threads, lp, x, y, dy, dx, compiled);
             }
           });
  return detail::Status::success();
}

void Runtime::Impl::decline(ConfigSlot& slot, uint64_t id, const std::string& reason) {
  int expected = int(SlotState::Cold);
  if (!slot.state.compare_exchange_strong(expected, int(SlotState::Declined), std::memory_order_acq_rel)) return;
  slot.hot_ns.store(now_ns(), std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(table_.mutex());
  if (slot.id.load(std::memory_order_relaxed) != id) {  // recycled meanwhile: not ours to decline
    expected = int(SlotState::Declined);
    slot.state.compare_exchange_strong(expected, int(SlotState::Cold), std::memory_order_acq_rel);
    return;
  }
  slot.details->failure = reason;
  if (policy.verbose) {
    std::fprintf(stderr, "convjit: stays generic: %s: %s\n",
                 detail::describe_configuration(slot.details->configuration).c_str(), reason.c_str());
  }
}

}  // namespace convjit
