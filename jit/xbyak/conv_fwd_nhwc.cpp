#include "conv_fwd_nhwc.hpp"

#include <xbyak/xbyak.h>

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <memory>
#include <vector>

#include "emit.hpp"

namespace convjit::jit::xbyak {
namespace {

using namespace Xbyak;

constexpr int kMaxVectors = 4;                                            // plan_nhwc's widest block
constexpr int kMaxPixelGroups = 4;

#define PROBLEM(field) qword[reg_problem + offsetof(convjit_conv_problem, field)]
#define TILE(field) qword[reg_tile + offsetof(convjit_conv_tile, field)]

// Emits: for the channel block's variant (its vector count), for each block of the row segment in
// the plan's schedule,
//   acc[px][oc] = sum over (kd, kh, kw, ic) in OHWI order of x[px + tap][ic] * w[oc][tap][ic]
// as one FMA chain per output, then + bias, then relu: the generic tier's numbers exactly.
class Generator : public CodeGenerator {
 public:
  Generator(const SpecKey& key, const NhwcPlan& plan)
      : CodeGenerator(plan.code_bytes, DontSetProtectRWE),
        key_(key),
        plan_(plan),
        vector_bytes_(plan.isa.vector_bytes),
        reg_tmp_a(vector(plan.isa, plan.isa.vector_registers - 2)),
        reg_tmp_b(vector(plan.isa, plan.isa.vector_registers - 1)) {
    emit_prologue();
    emit_channel_variants();
    emit_epilogue();
    for (size_t variant = 0; variant < plan.block_vectors.size(); ++variant) emit_block_table(variant);
  }

 private:
  const Reg64 reg_problem = rdi, reg_tile = rsi;
  const Reg64 reg_x_block = rsi;                             // x at the block's first pixel, tap (0,0,0) unflipped
  const Reg64 reg_weights = r8;                              // packed weights of the current k
  const Reg64 reg_plane = rdx, reg_row = r9, reg_tap = rbx;  // running tap pointers
  // Pixels 0, 3, 6 and 9 of the block at the current input channel: the pixel groups' inputs.
  const Reg64 reg_in[kMaxPixelGroups] = {rax, rbp, r10, r15};
  const Reg64 reg_ic = rcx, reg_y = r12, reg_pixel_step = r13, reg_pixel_step3 = r11;
  const Reg64 reg_col_step = r14;     // view step along W, bytes
  const Reg64 reg_pixels_left = rdi;  // after the problem's fields are read

  enum Local {
    kXBase,
    kPixels,
    kIcCount,
    kBias,
    kYPixelBytes,
    kPackedWeights,
    kRowsLeft,
    kColumnsLeft,
    kPartialBlock,  // nonzero: fewer channels than the block, stores are masked
    kPlaneStep,     // view steps along D and H, bytes: used once per kernel row
    kRowStep,
    kMasks,         // AVX2: one lane mask per vector, lanes of real channels
    kLocals = kMasks + kMaxVectors * 32 / kLocalBytes
  };
  Address local(Local l) { return qword[rsp + kLocalBytes * int(l)]; }
  Address mask(int v) { return yword[rsp + kLocalBytes * int(kMasks) + 32 * v]; }
  // AVX-512: the same masks in opmask registers.
  Opmask channel_mask(int v) const { return Opmask(1 + v); }

  // The accumulators, then what the ic loop keeps in registers: the block's weights and one input
  // broadcast (none when embedded), or the block's input broadcasts and one weight vector.
  Xmm acc(int px, int v) const { return vector(plan_.isa, px * plan_.vectors + v); }
  int first_free() const { return plan_.pixels * plan_.vectors; }
  Xmm weight(int v) const { return vector(plan_.isa, first_free() + (plan_.weights_held ? v : plan_.pixels)); }
  Xmm input(int px) const { return vector(plan_.isa, first_free() + (plan_.weights_held ? plan_.vectors : px)); }

