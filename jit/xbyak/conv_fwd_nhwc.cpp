#include "jit/xbyak/conv_fwd_nhwc.hpp"

#include <xbyak/xbyak.h>

#include <algorithm>
#include <cstddef>
#include <memory>

#include "jit/xbyak/emit.hpp"

namespace convjit::jit::xbyak {
namespace {

using namespace Xbyak;

alignas(32) const int32_t kLaneIndex[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

// packed[k][j] = w[j][k] for the tile's oc_count <= 16 channels, zero for the missing ones.
void pack_weights(const convjit_conv_problem* p, const float* w, int64_t oc_count, float* packed) {
  const int64_t k_count = p->reduction;
  for (int64_t k = 0; k < k_count; ++k) {
    float* row = packed + k * kNhwcOcBlock;
    for (int64_t j = 0; j < oc_count; ++j) row[j] = w[j * k_count + k];
    std::fill(row + oc_count, row + kNhwcOcBlock, 0.0f);
  }
}

#define PROBLEM(field) qword[reg_problem + offsetof(convjit_conv_problem, field)]
#define TILE(field) qword[reg_tile + offsetof(convjit_conv_tile, field)]

// Emits: for each block of 6 pixels of the row segment,
//   acc[px][oc] = sum over (kd, kh, kw, ic) in OHWI order of x[px + tap][ic] * w[oc][tap][ic]
// as one FMA chain per output, then + bias, then relu: the generic tier's numbers exactly.
class Generator : public CodeGenerator {
 public:
  Generator(const SpecKey& key, size_t code_size) : CodeGenerator(code_size, DontSetProtectRWE), key_(key) {
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
    kPartialBlock,  // nonzero: fewer than 16 channels, stores are masked
    kMaskLo,
    kMaskHi = kMaskLo + 4,
    kLocals = kMaskHi + 4
  };
  Address local(Local l) { return qword[rsp + 8 * int(l)]; }
  Address local_ymm(Local l) { return yword[rsp + 8 * int(l)]; }

  const Ymm acc(int px, int half) const { return Ymm(px * 2 + half); }
  const Ymm reg_w_lo = ymm12, reg_w_hi = ymm13, reg_input = ymm14;

  void emit_prologue() {
    for (const Reg64& r : {rbx, rbp, r12, r13, r14, r15}) push(r);
    sub(rsp, 8 * kLocals + 8);  // ymm locals are accessed unaligned
    // The driver's input view: x at tap (0, 0, 0) of the segment's first pixel, all taps real.
    mov(rax, TILE(x));
    mov(local(kXBase), rax);
    mov(reg_plane_step, TILE(view_tap_plane));
    shl(reg_plane_step, 2);
    mov(reg_row_step, TILE(view_tap_row));
    shl(reg_row_step, 2);
    mov(reg_col_step, TILE(view_position));
    imul(reg_col_step, reg_col_step, int(4 * key_.dilation[2]));
    mov(reg_pixel_step, TILE(view_position));
    imul(reg_pixel_step, reg_pixel_step, int(4 * key_.stride[2]));
    lea(reg_pixel_step3, ptr[reg_pixel_step + reg_pixel_step * 2]);
    mov(rax, PROBLEM(ic_per_group));
    mov(local(kIcCount), rax);
    mov(rax, PROBLEM(y.spatial[2]));
    shl(rax, 2);
    mov(local(kYPixelBytes), rax);
    mov(rax, TILE(bias));
    mov(local(kBias), rax);
    mov(rax, TILE(packed_weights));
    mov(local(kPackedWeights), rax);
    mov(rax, TILE(pixel_count));
    mov(local(kPixels), rax);
    mov(reg_y, TILE(y));
    // Channel masks for the stores (and the bias load): lanes < oc_count, and < oc_count - 8.
    mov(rax, reinterpret_cast<size_t>(kLaneIndex));
    vmovq(Xmm(reg_w_lo.getIdx()), TILE(oc_count));
    vpbroadcastd(reg_w_lo, Xmm(reg_w_lo.getIdx()));
    vpcmpgtd(reg_w_hi, reg_w_lo, ptr[rax + 32]);
    vpcmpgtd(reg_w_lo, reg_w_lo, ptr[rax]);
    vmovups(local_ymm(kMaskLo), reg_w_lo);
    vmovups(local_ymm(kMaskHi), reg_w_hi);
    mov(rax, TILE(oc_count));
    xor_(edx, edx);
    cmp(rax, kNhwcOcBlock);
    setl(dl);
    mov(local(kPartialBlock), rdx);
  }

  // Blocks of 6 pixels; a segment that does not divide evenly ends with a block moved back to
  // end at its last pixel, recomputing (bitwise the same) a few outputs. The driver gives
  // segments of at least 6 pixels.
  void emit_pixel_loop() {
    Label loop, full, done;
    mov(reg_pixels_left, local(kPixels));
    mov(reg_x_block, local(kXBase));
    L(loop);
    emit_block(kNhwcPixelBlock);
    sub(reg_pixels_left, kNhwcPixelBlock);
    jz(done, T_NEAR);
    cmp(reg_pixels_left, kNhwcPixelBlock);
    jge(full, T_NEAR);
    mov(rax, reg_pixels_left);  // fewer than a block left: step by what is left
    imul(rax, reg_pixel_step);
    add(reg_x_block, rax);
    mov(rax, reg_pixels_left);
    imul(rax, local(kYPixelBytes));
    add(reg_y, rax);
    mov(reg_pixels_left, kNhwcPixelBlock);
    jmp(loop, T_NEAR);
    L(full);
    lea(rax, ptr[reg_pixel_step3 * 2]);
    add(reg_x_block, rax);
    mov(rax, local(kYPixelBytes));
    imul(rax, rax, kNhwcPixelBlock);
    add(reg_y, rax);
    jmp(loop, T_NEAR);
    L(done);
  }

  void emit_block(int pixels) {
    for (int px = 0; px < pixels; ++px) {
      vxorps(acc(px, 0), acc(px, 0), acc(px, 0));
      vxorps(acc(px, 1), acc(px, 1), acc(px, 1));
    }
    mov(reg_weights, local(kPackedWeights));
    emit_taps(pixels);
    emit_store(pixels);
  }

  // Taps in OHWI order (kd, kh, kw), each reducing over the input channels.
  void emit_taps(int pixels) {
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
          emit_ic_loop(pixels);
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

  void emit_ic_loop(int pixels) {
    mov(reg_in_lo, reg_tap);
    lea(reg_in_hi, ptr[reg_tap + reg_pixel_step3]);
    mov(reg_ic, local(kIcCount));
    Label loop;
    L(loop);
    vmovups(reg_w_lo, ptr[reg_weights]);
    vmovups(reg_w_hi, ptr[reg_weights + 32]);
    for (int px = 0; px < pixels; ++px) {
      const Reg64& base = px < 3 ? reg_in_lo : reg_in_hi;
      const int within = px % 3;
      if (within == 0)
        vbroadcastss(reg_input, ptr[base]);
      else
        vbroadcastss(reg_input, ptr[base + reg_pixel_step * within]);
      vfmadd231ps(acc(px, 0), reg_input, reg_w_lo);
      vfmadd231ps(acc(px, 1), reg_input, reg_w_hi);
    }
    add(reg_in_lo, 4);
    add(reg_in_hi, 4);
    add(reg_weights, 4 * kNhwcOcBlock);
    dec(reg_ic);
    jnz(loop, T_NEAR);
  }

  void emit_store(int pixels) {
    vmovups(reg_w_lo, local_ymm(kMaskLo));
    vmovups(reg_w_hi, local_ymm(kMaskHi));
    Label no_bias;
    mov(rax, local(kBias));
    test(rax, rax);
    jz(no_bias, T_NEAR);
    for (int half = 0; half < 2; ++half) {
      vmaskmovps(reg_input, half ? reg_w_hi : reg_w_lo, ptr[rax + 32 * half]);
      for (int px = 0; px < pixels; ++px) vaddps(acc(px, half), acc(px, half), reg_input);
    }
    L(no_bias);
    if (key_.relu) {
      vxorps(reg_input, reg_input, reg_input);
      for (int px = 0; px < pixels; ++px) {
        for (int half = 0; half < 2; ++half) vmaxps(acc(px, half), reg_input, acc(px, half));  // keeps NaN
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
      vmovups(ptr[rax], acc(px, 0));
      vmovups(ptr[rax + 32], acc(px, 1));
    }
    jmp(stored, T_NEAR);
    L(masked);
    for (int px = 0; px < pixels; ++px) {
      if (px > 0) add(rax, rdx);
      vmaskmovps(ptr[rax], reg_w_lo, acc(px, 0));
      vmaskmovps(ptr[rax + 32], reg_w_hi, acc(px, 1));
    }
    L(stored);
  }

  void emit_epilogue() {
    add(rsp, 8 * kLocals + 8);
    for (const Reg64& r : {r15, r14, r13, r12, rbp, rbx}) pop(r);
    vzeroupper();
    ret();
  }

  const SpecKey key_;
};

#undef PROBLEM
#undef TILE

}  // namespace

std::string nhwc_unsupported_reason(const SpecKey& key) {
  if (key.layout != CONVJIT_NHWC) return "not NHWC";
  return common_unsupported_reason(key);
}

bool generate_conv_fwd_nhwc(const SpecKey& key, CompiledKernel* out, std::string* error) {
  if (std::string reason = nhwc_unsupported_reason(key); !reason.empty()) {
    *error = reason;
    return false;
  }
  convjit_conv_kernel kernel{};
  kernel.prepare = pack_weights;
  kernel.oc_block = kNhwcOcBlock;
  kernel.row_kernel = 1;
  kernel.min_row_pixels = kNhwcPixelBlock;
  // One block of at most ~300 bytes per tap, plus the frame.
  const size_t code_size = 4096 + size_t(key.kernel[0] * key.kernel[1] * key.kernel[2]) * 320;
  return emit_kernel(
      key, kernel, [&] { return std::make_shared<Generator>(key, code_size); }, out, error);
}

}  // namespace convjit::jit::xbyak
