#include "pool_rows_nhwc.hpp"

#include <xbyak/xbyak.h>

#include <cmath>
#include <cstddef>
#include <memory>

#include "emit.hpp"

namespace convjit::jit::xbyak {
namespace {

using namespace Xbyak;

constexpr int kBlockVectors = 4;      // a pixel's channels in blocks of 4 vectors, as tier 0's kernels
constexpr int64_t kMaxPoolTaps = 64;  // windows unrolled; larger ones stay on tier 0
constexpr int kFixedRegisters = 16;   // the vectors of AVX2's layout, kept on AVX-512; backward's carries follow
alignas(4) const float kMinusInfinityThenNan[2] = {-INFINITY, NAN};

// A tap of the window: plane a, row b, column c.
struct Tap {
  int a, b, c;
};

#define ROW(field) qword[reg_row + offsetof(convjit_pool_row, field)]

// Emits, for the run's channels in blocks (full blocks of plan.block_vectors vectors, then one
// block of the vectors left, its last under a lane mask):
//   for each output o of the run:
//     forward:
//       acc = max ? -inf : 0
//       for each tap t of the window, row-major: v = x[o's window + t]
//         max: acc = (v > acc) ? v : acc      mean: acc = acc + v
//       max, where a lane of the block stayed -inf (its window all NaN or -inf), again:
//         acc = -inf, met = none; for each tap: met |= v is a number; acc = (v > acc) ? v : acc
//         acc = met ? acc : NaN
//       y[o] = max ? acc : acc / divisor
//     backward:
//       g = dy[o] (mean: g / divisor); max: m = y[o]
//       for each tap t of the window, row-major:
//         mean: dx[t] = dx[t] + g
//         max:  here = (x[t] == m); m = here ? NaN : m; dx[t] = here ? dx[t] + g : dx[t]
//         (a routed lane's m is NaN, which equals nothing: each lane routes to its first match)
//       where the windows cover x, g = +0 + g once, and the taps no earlier output reaches (from
//       window - stride on along every dim) find dx +0: dx[t] = g (max: here ? g : +0), not read
// lane by lane tier 0's operations (lib/kernels/pool_nhwc_impl.hpp), so the bits are its bits.
class Generator : public CodeGenerator {
 public:
  Generator(const SpecKey& key, const PoolPlan& plan)
      : CodeGenerator(plan.code_bytes, DontSetProtectRWE),
        key_(key),
        plan_(plan),
        vector_bytes_(plan.isa.vector_bytes) {
    emit_prologue();
    emit_channel_blocks();
    emit_leave(*this, kLocalBytes * kLocals);
  }

 private:
  const Reg64 reg_problem = rdi, reg_row = rsi;    // read by the prologue only
  const Reg64 reg_dy = rdi, reg_dx = rsi;          // backward, after the prologue: as reg_y and reg_x
  const Reg64 reg_x_block = r8, reg_y_block = r9;  // the run's first output at the block's first channel
  const Reg64 reg_x = r10, reg_y = r11;            // the current output's window (tap 0) and output
  const Reg64 reg_plane = r12, reg_tap_row = r13;  // byte offsets of the current tap's plane and row
  const Reg64 reg_tap = r14;                       // byte offset of the current tap from the window
  const Reg64 reg_outputs_left = r15, reg_channels_left = rbx, reg_constants = rbp;
  const Reg64 reg_col_step = rcx, reg_row_step = rdx;  // bytes between taps along W and along H

  enum Local { kPlaneStep, kXStep, kYStep, kOutputs, kDyBlock, kDxBlock, kLocals };
  Address local(Local l) { return qword[rsp + kLocalBytes * int(l)]; }

  // Forward: accumulators 0..3, AVX2's "met" masks 4..7, then the rest.
  Xmm acc(int v) const { return vector(plan_.isa, v); }
  Xmm met(int v) const { return vector(plan_.isa, kBlockVectors + v); }
  Xmm value() const { return vector(plan_.isa, 8); }
  Xmm is_number() const { return vector(plan_.isa, 9); }
  Xmm nan() const { return vector(plan_.isa, 10); }
  Xmm minus_infinity() const { return vector(plan_.isa, 11); }
  Xmm divisor() const { return vector(plan_.isa, plan_.backward ? 4 : 12); }  // backward mean: no y vectors
  // Backward: gradients 0..3, max's y 4..7 (NaN once routed) and NaN in 10, temporaries 12..14.
  Xmm gradient(int v) const { return vector(plan_.isa, v); }
  Xmm y_value(int v) const { return vector(plan_.isa, kBlockVectors + v); }
  Xmm temporary(int t) const { return vector(plan_.isa, 12 + t); }
  Xmm lane_mask() const { return vector(plan_.isa, 15); }  // AVX2: the last vector's lanes
  // Backward, the carried columns' dx (plan.carried_columns) per row of taps and vector, from 16.
  Xmm carry(const Tap& t, int c, int v) const {
    const int row = t.a * int(key_.kernel[1]) + t.b;
    return vector(plan_.isa, kFixedRegisters + (row * plan_.carried_columns + c) * kBlockVectors + v);
  }
  // AVX-512: forward's "met" per vector in k1..k4, a compare in k5, the last vector's lanes in k7.
  Opmask lane_flags(int v) const { return Opmask(1 + v); }
  const Opmask k_compare = k5, k_lanes = k7;