  void emit_prologue() {
    emit_enter(*this, kLocalBytes * kLocals + kLocalBytes);  // ymm locals are accessed unaligned
    // The driver's input view: x at tap (0, 0, 0) of the segment's first pixel, all taps real.
    mov(rax, TILE(x));
    mov(local(kXBase), rax);
    for (auto [field, to] : {std::pair{offsetof(convjit_conv_tile, view_tap_plane), kPlaneStep},
                             std::pair{offsetof(convjit_conv_tile, view_tap_row), kRowStep}}) {
      mov(rax, qword[reg_tile + field]);
      shl(rax, kFloatBytesShift);
      mov(local(to), rax);
    }
    mov(reg_col_step, TILE(view_position));
    imul(reg_col_step, reg_col_step, int(kFloatBytes * key_.dilation[2]));
    mov(reg_pixel_step, TILE(view_position));
    imul(reg_pixel_step, reg_pixel_step, int(kFloatBytes * key_.stride[2]));
    lea(reg_pixel_step3, ptr[reg_pixel_step + reg_pixel_step * 2]);
    mov(rax, PROBLEM(ic_per_group));
    mov(local(kIcCount), rax);
    mov(rax, PROBLEM(y.spatial[2]));
    shl(rax, kFloatBytesShift);
    mov(local(kYPixelBytes), rax);
    mov(rax, TILE(bias));
    mov(local(kBias), rax);
    mov(rax, TILE(packed_weights));
    mov(local(kPackedWeights), rax);
    mov(rax, TILE(pixel_count));
    mov(local(kPixels), rax);
    mov(reg_y, TILE(y));
    emit_channel_masks();
  }

  // The channel block's variant: the narrowest of the plan's vector counts that holds oc_count
  // channels, its stores masked when the channels do not fill it. Each variant is a whole pixel
  // loop; the packed weights keep the widest block's stride.
  void emit_channel_variants() {
    const std::vector<int>& counts = plan_.block_vectors;
    std::vector<Label> variant_of(counts.size());
    Label done;
    mov(rax, TILE(oc_count));
    for (size_t i = counts.size(); i-- > 1;) {
      cmp(rax, plan_.isa.lanes * counts[i]);
      jle(variant_of[i], T_NEAR);
    }
    block_of_.resize(counts.size());
    block_table_.resize(counts.size());
    for (size_t i = 0; i < counts.size(); ++i) {
      L(variant_of[i]);
      xor_(edx, edx);
      cmp(rax, plan_.isa.lanes * counts[i]);
      setl(dl);
      mov(local(kPartialBlock), rdx);
      emit_pixel_loop(i);
      jmp(done, T_NEAR);
    }
    L(done);
  }

  // Channel masks for the partial block's stores and bias load: lane i of vector v is set when
  // lanes * v + i < oc_count.
  void emit_channel_masks() {
    mov(rdx, TILE(oc_count));
    if (plan_.isa.opmask) {
      mov(rax, -1);
      bzhi(rax, rax, rdx);  // the low oc_count bits (all 64 when oc_count >= 64)
      for (int v = 0; v < plan_.vectors; ++v) {
        kmovw(channel_mask(v), eax);
        shr(rax, plan_.isa.lanes);
      }
      return;
    }
    mov(rax, reinterpret_cast<size_t>(kLaneIndex));
    for (int v = 0; v < plan_.vectors; ++v) {
      vmovq(Xmm(reg_tmp_a.getIdx()), rdx);
      vpbroadcastd(reg_tmp_a, Xmm(reg_tmp_a.getIdx()));
      vpcmpgtd(reg_tmp_a, reg_tmp_a, ptr[rax]);
      vmovups(mask(v), reg_tmp_a);
      sub(rdx, plan_.isa.lanes);
    }
  }

