#include "conv_fwd_depthwise_nhwc.hpp"

#include <xbyak/xbyak.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <map>
#include <memory>

#include "depthwise_rows_abi.h"
#include "emit.hpp"

namespace convjit::jit::xbyak {
namespace {

using namespace Xbyak;

// The widest pixel block: 16 accumulators keep AVX-512's two FMA ports busy through the FMA
// latency with a third of the loads per FMA of tier 0's tap-by-tap blocks; AVX2 has room for 8.
int widest_block(const IsaTraits& isa) {
  return isa.opmask ? 16 : 8;
}

// An upper bound of one instruction's bytes (EVEX, a base and an index, a 32-bit displacement).
constexpr size_t kInstructionBytes = 12;

#define ROW(field) qword[reg_row + offsetof(convjit_depthwise_row, field)]

// Emits, for the run's outputs in blocks of plan.block_pixels (the widest while it fits, then each
// smaller one at most once), and per block for each vector of channels (the last one masked where
// the channels end inside it):
//   acc[p] = 0 for every pixel p of the block
//   for each real tap row r (the driver's list, in weight order):
//     w[kw] = weights of (r, kw) for every W tap kw
//     for each input column the block reads, in the plan's order: v = x[r][column]
//       acc[p] = fma(v, w[kw], acc[p]) for each (p, kw) that reads the column
//   y[p] = relu(acc[p] + bias)
// Each output's taps come in weight order (plan: the columns' order), so each output is tier 0's
// chain (lib/kernels/conv_depthwise_nhwc_impl.hpp) and gets its bits.
class Generator : public CodeGenerator {
 public:
  Generator(const SpecKey& key, const DepthwisePlan& plan)
      : CodeGenerator(plan.code_bytes, DontSetProtectRWE), key_(key), plan_(plan) {
    emit_prologue();
    emit_pixel_blocks();
    emit_leave(*this, kLocalBytes);
  }

 private:
  const Reg64 reg_row = rdi;                     // the row struct: read by the prologue only
  const Reg64 reg_x = r8, reg_y = r9;            // the current pixel block's input (row 0) and first output
  const Reg64 reg_w = r10, reg_bias = r11;       // weights base, bias (or 0)
  const Reg64 reg_outputs_left = r12;            // outputs of the run not yet computed
  const Reg64 reg_channel = r13;                 // byte offset of the current vector of channels
  const Reg64 reg_tap_x = r14, reg_tap_w = r15;  // the current tap row's input and weights, at reg_channel
  const Reg64 reg_tap_row = rbx, reg_tap_rows_left = rbp;
  const Reg64 reg_tap_rows = rdx, reg_tap_row_count = rcx;  // the row's list, kept
  const Reg64 reg_vectors_left = rsi;

  // The accumulators, then the W taps' weights, one input column, and AVX2's lane mask.
  Xmm acc(int pixel) const { return vector(plan_.isa, pixel); }
  Xmm weight(int64_t kw) const { return vector(plan_.isa, plan_.block_pixels.front() + int(kw)); }
  Xmm input() const { return vector(plan_.isa, plan_.block_pixels.front() + int(plan_.taps_w)); }
  Xmm lane_mask_vector() const { return vector(plan_.isa, plan_.block_pixels.front() + int(plan_.taps_w) + 1); }
  const Opmask k_lanes = k1;  // AVX-512: the tail's lanes
  LaneMask lanes() const { return {k_lanes, lane_mask_vector()}; }

  int64_t pixel_bytes() const { return plan_.channels * kFloatBytes; }

  void emit_prologue() {
    emit_enter(*this, kLocalBytes);
    mov(reg_x, ROW(x));
    mov(reg_w, ROW(w));
    mov(reg_bias, ROW(bias));
    mov(reg_y, ROW(y));
    mov(reg_tap_rows, ROW(tap_rows));
    mov(reg_tap_row_count, ROW(tap_row_count));
    mov(reg_outputs_left, ROW(outputs));
    if (plan_.tail_lanes == 0) return;
    if (plan_.isa.opmask) {
      mov(eax, (1u << plan_.tail_lanes) - 1);
      kmovw(k_lanes, eax);
    } else {  // lanes below the tail's count: the count broadcast, compared with each lane's index
      const Ymm mask(lane_mask_vector().getIdx());
      mov(eax, int(plan_.tail_lanes));
      vmovd(Xmm(mask.getIdx()), eax);
      vpbroadcastd(mask, Xmm(mask.getIdx()));
      mov(rax, reinterpret_cast<size_t>(kLaneIndex));
      vpcmpgtd(mask, mask, ptr[rax]);
    }
  }