  void emit_prologue() {
    emit_enter(*this, kLocalBytes * kLocals);
    if (!plan_.max) {
      vbroadcastss(divisor(), ptr[reg_problem + offsetof(convjit_pool_problem, divisor)]);
    } else {
      mov(reg_constants, reinterpret_cast<size_t>(kMinusInfinityThenNan));
      if (!plan_.backward) vbroadcastss(minus_infinity(), ptr[reg_constants]);
      vbroadcastss(nan(), ptr[reg_constants + 4]);
    }
    auto bytes_of = [&](Reg64 to, size_t field, int64_t times) {
      mov(rax, qword[reg_problem + field]);
      imul(rax, rax, int(kFloatBytes * times));
      mov(to, rax);
    };
    bytes_of(reg_col_step, offsetof(convjit_pool_problem, x.spatial[2]), key_.dilation[2]);
    bytes_of(reg_row_step, offsetof(convjit_pool_problem, x.spatial[1]), key_.dilation[1]);
    bytes_of(rax, offsetof(convjit_pool_problem, x.spatial[0]), key_.dilation[0]);
    mov(local(kPlaneStep), rax);
    bytes_of(rax, offsetof(convjit_pool_problem, x.spatial[2]), key_.stride[2]);
    mov(local(kXStep), rax);
    bytes_of(rax, offsetof(convjit_pool_problem, y.spatial[2]), 1);
    mov(local(kYStep), rax);
    mov(rax, ROW(outputs));
    mov(local(kOutputs), rax);
    mov(rax, ROW(dy));
    mov(local(kDyBlock), rax);
    mov(rax, ROW(dx));
    mov(local(kDxBlock), rax);
    mov(reg_channels_left, ROW(channels));
    mov(reg_x_block, ROW(x));
    mov(reg_y_block, ROW(y));
  }

  // Full blocks while they fit, then the block of what is left (1 to block_vectors vectors).
  void emit_channel_blocks() {
    const int block = plan_.block_channels(), lanes = plan_.isa.lanes;
    Label full, tail, done;
    L(full);
    cmp(reg_channels_left, block);
    jl(tail, T_NEAR);
    emit_outputs(kBlockVectors, false);
    add(reg_x_block, block * kFloatBytes);
    add(reg_y_block, block * kFloatBytes);
    add(local(kDyBlock), block * kFloatBytes);
    add(local(kDxBlock), block * kFloatBytes);
    sub(reg_channels_left, block);
    jmp(full, T_NEAR);
    L(tail);
    test(reg_channels_left, reg_channels_left);
    jz(done, T_NEAR);
    Label of_vectors[kBlockVectors];
    for (int vectors = 1; vectors < kBlockVectors; ++vectors) {
      cmp(reg_channels_left, vectors * lanes);
      jle(of_vectors[vectors - 1], T_NEAR);
    }
    jmp(of_vectors[kBlockVectors - 1], T_NEAR);
    for (int vectors = 1; vectors <= kBlockVectors; ++vectors) {
      L(of_vectors[vectors - 1]);
      emit_last_lanes(vectors);
      emit_outputs(vectors, true);
      jmp(done, T_NEAR);
    }
    L(done);
  }

  // The last of `vectors` vectors takes channels_left - (vectors - 1) * lanes lanes.
  void emit_last_lanes(int vectors) {
    mov(rax, reg_channels_left);
    sub(rax, (vectors - 1) * plan_.isa.lanes);
    if (plan_.isa.opmask) {
      mov(reg_tap, -1);
      bzhi(reg_tap, reg_tap, rax);
      kmovw(k_lanes, reg_tap.cvt32());
      return;
    }
    vmovq(Xmm(lane_mask().getIdx()), rax);
    vpbroadcastd(lane_mask(), Xmm(lane_mask().getIdx()));
    mov(reg_tap, reinterpret_cast<size_t>(kLaneIndex));
    vpcmpgtd(lane_mask(), lane_mask(), ptr[reg_tap]);
  }