  // Blocks of the plan's pixel counts in the plan's schedule (rows of 17 go as 12 + 6, recomputing
  // one output); what is left under the smallest block goes in a smallest block moved back to end
  // at the segment's last pixel, recomputing (bitwise the same) a few outputs. The driver gives
  // segments of at least one smallest block.
  void emit_pixel_loop(size_t variant) {
    const std::vector<int>& sizes = plan_.block_pixels;
    const int vectors = plan_.block_vectors[variant];
    std::vector<Label>& block_of = block_of_[variant];
    Label next, done;
    block_of.resize(sizes.size());
    mov(reg_pixels_left, local(kPixels));
    mov(reg_x_block, local(kXBase));
    L(next);
    if (!plan_.block_schedule.empty()) {  // the schedule's block for what is left, the widest beyond it
      cmp(reg_pixels_left, int(plan_.block_schedule.size()));
      jge(block_of[0], T_NEAR);
      lea(rax, ptr[rip + block_table_[variant]]);
      jmp(ptr[rax + reg_pixels_left * 8]);
    }
    for (size_t i = sizes.size(); i-- > 0;) {  // the smallest first: with one size it falls through
      const int pixels = sizes[i];
      L(block_of[i]);
      if (i + 1 == sizes.size()) {
        Label whole;
        cmp(reg_pixels_left, pixels);
        jge(whole, T_NEAR);
        mov(rax, reg_pixels_left);  // fewer than a block left: back by pixels - left
        sub(rax, pixels);
        mov(rdx, rax);
        imul(rdx, local(kYPixelBytes));
        add(reg_y, rdx);
        imul(rax, reg_pixel_step);
        add(reg_x_block, rax);
        mov(reg_pixels_left, pixels);
        L(whole);
      }
      emit_block(pixels, vectors);
      emit_advance_pixels(pixels);
      sub(reg_pixels_left, pixels);
      jg(next, T_NEAR);
      jmp(done, T_NEAR);
    }
    L(done);
  }

  // The schedule as a table of a variant's block entries, read by its pixel loop's indirect jump.
  void emit_block_table(size_t variant) {
    if (plan_.block_schedule.empty()) return;
    align(8);
    L(block_table_[variant]);
    for (int block : plan_.block_schedule) putL(block_of_[variant][block]);
  }

  // x and y on by `pixels` pixels.
  void emit_advance_pixels(int pixels) {
    if (pixels == 3) {
      add(reg_x_block, reg_pixel_step3);
    } else if (pixels == 6 || pixels == 12 || pixels == 24) {
      lea(rax, ptr[reg_pixel_step3 * (pixels / 3)]);
      add(reg_x_block, rax);
    } else {
      imul(rax, reg_pixel_step, pixels);
      add(reg_x_block, rax);
    }
    mov(rax, local(kYPixelBytes));
    imul(rax, rax, pixels);
    add(reg_y, rax);
  }

  void emit_block(int pixels, int vectors) {
    for (int px = 0; px < pixels; ++px) {
      for (int v = 0; v < vectors; ++v) vxorps(acc(px, v), acc(px, v), acc(px, v));
    }
    mov(reg_weights, local(kPackedWeights));
    emit_taps(pixels, vectors);
    emit_store(pixels, vectors);
  }

  // body() n times with step() between: unrolled, or as a run-time loop counted in `counter` on
  // the stack (no register is free; the step after the last pass is harmless: every pointer it
  // moves is set again before its next use).
  template <typename Body, typename Step>
  void emit_times(int64_t n, bool rolled, Local counter, Body&& body, Step&& step) {
    if (!rolled || n == 1) {
      for (int64_t i = 0; i < n; ++i) {
        if (i > 0) step();
        body();
      }
      return;
    }
    Label loop;
    mov(local(counter), int(n));
    L(loop);
    body();
    step();
    dec(local(counter));
    jnz(loop, T_NEAR);
  }