  // The widest block while it fits, then each smaller one where it fits (at most once: what is
  // left after the widest is under it, and the smaller ones are the powers of two below it).
  void emit_pixel_blocks() {
    const std::vector<int>& sizes = plan_.block_pixels;
    std::vector<Label> next(sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
      Label again;
      L(again);
      cmp(reg_outputs_left, sizes[i]);
      jl(next[i], T_NEAR);
      emit_channel_vectors(i);
      add(reg_x, int(sizes[i] * key_.stride[2] * pixel_bytes()));
      add(reg_y, int(sizes[i] * pixel_bytes()));
      sub(reg_outputs_left, sizes[i]);
      if (i == 0) jmp(again, T_NEAR);
      L(next[i]);
    }
  }

  // Every whole vector of channels (a run-time loop), then the masked tail.
  void emit_channel_vectors(size_t block) {
    xor_(reg_channel.cvt32(), reg_channel.cvt32());
    if (plan_.full_vectors > 0) {
      Label vectors;
      mov(reg_vectors_left, plan_.full_vectors);
      L(vectors);
      emit_vector(block, false);
      add(reg_channel, plan_.isa.vector_bytes);
      dec(reg_vectors_left);
      jnz(vectors, T_NEAR);
    }
    if (plan_.tail_lanes > 0) emit_vector(block, true);
  }

  void load(Xmm to, const Address& at, bool masked) { emit_vector_load(*this, plan_.isa, lanes(), to, at, masked); }

  void emit_vector(size_t block, bool masked) {
    const int pixels = plan_.block_pixels[block];
    for (int p = 0; p < pixels; ++p) vxorps(acc(p), acc(p), acc(p));
    Label tap_rows, outputs;
    mov(reg_tap_row, reg_tap_rows);
    mov(reg_tap_rows_left, reg_tap_row_count);
    test(reg_tap_rows_left, reg_tap_rows_left);
    jz(outputs, T_NEAR);
    L(tap_rows);
    emit_tap_row(block, masked);
    add(reg_tap_row, int(sizeof(convjit_depthwise_tap_row)));
    dec(reg_tap_rows_left);
    jnz(tap_rows, T_NEAR);
    L(outputs);
    emit_outputs(pixels, masked);
  }

  // One tap row: its W taps' weights, then each input column once, into every output that reads it.
  void emit_tap_row(size_t block, bool masked) {
    mov(reg_tap_x, qword[reg_tap_row + offsetof(convjit_depthwise_tap_row, x_offset)]);
    lea(reg_tap_x, ptr[reg_x + reg_tap_x * kFloatBytes]);
    add(reg_tap_x, reg_channel);
    mov(reg_tap_w, qword[reg_tap_row + offsetof(convjit_depthwise_tap_row, w_offset)]);
    lea(reg_tap_w, ptr[reg_w + reg_tap_w * kFloatBytes]);
    add(reg_tap_w, reg_channel);
    for (int64_t kw = 0; kw < plan_.taps_w; ++kw) load(weight(kw), ptr[reg_tap_w + int(kw * pixel_bytes())], masked);
    for (const DepthwiseColumn& column : plan_.columns[block]) {
      load(input(), ptr[reg_tap_x + int(column.column * pixel_bytes())], masked);
      for (const auto& [pixel, kw] : column.reads) vfmadd231ps(acc(pixel), input(), weight(kw));
    }
  }

  // + bias (where given), relu, store.
  void emit_outputs(int pixels, bool masked) {
    Label no_bias;
    test(reg_bias, reg_bias);
    jz(no_bias, T_NEAR);
    load(input(), ptr[reg_bias + reg_channel], masked);
    for (int p = 0; p < pixels; ++p) vaddps(acc(p), acc(p), input());
    L(no_bias);
    if (key_.relu) {
      const Xmm zero = weight(0);
      vxorps(zero, zero, zero);
      for (int p = 0; p < pixels; ++p) vmaxps(acc(p), zero, acc(p));  // max(0, v), v where NaN
    }
    for (int p = 0; p < pixels; ++p) {
      emit_vector_store(*this, plan_.isa, lanes(), ptr[reg_y + reg_channel + int(p * pixel_bytes())], acc(p), masked);
    }
  }