  void emit_outputs(int vectors, bool masked_last) {
    Label output;
    mov(reg_x, reg_x_block);
    mov(reg_y, reg_y_block);
    if (plan_.backward) {
      mov(reg_dy, local(kDyBlock));
      mov(reg_dx, local(kDxBlock));
    }
    mov(reg_outputs_left, local(kOutputs));
    if (plan_.carried_columns > 0) emit_load_carries(vectors, masked_last);
    L(output);
    if (plan_.backward) {
      emit_gradients(vectors, masked_last);
      emit_taps([&](const Tap& t, int v) { emit_backward_tap(t, v, masked_last && v == vectors - 1); }, vectors);
      add(reg_dx, local(kXStep));
      add(reg_dy, local(kYStep));
    } else if (plan_.max) {
      // Untracked first: where no lane stayed -inf, some number was met in every lane (masked
      // lanes load zeros) and acc is the result; else the output is formed again tracking numbers.
      Label formed;
      emit_start(vectors, false);
      emit_taps([&](const Tap&, int v) { emit_forward_tap(v, masked_last && v == vectors - 1, false); }, vectors);
      emit_jump_unless_minus_infinity(vectors, formed);
      emit_start(vectors, true);
      emit_taps([&](const Tap&, int v) { emit_forward_tap(v, masked_last && v == vectors - 1, true); }, vectors);
      emit_numbers_or_nan(vectors);
      L(formed);
      emit_store_results(vectors, masked_last);
    } else {
      emit_start(vectors, false);
      emit_taps([&](const Tap&, int v) { emit_forward_tap(v, masked_last && v == vectors - 1, false); }, vectors);
      for (int v = 0; v < vectors; ++v) vdivps(acc(v), acc(v), divisor());
      emit_store_results(vectors, masked_last);
    }
    add(reg_x, local(kXStep));
    add(reg_y, local(kYStep));
    dec(reg_outputs_left);
    jnz(output, T_NEAR);
  }

  // The window's taps in row-major order, each offset one step on from the last; emit(tap, v) for
  // every vector of the block at each.
  template <typename Emit>
  void emit_taps(Emit&& emit, int vectors) {
    xor_(reg_plane, reg_plane);
    for (int a = 0; a < int(key_.kernel[0]); ++a) {
      if (a > 0) add(reg_plane, local(kPlaneStep));
      mov(reg_tap_row, reg_plane);
      for (int b = 0; b < int(key_.kernel[1]); ++b) {
        if (b > 0) add(reg_tap_row, reg_row_step);
        mov(reg_tap, reg_tap_row);
        for (int c = 0; c < int(key_.kernel[2]); ++c) {
          if (c > 0) add(reg_tap, reg_col_step);
          for (int v = 0; v < vectors; ++v) emit(Tap{a, b, c}, v);
        }
      }
    }
  }

  // The first output's dx at the carried columns of its window, before the outputs' loop.
  void emit_load_carries(int vectors, bool masked_last) {
    emit_taps(
        [&](const Tap& t, int v) {
          if (t.c < plan_.carried_columns)
            emit_load(carry(t, t.c, v), ptr[reg_dx + reg_tap + vector_bytes_ * v], masked_last && v == vectors - 1);
        },
        vectors);
  }

  // Vector v of the block at `at`, the last vector's lanes only when masked (the rest zero).
  void emit_load(Xmm to, const Address& at, bool masked) {
    emit_vector_load(*this, plan_.isa, {k_lanes, lane_mask()}, to, at, masked);
  }
  void emit_store(const Address& at, Xmm from, bool masked) {
    emit_vector_store(*this, plan_.isa, {k_lanes, lane_mask()}, at, from, masked);
  }

  void emit_start(int vectors, bool tracks_numbers) {
    for (int v = 0; v < vectors; ++v) {
      if (!plan_.max) {
        vxorps(acc(v), acc(v), acc(v));
        continue;
      }
      vmovaps(acc(v), minus_infinity());
      if (!tracks_numbers) continue;
      if (plan_.isa.opmask)
        kxorw(lane_flags(v), lane_flags(v), lane_flags(v));
      else
        vxorps(met(v), met(v), met(v));
    }
  }