  // Taps in OHWI order (kd, kh, kw), each reducing over the input channels; the packed weights
  // run on in k order.
  void emit_taps(int pixels, int vectors) {
    const int64_t kd_n = key_.kernel[0], kh_n = key_.kernel[1], kw_n = key_.kernel[2];
    auto start_reversed = [&](const Reg64& target, const Operand& step, int64_t n) {
      if (!key_.flip || n <= 1) return;
      mov(reg_ic, step);
      imul(reg_ic, reg_ic, int(n - 1));
      add(target, reg_ic);
    };
    auto advance = [&](const Reg64& target, const Operand& step) { key_.flip ? sub(target, step) : add(target, step); };
    mov(reg_plane, reg_x_block);
    start_reversed(reg_plane, local(kPlaneStep), kd_n);
    for (int64_t kd = 0; kd < kd_n; ++kd) {
      if (kd > 0) advance(reg_plane, local(kPlaneStep));
      mov(reg_row, reg_plane);
      start_reversed(reg_row, local(kRowStep), kh_n);
      emit_times(
          kh_n, plan_.rolled_rows, kRowsLeft,
          [&] {
            mov(reg_tap, reg_row);
            start_reversed(reg_tap, reg_col_step, kw_n);
            emit_times(
                kw_n, plan_.rolled_columns, kColumnsLeft, [&] { emit_ic_loop(pixels, vectors); },
                [&] { advance(reg_tap, reg_col_step); });
          },
          [&] { advance(reg_row, local(kRowStep)); });
    }
  }

  // Input of pixel px of the block at the current input channel: from its group's pointer.
  RegExp input_at(int px) const {
    const Reg64& base = reg_in[px / 3];
    const int within = px % 3;
    return within == 0 ? RegExp(base) : base + reg_pixel_step * within;
  }

  void emit_ic_loop(int pixels, int vectors) {
    const int groups = (pixels + 2) / 3;
    for (int group = 0; group < groups; ++group) {
      if (group == 0) mov(reg_in[0], reg_tap);
      else if (group == 3) lea(reg_in[3], ptr[reg_in[1] + reg_pixel_step3 * 2]);
      else lea(reg_in[group], ptr[reg_tap + reg_pixel_step3 * group]);
    }
    mov(reg_ic, local(kIcCount));
    Label loop;
    L(loop);
    if (plan_.weights_held) {
      for (int v = 0; v < vectors; ++v) vmovups(weight(v), ptr[reg_weights + vector_bytes_ * v]);
      for (int px = 0; px < pixels; ++px) {
        if (plan_.embedded_broadcast) {
          vfmadd231ps(acc(px, 0), weight(0), ptr_b[input_at(px)]);
          continue;
        }
        vbroadcastss(input(px), ptr[input_at(px)]);
        for (int v = 0; v < vectors; ++v) vfmadd231ps(acc(px, v), input(px), weight(v));
      }
    } else {
      for (int px = 0; px < pixels; ++px) vbroadcastss(input(px), ptr[input_at(px)]);
      for (int v = 0; v < vectors; ++v) {
        vmovups(weight(v), ptr[reg_weights + vector_bytes_ * v]);
        for (int px = 0; px < pixels; ++px) vfmadd231ps(acc(px, v), input(px), weight(v));
      }
    }
    for (int group = 0; group < groups; ++group) add(reg_in[group], kFloatBytes);
    add(reg_weights, kFloatBytes * plan_.oc_block());
    dec(reg_ic);
    jnz(loop, T_NEAR);
  }