  const SpecKey& key_;
  const DepthwisePlan& plan_;
};

// The input columns of a block of `pixels` outputs and the (pixel, W tap) pairs reading each, in
// the order that gives each output its taps in weight order.
std::vector<DepthwiseColumn> block_columns(const SpecKey& key, int pixels) {
  const int64_t taps = key.kernel[2];
  std::map<int64_t, DepthwiseColumn> by_column;
  for (int p = 0; p < pixels; ++p) {
    for (int64_t kw = 0; kw < taps; ++kw) {
      const int64_t column = p * key.stride[2] + (key.flip ? taps - 1 - kw : kw) * key.dilation[2];
      by_column[column].column = column;
      by_column[column].reads.emplace_back(p, int(kw));
    }
  }
  std::vector<DepthwiseColumn> columns;
  for (auto& [column, reads] : by_column) columns.push_back(std::move(reads));
  if (key.flip) std::reverse(columns.begin(), columns.end());
  return columns;
}

}  // namespace

DepthwisePlan plan_depthwise_nhwc(const SpecKey& key) {
  DepthwisePlan plan;
  plan.isa = traits_of(key.isa);
  if (key.op != CONVJIT_OP_CONV_FORWARD || key.layout != CONVJIT_NHWC || key.depthwise_groups < 1) {
    plan.unsupported = "not an NHWC depthwise forward key";
    return plan;
  }
  if (std::string why = common_unsupported_reason(key); !why.empty()) {
    plan.unsupported = why;
    return plan;
  }
  plan.channels = key.depthwise_groups;
  plan.taps_w = key.kernel[2];
  plan.full_vectors = plan.channels / plan.isa.lanes;
  plan.tail_lanes = plan.channels % plan.isa.lanes;
  const int mask_registers = !plan.isa.opmask && plan.tail_lanes ? 1 : 0;
  const int64_t room = plan.isa.vector_registers - plan.taps_w - 1 - mask_registers;  // for accumulators
  if (room < 1) {
    plan.unsupported = std::to_string(plan.taps_w) + " W taps: their weights do not fit the vector registers";
    return plan;
  }
  const int widest = int(std::min<int64_t>(widest_block(plan.isa), room));
  plan.block_pixels.push_back(widest);
  int power = 1;
  while (power * 2 < widest) power *= 2;
  for (int p = power; p >= 1 && p < widest; p /= 2) plan.block_pixels.push_back(p);
  // Every displacement the emitter forms, in bytes, within 32 bits: the widest block's last
  // column and its step along W.
  const int64_t last_column = (widest - 1) * key.stride[2] + (plan.taps_w - 1) * key.dilation[2];
  if (std::max(last_column + 1, widest * key.stride[2]) > INT32_MAX / (plan.channels * kFloatBytes) ||
      plan.taps_w * plan.channels > INT32_MAX / kFloatBytes) {
    plan.unsupported = "offsets beyond 32 bits";
    return plan;
  }
  size_t instructions = 0;
  for (int pixels : plan.block_pixels) {
    plan.columns.push_back(block_columns(key, pixels));
    // Per vector body: the tap row's setup and weights, a load per column, the FMAs, the outputs.
    const size_t body = 16 + size_t(plan.taps_w) + plan.columns.back().size() + size_t(pixels * plan.taps_w) +
                        4 * size_t(pixels);
    instructions += 2 * body;  // the whole vectors' loop and the masked tail
  }
  plan.code_bytes = kFrameCodeBytes + instructions * kInstructionBytes;
  plan.vector_registers_used = widest + int(plan.taps_w) + 1 + mask_registers;
  return plan;
}

bool generate_conv_fwd_depthwise_nhwc(const SpecKey& key, CompiledKernel* out, std::string* error) {
  const DepthwisePlan plan = plan_depthwise_nhwc(key);
  return emit_compiled(
      key, plan, [&] { return std::make_shared<Generator>(key, plan); },
      [&](CodeGenerator& generator) {
        out->kernel = {};
        out->kernel.depthwise_row = generator.getCode<convjit_depthwise_row_fn>();
      },
      out, error);
}

}  // namespace convjit::jit::xbyak