  void emit_forward_tap(int v, bool masked, bool tracks_numbers) {
    emit_load(value(), ptr[reg_x + reg_tap + vector_bytes_ * v], masked);
    if (!plan_.max) {
      vaddps(acc(v), acc(v), value());
      return;
    }
    if (tracks_numbers) {
      if (plan_.isa.opmask) {
        vcmpps(k_compare, value(), value(), 7);  // ordered: not NaN
        korw(lane_flags(v), lane_flags(v), k_compare);
      } else {
        vcmpps(is_number(), value(), value(), 7);
        vorps(met(v), met(v), is_number());
      }
    }
    vmaxps(acc(v), value(), acc(v));  // (value > acc) ? value : acc: NaN never enters
  }

  // To `formed` when no lane of the block's accumulators is -inf (the untracked pass's flags are
  // free: AVX-512's k1.., AVX2's "met" vectors).
  void emit_jump_unless_minus_infinity(int vectors, const Label& formed) {
    for (int v = 0; v < vectors; ++v) {
      if (plan_.isa.opmask) {
        vcmpps(lane_flags(v), acc(v), minus_infinity(), 0);  // equal, ordered
        if (v > 0) korw(lane_flags(0), lane_flags(0), lane_flags(v));
      } else {
        vcmpps(met(v), acc(v), minus_infinity(), 0);
        if (v > 0) vorps(met(0), met(0), met(v));
      }
    }
    if (plan_.isa.opmask)
      kortestw(lane_flags(0), lane_flags(0));
    else
      vtestps(met(0), met(0));
    jz(formed, T_NEAR);
  }

  void emit_numbers_or_nan(int vectors) {
    for (int v = 0; v < vectors; ++v) {
      if (plan_.isa.opmask)
        vblendmps(acc(v) | lane_flags(v), nan(), acc(v));  // met ? acc : NaN
      else
        vblendvps(acc(v), nan(), acc(v), met(v));
    }
  }

  void emit_store_results(int vectors, bool masked_last) {
    for (int v = 0; v < vectors; ++v) {
      emit_store(ptr[reg_y + vector_bytes_ * v], acc(v), masked_last && v == vectors - 1);
    }
  }

  void emit_gradients(int vectors, bool masked_last) {
    const Xmm zero = temporary(2);
    if (plan_.writes_first_reached) vxorps(zero, zero, zero);
    for (int v = 0; v < vectors; ++v) {
      const bool masked = masked_last && v == vectors - 1;
      emit_load(gradient(v), ptr[reg_dy + vector_bytes_ * v], masked);
      if (!plan_.max) vdivps(gradient(v), gradient(v), divisor());   // each tap's share
      // What adding it to a zeroed dx gives; the same bits added to any dx (never -0) as g.
      if (plan_.writes_first_reached) vaddps(gradient(v), zero, gradient(v));
      if (!plan_.max) continue;
      emit_load(y_value(v), ptr[reg_y + vector_bytes_ * v], masked);
    }
  }

  // Vector v at tap t. A carried column's dx is in a register (this output's tap c is the last
  // output's tap c + stride), and a tap whose column the next output carries leaves its result
  // there too; a first-reached tap's dx is written without being read.
  void emit_backward_tap(const Tap& t, int v, bool masked) {
    const Address dx_at = ptr[reg_dx + reg_tap + vector_bytes_ * v];
    const bool carried = t.c < plan_.carried_columns;
    const bool first_reached = plan_.writes_first_reached && t.a >= plan_.first_reached[0] &&
                               t.b >= plan_.first_reached[1] && t.c >= plan_.first_reached[2];
    const Xmm dx = carried ? carry(t, t.c, v) : temporary(1);
    if (!first_reached && !carried) emit_load(dx, dx_at, masked);
    if (!plan_.max) {
      if (first_reached)
        vmovaps(dx, gradient(v));
      else
        vaddps(dx, dx, gradient(v));
    } else {
      emit_max_gradient(dx, v, masked, first_reached);
    }
    emit_store(dx_at, dx, masked);
    const int next_column = t.c - int(key_.stride[2]);
    if (plan_.carried_columns > 0 && next_column >= 0) vmovaps(carry(t, next_column, v), dx);
  }