  void emit_store(int pixels, int vectors) {
    Label no_bias;
    mov(rax, local(kBias));
    test(rax, rax);
    jz(no_bias, T_NEAR);
    for (int v = 0; v < vectors; ++v) {
      if (plan_.isa.opmask) {
        vmovups(reg_tmp_a | channel_mask(v) | T_z, ptr[rax + vector_bytes_ * v]);
      } else {
        vmovups(reg_tmp_b, mask(v));
        vmaskmovps(reg_tmp_a, reg_tmp_b, ptr[rax + vector_bytes_ * v]);
      }
      for (int px = 0; px < pixels; ++px) vaddps(acc(px, v), acc(px, v), reg_tmp_a);
    }
    L(no_bias);
    if (key_.relu) {
      vxorps(reg_tmp_a, reg_tmp_a, reg_tmp_a);
      for (int px = 0; px < pixels; ++px) {
        for (int v = 0; v < vectors; ++v) vmaxps(acc(px, v), reg_tmp_a, acc(px, v));  // keeps NaN
      }
    }
    // Full blocks store plainly: masked stores cost AMD cores many cycles each, which a block
    // with a short reduction (seed_issue: 27 FMAs per output) cannot hide.
    Label masked, stored;
    mov(rax, reg_y);
    mov(rdx, local(kYPixelBytes));
    cmp(local(kPartialBlock), 0);
    jne(masked, T_NEAR);
    for (int px = 0; px < pixels; ++px) {
      if (px > 0) add(rax, rdx);
      for (int v = 0; v < vectors; ++v) vmovups(ptr[rax + vector_bytes_ * v], acc(px, v));
    }
    jmp(stored, T_NEAR);
    L(masked);
    for (int v = 0; v < vectors; ++v) {
      if (!plan_.isa.opmask) vmovups(reg_tmp_b, mask(v));
      mov(rcx, rax);
      for (int px = 0; px < pixels; ++px) {
        if (px > 0) add(rcx, rdx);
        if (plan_.isa.opmask)
          vmovups(ptr[rcx + vector_bytes_ * v] | channel_mask(v), acc(px, v));
        else
          vmaskmovps(ptr[rcx + vector_bytes_ * v], reg_tmp_b, acc(px, v));
      }
    }
    L(stored);
  }

  void emit_epilogue() {
    emit_leave(*this, kLocalBytes * kLocals + kLocalBytes);
  }

