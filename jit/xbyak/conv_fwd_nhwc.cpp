#include "conv_fwd_nhwc.hpp"

#include <xbyak/xbyak.h>

#include <algorithm>
#include <cstddef>
#include <memory>

#include "emit.hpp"

namespace convjit::jit::xbyak {
namespace {

using namespace Xbyak;

alignas(kVectorBytes) const int32_t kLaneIndex[kVectorFloats] = {0, 1, 2, 3, 4, 5, 6, 7};
constexpr int kMaxVectors = 4;  // plan_nhwc's widest block

// packed[k][j] = w[j][k] for the tile's oc_count <= oc_block channels, zero for the missing ones.
template <int oc_block>
void pack_weights(const convjit_conv_problem* p, const float* w, int64_t oc_count, float* packed) {
  const int64_t k_count = p->reduction;
  for (int64_t k = 0; k < k_count; ++k) {
    float* row = packed + k * oc_block;
    for (int64_t j = 0; j < oc_count; ++j) row[j] = w[j * k_count + k];
    std::fill(row + oc_count, row + oc_block, 0.0f);
  }
}

#define PROBLEM(field) qword[reg_problem + offsetof(convjit_conv_problem, field)]
#define TILE(field) qword[reg_tile + offsetof(convjit_conv_tile, field)]

// Emits: for each block of plan.pixels pixels of the row segment,
//   acc[px][oc] = sum over (kd, kh, kw, ic) in OHWI order of x[px + tap][ic] * w[oc][tap][ic]
// as one FMA chain per output, then + bias, then relu: the generic tier's numbers exactly.
class Generator : public CodeGenerator {
 public:
  Generator(const SpecKey& key, size_t code_size)
      : CodeGenerator(code_size, DontSetProtectRWE), key_(key), plan_(plan_nhwc(key)) {
    emit_prologue();
    emit_pixel_loop();
    emit_epilogue();
  }

 private:
  const Reg64 reg_problem = rdi, reg_tile = rsi;
  const Reg64 reg_x_block = rsi;                             // x at the block's first pixel, tap (0,0,0) unflipped
  const Reg64 reg_weights = r8;                              // packed weights of the current k
  const Reg64 reg_plane = rdx, reg_row = r9, reg_tap = rbx;  // running tap pointers
  const Reg64 reg_in_lo = rax, reg_in_hi = rbp;              // pixels 0 and 3 of the block at the current ic
  const Reg64 reg_ic = rcx, reg_y = r12, reg_pixel_step = r13, reg_pixel_step3 = r11;
  const Reg64 reg_col_step = r14, reg_plane_step = r15, reg_row_step = r10;  // view steps, bytes
  const Reg64 reg_pixels_left = rdi;                                         // after the problem's fields are read

  enum Local {
    kXBase,
    kPixels,
    kIcCount,
    kBias,
    kYPixelBytes,
    kPackedWeights,
    kRowsLeft,
    kPartialBlock,  // nonzero: fewer channels than the block, stores are masked
    kMasks,         // one ymm lane mask per vector: lanes of real channels
    kLocals = kMasks + kMaxVectors * kVectorBytes / kLocalBytes
  };
  Address local(Local l) { return qword[rsp + kLocalBytes * int(l)]; }
  Address mask(int v) { return yword[rsp + kLocalBytes * int(kMasks) + kVectorBytes * v]; }

  // ymm: the accumulators, then what the ic loop keeps in registers: with up to 2 vectors the
  // block's weights and one input broadcast, with more the block's input broadcasts and one weight
  // vector. After the reduction these are free: reg_tmp_a/b.
  Ymm acc(int px, int v) const { return Ymm(px * plan_.vectors + v); }
  int first_free() const { return plan_.pixels * plan_.vectors; }
  bool weights_held() const { return plan_.vectors <= 2; }
  Ymm weight(int v) const { return Ymm(first_free() + (weights_held() ? v : plan_.pixels)); }
  Ymm input(int px) const { return Ymm(first_free() + (weights_held() ? plan_.vectors : px)); }
  const Ymm reg_tmp_a = ymm14, reg_tmp_b = ymm15;