  // dx = here ? dx + g : dx (first reached: here ? g : +0), here the lanes whose first tap equal to
  // y this is.
  void emit_max_gradient(Xmm dx, int v, bool masked, bool first_reached) {
    const Xmm equal = temporary(0), sum = temporary(2);
    const Address x_at = ptr[reg_x + reg_tap + vector_bytes_ * v];
    if (plan_.isa.opmask) {
      // Equal, ordered: NaN equals nothing. A masked vector's x is loaded under its lanes.
      if (masked) {
        emit_load(equal, x_at, true);
        vcmpps(k_compare, equal, y_value(v), 0);
      } else {
        vcmpps(k_compare, y_value(v), x_at, 0);
      }
      vmovaps(y_value(v) | k_compare, nan());  // routed
      if (first_reached)
        vmovaps(dx | k_compare | T_z, gradient(v));
      else
        vaddps(dx | k_compare, dx, gradient(v));
    } else {
      emit_load(equal, x_at, masked);
      vcmpps(equal, equal, y_value(v), 0);
      vblendvps(y_value(v), y_value(v), nan(), equal);  // routed
      if (first_reached) {
        vandps(dx, equal, gradient(v));  // here ? g : +0
      } else {
        vaddps(sum, dx, gradient(v));
        vblendvps(dx, dx, sum, equal);
      }
    }
  }

  const SpecKey key_;
  const PoolPlan plan_;
  const int vector_bytes_;
};

#undef ROW

}  // namespace

PoolPlan plan_pool_nhwc(const SpecKey& key) {
  PoolPlan plan;
  plan.isa = traits_of(key.isa);
  plan.max = key.op == CONVJIT_OP_MAXPOOL_FORWARD || key.op == CONVJIT_OP_MAXPOOL_BACKWARD;
  plan.backward = key.op == CONVJIT_OP_MAXPOOL_BACKWARD || key.op == CONVJIT_OP_MEANPOOL_BACKWARD;
  plan.writes_first_reached = plan.backward && convjit_pool_windows_cover(key.kernel, key.stride, key.dilation);
  if (plan.writes_first_reached) {
    for (int d = 0; d < 3; ++d) plan.first_reached[d] = int(convjit_pool_first_reached_tap(key.kernel[d], key.stride[d]));
  }
  if (!plan.max && key.op != CONVJIT_OP_MEANPOOL_FORWARD && key.op != CONVJIT_OP_MEANPOOL_BACKWARD) {
    plan.unsupported = "not max or mean pooling";
  } else if (key.layout != CONVJIT_NHWC) {
    plan.unsupported = "not NHWC";
  } else {
    plan.unsupported = common_unsupported_reason(key);
  }
  if (!plan.unsupported.empty()) return plan;
  plan.taps = key.kernel[0] * key.kernel[1] * key.kernel[2];
  if (plan.taps > kMaxPoolTaps) {
    plan.unsupported = "a window of more than " + std::to_string(kMaxPoolTaps) + " taps";
    return plan;
  }
  plan.block_vectors = kBlockVectors;
  // Overlapping windows along W (dilation 1): the next output's first kernel[2] - stride[2] columns
  // are this one's last, kept in registers where every row's fit.
  plan.vector_registers_used = kFixedRegisters;  // lane_mask() is the last fixed one
  if (plan.backward && key.dilation[2] == 1 && key.stride[2] < key.kernel[2]) {
    const int64_t columns = key.kernel[2] - key.stride[2];
    const int64_t registers = key.kernel[0] * key.kernel[1] * columns * kBlockVectors;
    if (kFixedRegisters + registers <= plan.isa.vector_registers) {
      plan.carried_columns = int(columns);
      plan.vector_registers_used += int(registers);
    }
  }
  // Per tap, the five emitted blocks (full, and tails of 1..4 vectors) handle 14 vectors, each in
  // at most 4 (forward: 2 untracked, then 4 tracking numbers for a max) or 8 (backward: 7 in the
  // outputs' loop, 1 loading a carried column before it) instructions of 12 bytes, and step one
  // offset per pass (backward with carries: the loads' pass, then the loop's).
  const size_t passes = (plan.max && !plan.backward) || plan.carried_columns > 0 ? 2 : 1;
  const size_t instructions_per_vector = plan.backward ? 8 : plan.max ? 6 : 4;
  plan.code_bytes = kFrameCodeBytes + size_t(plan.taps) * (14 * instructions_per_vector * 12 + passes * 5 * 8);
  return plan;
}

bool generate_pool_nhwc(const SpecKey& key, CompiledKernel* out, std::string* error) {
  const PoolPlan plan = plan_pool_nhwc(key);
  return emit_compiled(
      key, plan, [&] { return std::make_shared<Generator>(key, plan); },
      [&](Xbyak::CodeGenerator& generator) { out->pool_row = generator.getCode<convjit_pool_row_fn>(); }, out, error);
}

}  // namespace convjit::jit::xbyak