  const SpecKey key_;
  const NhwcPlan plan_;
  const int vector_bytes_;
  const Xmm reg_tmp_a, reg_tmp_b;  // free once the reduction is done
  std::vector<std::vector<Label>> block_of_;  // per variant, each block size's code in block_pixels' order
  std::vector<Label> block_table_;            // per variant
};

#undef PROBLEM
#undef TILE

}  // namespace

int64_t nhwc_min_row_pixels(Isa isa, int32_t oc_class) {
  return isa == Isa::Avx512 || oc_class < kNhwcWideClass ? 6 : 3;
}

namespace {

// The block to emit with r pixels left: the one after which the segment is done computing the
// fewest pixels, then in the fewest blocks, then the widest. Under the smallest block, what is
// left costs a smallest block (moved back).
std::vector<int> schedule_blocks(const std::vector<int>& sizes) {
  if (sizes.size() == 1) return {};
  struct Cost {
    int64_t pixels = 0, blocks = 0;
    bool operator<(const Cost& o) const { return pixels != o.pixels ? pixels < o.pixels : blocks < o.blocks; }
  };
  const int horizon = 4 * (sizes.front() + sizes.back());
  std::vector<Cost> rest(horizon + 1);
  std::vector<int> first(horizon + 1, 0);
  for (int r = 1; r <= horizon; ++r) {
    Cost best{INT64_MAX, 0};
    for (size_t i = 0; i < sizes.size(); ++i) {  // widest first, so a tie keeps the wider
      const int b = sizes[i];
      if (r < b && i + 1 < sizes.size()) continue;
      const Cost c = r < b ? Cost{b, 1} : Cost{b + rest[r - b].pixels, 1 + rest[r - b].blocks};
      if (c < best) best = c, first[r] = int(i);
    }
    rest[r] = best;
  }
  int end = horizon;  // the table ends where the widest starts every longer segment
  while (end > 1 && first[end - 1] == 0) --end;
  first.resize(end);
  return first;
}

}  // namespace

NhwcPlan plan_nhwc(const SpecKey& key) {
  NhwcPlan plan;
  plan.isa = traits_of(key.isa);
  plan.unsupported = key.layout != CONVJIT_NHWC ? "not NHWC" : common_unsupported_reason(key);
  if (!plan.unsupported.empty()) return plan;
  // AVX-512: 12-pixel blocks, and 8, 7 and 6 for short rows and row ends. AVX2: blocks of 3 and 2
  // pixels (wide) or 6, 5 and 4 (narrow), the smallest with 8 accumulators (still two chains per
  // FMA unit's latency), so rows of 7 go as 3 + 2 + 2, not 3 + 3 + 3 moved back, and of 22 as
  // 6 + 6 + 6 + 4; the shortest segment taken stays the tier rules' 3 or 6.
  plan.block_pixels = key.isa == Isa::Avx512           ? std::vector<int>{12, 8, 7, 6}
                      : key.oc_class >= kNhwcWideClass ? std::vector<int>{3, 2}
                                                       : std::vector<int>{6, 5, 4};
  plan.min_row_pixels = nhwc_min_row_pixels(key.isa, key.oc_class);
  assert(plan.min_row_pixels >= plan.block_pixels.back());
  plan.block_schedule = schedule_blocks(plan.block_pixels);
  // AVX-512: 12 pixels (a quarter of the input broadcasts per FMA of 3) of one or two vectors;
  // with one, each input broadcast serves one FMA and is folded into it. AVX2: 12 accumulators;
  // the wide block broadcasts 3 inputs per 12 FMAs instead of 6 (bench/RESULTS.md, "Why the tier
  // rules ...").
  plan.vectors = key.oc_class >= kNhwcWideClass ? (key.isa == Isa::Avx512 ? 2 : 4) : (key.isa == Isa::Avx512 ? 1 : 2);
  plan.pixels = plan.block_pixels.front();
  // A partial channel block of at most half the vectors runs half of them (oc 80 as 32 + 32 + 16,
  // not + 32 with 16 channels masked off).
  plan.block_vectors = plan.vectors > 1 ? std::vector<int>{plan.vectors, plan.vectors / 2} : std::vector<int>{1};
  plan.weights_held = plan.vectors <= 2;
  plan.embedded_broadcast = plan.isa.opmask && plan.vectors == 1;
  plan.pixel_groups = (plan.pixels + 2) / 3;
  // AVX-512's four block sizes would emit four copies of every tap: its taps loop at run time
  // (one ic loop per block size and kernel row), and so do its rows beyond 3 unrolled ones (3D),
  // which keeps a compile within 50 us (bench/RESULTS.md).
  plan.rolled_columns = key.isa == Isa::Avx512;
  plan.rolled_rows = key.kernel[1] >= kRolledKernelRows || (plan.rolled_columns && key.kernel[0] * key.kernel[1] > 3);
  const int held = plan.weights_held ? plan.vectors + (plan.embedded_broadcast ? 0 : 1) : plan.pixels + 1;
  plan.vector_registers_used = plan.pixels * plan.vectors + held;
  // A tap: its ic loop's instructions (loads, broadcasts, FMAs, pointer steps), at most 12 bytes each.
  const int fmas = plan.pixels * plan.vectors;
  const int loads = plan.vectors + (plan.embedded_broadcast ? 0 : plan.pixels);
  const int steps = 2 * plan.pixel_groups + 5;
  const int64_t unrolled_taps =
      key.kernel[0] * (plan.rolled_rows ? 1 : key.kernel[1]) * (plan.rolled_columns ? 1 : key.kernel[2]);
  const size_t variants = plan.block_vectors.size();
  plan.code_bytes =
      kFrameCodeBytes * variants +
      variants * (size_t(unrolled_taps) * plan.block_pixels.size() * size_t(12 * (fmas + loads + steps + 4)) +
                  8 * (plan.block_schedule.size() + 1));  // the schedule's table, aligned
  return plan;
}

bool generate_conv_fwd_nhwc(const SpecKey& key, CompiledKernel* out, std::string* error) {
  const NhwcPlan plan = plan_nhwc(key);
  convjit_conv_kernel kernel{};
  kernel.packs_weights = 1;
  kernel.oc_block = plan.oc_block();
  kernel.row_kernel = 1;
  kernel.min_row_pixels = plan.min_row_pixels;
  kernel.row_lanes = 1;  // pixels are not in the lanes (and packing kernels are never flattened)
  return emit_kernel(
      key, plan, kernel, [&] { return std::make_shared<Generator>(key, plan); }, out, error);
}

}  // namespace convjit::jit::xbyak