  void emit_prologue() {
    emit_enter(*this, kLocalBytes * kLocals + kLocalBytes);  // ymm locals are accessed unaligned
    // The driver's input view: x at tap (0, 0, 0) of the segment's first pixel, all taps real.
    mov(rax, TILE(x));
    mov(local(kXBase), rax);
    mov(reg_plane_step, TILE(view_tap_plane));
    shl(reg_plane_step, kFloatBytesShift);
    mov(reg_row_step, TILE(view_tap_row));
    shl(reg_row_step, kFloatBytesShift);
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
    // Channel masks for the stores (and the bias load): lane i of vector v is set when
    // 8 * v + i < oc_count.
    mov(rax, reinterpret_cast<size_t>(kLaneIndex));
    mov(rdx, TILE(oc_count));
    for (int v = 0; v < plan_.vectors; ++v) {
      vmovq(Xmm(reg_tmp_a.getIdx()), rdx);
      vpbroadcastd(reg_tmp_a, Xmm(reg_tmp_a.getIdx()));
      vpcmpgtd(reg_tmp_a, reg_tmp_a, ptr[rax]);
      vmovups(mask(v), reg_tmp_a);
      sub(rdx, kVectorFloats);
    }
    mov(rax, TILE(oc_count));
    xor_(edx, edx);
    cmp(rax, plan_.oc_block());
    setl(dl);
    mov(local(kPartialBlock), rdx);
  }

  // Blocks of plan.pixels; a segment that does not divide evenly ends with a block moved back to
  // end at its last pixel, recomputing (bitwise the same) a few outputs. The driver gives
  // segments of at least one block.
  void emit_pixel_loop() {
    const int block = plan_.pixels;
    Label loop, full, done;
    mov(reg_pixels_left, local(kPixels));
    mov(reg_x_block, local(kXBase));
    L(loop);
    emit_block();
    sub(reg_pixels_left, block);
    jz(done, T_NEAR);
    cmp(reg_pixels_left, block);
    jge(full, T_NEAR);
    mov(rax, reg_pixels_left);  // fewer than a block left: step by what is left
    imul(rax, reg_pixel_step);
    add(reg_x_block, rax);
    mov(rax, reg_pixels_left);
    imul(rax, local(kYPixelBytes));
    add(reg_y, rax);
    mov(reg_pixels_left, block);
    jmp(loop, T_NEAR);
    L(full);
    if (block == 6) {
      lea(rax, ptr[reg_pixel_step3 * 2]);
      add(reg_x_block, rax);
    } else {
      add(reg_x_block, reg_pixel_step3);
    }
    mov(rax, local(kYPixelBytes));
    imul(rax, rax, block);
    add(reg_y, rax);
    jmp(loop, T_NEAR);
    L(done);
  }

  void emit_block() {
    for (int px = 0; px < plan_.pixels; ++px) {
      for (int v = 0; v < plan_.vectors; ++v) vxorps(acc(px, v), acc(px, v), acc(px, v));
    }
    mov(reg_weights, local(kPackedWeights));
    emit_taps();
    emit_store();
  }

  // Taps in OHWI order (kd, kh, kw), each reducing over the input channels.
  void emit_taps() {
    const int64_t kd_n = key_.kernel[0], kh_n = key_.kernel[1], kw_n = key_.kernel[2];
    auto start_reversed = [&](const Reg64& target, const Reg64& step, int64_t n) {
      if (!key_.flip || n <= 1) return;
      mov(reg_ic, step);
      imul(reg_ic, reg_ic, int(n - 1));
      add(target, reg_ic);
    };
    auto advance = [&](const Reg64& target, const Reg64& step) { key_.flip ? sub(target, step) : add(target, step); };
    mov(reg_plane, reg_x_block);
    start_reversed(reg_plane, reg_plane_step, kd_n);
    for (int64_t kd = 0; kd < kd_n; ++kd) {
      if (kd > 0) advance(reg_plane, reg_plane_step);
      mov(reg_row, reg_plane);
      start_reversed(reg_row, reg_row_step, kh_n);
      auto emit_row = [&] {  // one kernel row's taps; the packed weights run on in k order
        mov(reg_tap, reg_row);
        start_reversed(reg_tap, reg_col_step, kw_n);
        for (int64_t kw = 0; kw < kw_n; ++kw) {
          if (kw > 0) advance(reg_tap, reg_col_step);
          emit_ic_loop();
        }
      };
      if (kh_n < kRolledKernelRows) {
        for (int64_t kh = 0; kh < kh_n; ++kh) {
          if (kh > 0) advance(reg_row, reg_row_step);
          emit_row();
        }
        continue;
      }
      // Tall kernels (kRolledKernelRows): the rows in a loop; its count lives on the stack (no
      // register is free).
      Label row_loop;
      mov(local(kRowsLeft), int(kh_n));
      L(row_loop);
      emit_row();
      advance(reg_row, reg_row_step);
      dec(local(kRowsLeft));
      jnz(row_loop, T_NEAR);
    }
  }

  // Input of pixel px of the block at the current input channel: pixels 0-2 from reg_in_lo,
  // 3-5 from reg_in_hi.
  Address input_address(int px) {
    const Reg64& base = px < 3 ? reg_in_lo : reg_in_hi;
    const int within = px % 3;
    return within == 0 ? ptr[base] : ptr[base + reg_pixel_step * within];
  }

  void emit_ic_loop() {
    mov(reg_in_lo, reg_tap);
    if (plan_.pixels > 3) lea(reg_in_hi, ptr[reg_tap + reg_pixel_step3]);
    mov(reg_ic, local(kIcCount));
    Label loop;
    L(loop);
    if (weights_held()) {
      for (int v = 0; v < plan_.vectors; ++v) vmovups(weight(v), ptr[reg_weights + kVectorBytes * v]);
      for (int px = 0; px < plan_.pixels; ++px) {
        vbroadcastss(input(px), input_address(px));
        for (int v = 0; v < plan_.vectors; ++v) vfmadd231ps(acc(px, v), input(px), weight(v));
      }
    } else {
      for (int px = 0; px < plan_.pixels; ++px) vbroadcastss(input(px), input_address(px));
      for (int v = 0; v < plan_.vectors; ++v) {
        vmovups(weight(v), ptr[reg_weights + kVectorBytes * v]);
        for (int px = 0; px < plan_.pixels; ++px) vfmadd231ps(acc(px, v), input(px), weight(v));
      }
    }
    add(reg_in_lo, 4);
    if (plan_.pixels > 3) add(reg_in_hi, 4);
    add(reg_weights, kFloatBytes * plan_.oc_block());
    dec(reg_ic);
    jnz(loop, T_NEAR);
  }

  void emit_store() {
    Label no_bias;
    mov(rax, local(kBias));
    test(rax, rax);
    jz(no_bias, T_NEAR);
    for (int v = 0; v < plan_.vectors; ++v) {
      vmovups(reg_tmp_b, mask(v));
      vmaskmovps(reg_tmp_a, reg_tmp_b, ptr[rax + kVectorBytes * v]);
      for (int px = 0; px < plan_.pixels; ++px) vaddps(acc(px, v), acc(px, v), reg_tmp_a);
    }
    L(no_bias);
    if (key_.relu) {
      vxorps(reg_tmp_a, reg_tmp_a, reg_tmp_a);
      for (int px = 0; px < plan_.pixels; ++px) {
        for (int v = 0; v < plan_.vectors; ++v) vmaxps(acc(px, v), reg_tmp_a, acc(px, v));  // keeps NaN
      }
    }
    // Full blocks store plainly: masked stores cost AMD cores many cycles each, which a block
    // with a short reduction (seed_issue: 27 FMAs per output) cannot hide.
    Label masked, stored;
    mov(rax, reg_y);
    mov(rdx, local(kYPixelBytes));
    cmp(local(kPartialBlock), 0);
    jne(masked, T_NEAR);
    for (int px = 0; px < plan_.pixels; ++px) {
      if (px > 0) add(rax, rdx);
      for (int v = 0; v < plan_.vectors; ++v) vmovups(ptr[rax + kVectorBytes * v], acc(px, v));
    }
    jmp(stored, T_NEAR);
    L(masked);
    for (int v = 0; v < plan_.vectors; ++v) {
      vmovups(reg_tmp_b, mask(v));
      mov(rcx, rax);
      for (int px = 0; px < plan_.pixels; ++px) {
        if (px > 0) add(rcx, rdx);
        vmaskmovps(ptr[rcx + kVectorBytes * v], reg_tmp_b, acc(px, v));
      }
    }
    L(stored);
  }

  void emit_epilogue() {
    emit_leave(*this, kLocalBytes * kLocals + kLocalBytes);
  }

  const SpecKey key_;
  const NhwcPlan plan_;
};

#undef PROBLEM
#undef TILE

}  // namespace

NhwcPlan plan_nhwc(const SpecKey& key) {
  return key.oc_class >= kNhwcWideClass ? NhwcPlan{3, 4} : NhwcPlan{6, 2};
}

std::string nhwc_unsupported_reason(const SpecKey& key) {
  if (key.layout != CONVJIT_NHWC) return "not NHWC";
  return common_unsupported_reason(key);
}

bool generate_conv_fwd_nhwc(const SpecKey& key, CompiledKernel* out, std::string* error) {
  if (std::string reason = nhwc_unsupported_reason(key); !reason.empty()) {
    *error = reason;
    return false;
  }
  const NhwcPlan plan = plan_nhwc(key);
  convjit_conv_kernel kernel{};
  kernel.prepare = plan.vectors == 4 ? pack_weights<32> : pack_weights<16>;
  kernel.oc_block = plan.oc_block();
  kernel.row_kernel = 1;
  kernel.min_row_pixels = plan.pixels;
  // A tap's block takes at most ~300 bytes.
  const size_t code_size = code_buffer_bytes(key, 1, 320);
  return emit_kernel(
      key, kernel, code_size, [&] { return std::make_shared<Generator>(key, code_size); }, out, error);
}

}  // namespace convjit::jit::xbyak
