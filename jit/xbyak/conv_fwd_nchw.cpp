#include "conv_fwd_nchw.hpp"

#include <xbyak/xbyak.h>

#include <algorithm>
#include <cstddef>
#include <memory>

#include "emit.hpp"

namespace convjit::jit::xbyak {
namespace {

using namespace Xbyak;
using namespace Xbyak::util;

alignas(kVectorBytes) const int32_t kLaneIndex[kVectorFloats] = {0, 1, 2, 3, 4, 5, 6, 7};

constexpr int kMaxVectors = 6;  // plan_nchw's widest block

#define PROBLEM(field) qword[reg_problem + offsetof(convjit_conv_problem, field)]
#define TILE(field) qword[reg_tile + offsetof(convjit_conv_tile, field)]

// Emits: for each block of oc_block output channels, for each run of 8*vectors pixels of the row,
//   acc[oc][px] = sum over ic, (kd, kh, kw) in OIHW order of w[oc][ic][kd][kh][kw] * x[...]
// as one FMA chain per output, then + bias, then relu: the generic tier's numbers exactly.
class Generator : public CodeGenerator {
 public:
  Generator(const SpecKey& key, size_t code_size)
      : CodeGenerator(code_size, DontSetProtectRWE),
        key_(key),
        plan_(plan_nchw(key)),
        taps_(key.kernel[0] * key.kernel[1] * key.kernel[2]) {
    emit_prologue();
    emit_oc_loop();
    emit_epilogue();
  }

 private:
  // Registers. Arguments first (System V), reused once their fields are read.
  const Reg64 reg_problem = rdi, reg_tile = rsi;
  const Reg64 reg_x_channel = rdi;             // x of the current input channel, at the block's first pixel
  const Reg64 reg_x_block = rsi;               // x at the current pixel block, input channel 0
  const Reg64 reg_w[4] = {r8, r9, r10, r11};   // weight rows of the block's channels
  const Reg64 reg_row = rbx, reg_plane = rdx;  // input row / plane of the current tap
  const Reg64 reg_ic = rcx, reg_pixels_left = rbp, reg_y = r12;
  const Reg64 reg_plane_step = r13, reg_row_step = r14, reg_channel_step = r15;  // view steps, bytes

  // Locals on the stack.
  enum Local {
    kXBase,
    kYBlock,
    kBiasBlock,
    kOcLeft,
    kPixels,
    kWeightBytes,
    kYChannelBytes,
    kIcCount,
    kRowsLeft,
    kLocals
  };
  Address local(Local l) { return qword[rsp + kLocalBytes * int(l)]; }

  // ymm: accumulators, then the input vectors, then the weight broadcast and (stride 2 only) the
  // shuffle temporaries and the last load's mask.
  Ymm acc(int oc, int v) const { return Ymm(oc * plan_.vectors + v); }
  Ymm input(int v) const { return Ymm(plan_.oc_block * plan_.vectors + v); }
  enum class Fixed { Weight, TmpA, TmpB, MaskHi };
  Ymm fixed(Fixed role) const { return Ymm(plan_.oc_block * plan_.vectors + plan_.vectors + int(role)); }
  Ymm reg_weight() const { return fixed(Fixed::Weight); }
  Ymm reg_tmp_a() const { return fixed(Fixed::TmpA); }
  Ymm reg_tmp_b() const { return fixed(Fixed::TmpB); }
  Ymm reg_mask_hi() const { return fixed(Fixed::MaskHi); }

  void emit_prologue() {
    emit_enter(*this, kLocalBytes * kLocals);
    // The driver's input view: x at tap (0, 0, 0) of the segment's first pixel, all taps real.
    mov(rax, TILE(x));
    mov(local(kXBase), rax);
    mov(reg_plane_step, TILE(view_tap_plane));
    shl(reg_plane_step, kFloatBytesShift);
    mov(reg_row_step, TILE(view_tap_row));
    shl(reg_row_step, kFloatBytesShift);
    mov(reg_channel_step, TILE(view_channel));
    shl(reg_channel_step, kFloatBytesShift);
    mov(rax, PROBLEM(reduction));
    shl(rax, kFloatBytesShift);
    mov(local(kWeightBytes), rax);
    mov(rax, PROBLEM(y.channel));
    shl(rax, kFloatBytesShift);
    mov(local(kYChannelBytes), rax);
    if (key_.ic_per_group) {
      mov(local(kIcCount), int(key_.ic_per_group));
    } else {
      mov(rax, PROBLEM(ic_per_group));
      mov(local(kIcCount), rax);
    }
    for (auto [from, to] :
         {std::pair{offsetof(convjit_conv_tile, y), kYBlock}, std::pair{offsetof(convjit_conv_tile, bias), kBiasBlock},
          std::pair{offsetof(convjit_conv_tile, oc_count), kOcLeft},
          std::pair{offsetof(convjit_conv_tile, pixel_count), kPixels}}) {
      mov(rax, qword[reg_tile + from]);
      mov(local(to), rax);
    }
    mov(reg_w[0], TILE(w));
  }

  // Channel blocks of oc_block. A block with fewer real channels points its missing weight rows at
  // the last real one and skips their stores, so no code path depends on the channel count.
  void emit_oc_loop() {
    Label oc_loop;
    L(oc_loop);
    mov(rax, local(kWeightBytes));
    mov(rdx, local(kOcLeft));
    for (int i = 1; i < plan_.oc_block; ++i) {
      lea(reg_w[i], ptr[reg_w[i - 1] + rax]);
      cmp(rdx, i);
      cmovle(reg_w[i], reg_w[i - 1]);
    }
    emit_pixel_loop();
    mov(rax, local(kWeightBytes));
    imul(rax, rax, plan_.oc_block);
    add(reg_w[0], rax);
    mov(rax, local(kYChannelBytes));
    imul(rax, rax, plan_.oc_block);
    add(local(kYBlock), rax);
    Label no_bias;
    cmp(local(kBiasBlock), 0);
    je(no_bias);
    add(local(kBiasBlock), kFloatBytes * plan_.oc_block);
    L(no_bias);
    sub(local(kOcLeft), plan_.oc_block);
    jg(oc_loop, T_NEAR);
  }

  // The segment's n = ceil(pixels / 8) vectors go in blocks of the plan's size and, where n does
  // not divide, of 2 (3-vector plans split n = 4 as 2 + 2 and 5 as 3 + 2: no block is mostly
  // overlap; wider plans take what is left after their whole blocks 2 vectors at a time). The
  // block that reaches the segment's end is moved back to end at its last pixel, recomputing
  // (bitwise the same) a few outputs; a block is only moved back within a segment at least its
  // size. Segments have at least min_row_pixels = 16, so the code holds two block sizes.
  void emit_pixel_loop() {
    Label next_block, done;
    Label block_of[kMaxVectors + 1];  // entry of the code for a block of v vectors
    mov(reg_pixels_left, local(kPixels));
    mov(reg_x_block, local(kXBase));
    mov(reg_y, local(kYBlock));
    if (key_.stride[2] == 2) {  // load mask of the last stride-2 load: lanes 0..6
      mov(rax, reinterpret_cast<size_t>(kLaneIndex));
      mov(edx, 7);
      vmovd(Xmm(reg_mask_hi().getIdx()), edx);
      vpbroadcastd(reg_mask_hi(), Xmm(reg_mask_hi().getIdx()));
      vpcmpgtd(reg_mask_hi(), reg_mask_hi(), ptr[rax]);
    }
    L(next_block);  // pixels left > 0: pick the block size from the vectors left
    if (plan_.vectors == 3) {
      lea(rax, ptr[reg_pixels_left + 7]);
      shr(rax, 3);
      cmp(rax, 2);
      jle(block_of[2], T_NEAR);
      cmp(rax, 4);
      je(block_of[2], T_NEAR);
      // n = 3 and a partial last vector: a 3-vector block moved back needs a 24-pixel segment.
      cmp(local(kPixels), 3 * kVectorFloats);
      jl(block_of[2], T_NEAR);
    } else if (plan_.vectors > 3) {  // whole blocks, then the rest 2 vectors at a time
      cmp(reg_pixels_left, kVectorFloats * plan_.vectors);
      jl(block_of[2], T_NEAR);
    }
    for (int vectors = plan_.vectors; vectors >= 2; --vectors) {
      if (vectors != plan_.vectors && vectors != 2) continue;
      L(block_of[vectors]);
      if (vectors <= 3) {  // wider blocks are only ever taken whole
        Label whole;
        cmp(reg_pixels_left, kVectorFloats * vectors);
        jge(whole, T_NEAR);
        mov(rax, reg_pixels_left);  // the last block, short: back by 8*vectors - left pixels
        sub(rax, kVectorFloats * vectors);
        lea(reg_y, ptr[reg_y + rax * 4]);
        imul(rax, rax, int(kFloatBytes * key_.stride[2]));
        add(reg_x_block, rax);
        mov(reg_pixels_left, kVectorFloats * vectors);
        L(whole);
      }
      emit_block(vectors);
      add(reg_x_block, int(kVectorBytes * vectors * key_.stride[2]));
      add(reg_y, kVectorBytes * vectors);
      sub(reg_pixels_left, kVectorFloats * vectors);
      jg(next_block, T_NEAR);
      jmp(done, T_NEAR);
    }
    L(done);
  }

  // Input vector v (of a block of `vectors`) of tap kw (flipped as the mode says) for 8 consecutive
  // pixels into input(v).
  void emit_load_input(int v, int vectors, int64_t kw_input) {
    const int64_t offset = kFloatBytes * (kw_input * key_.dilation[2] + kVectorFloats * v * key_.stride[2]);
    const Ymm dst = input(v);
    if (key_.stride[2] == 1) {
      vmovups(dst, ptr[reg_row + offset]);
      return;
    }
    // Stride 2: the even elements of 16 consecutive inputs. The last element of the block's last
    // load is an odd input past the segment's last tap, which may lie past the row: masked off.
    vmovups(reg_tmp_a(), ptr[reg_row + offset]);
    if (v == vectors - 1)
      vmaskmovps(reg_tmp_b(), reg_mask_hi(), ptr[reg_row + offset + kVectorBytes]);
    else
      vmovups(reg_tmp_b(), ptr[reg_row + offset + kVectorBytes]);
    vshufps(dst, reg_tmp_a(), reg_tmp_b(), 0x88);  // a0 a2 b0 b2 | a4 a6 b4 b6
    vpermpd(dst, dst, 0xD8);                       // a0 a2 a4 a6 b0 b2 b4 b6
  }

  // One block: `vectors` ymm of pixels x oc_block channels, reduced over every input channel and tap.
  void emit_block(int vectors) {
    for (int oc = 0; oc < plan_.oc_block; ++oc) {
      for (int v = 0; v < vectors; ++v) vxorps(acc(oc, v), acc(oc, v), acc(oc, v));
    }
    mov(reg_x_channel, reg_x_block);
    mov(reg_ic, local(kIcCount));
    Label ic_loop;
    L(ic_loop);
    emit_taps(vectors);
    add(reg_x_channel, reg_channel_step);
    if (!rolled_rows()) {  // rolled rows advance the weight rows as they go
      for (int oc = 0; oc < plan_.oc_block; ++oc) add(reg_w[oc], int(kFloatBytes * taps_));
    }
    dec(reg_ic);
    jnz(ic_loop, T_NEAR);
    mov(rax, local(kWeightBytes));
    for (int oc = 0; oc < plan_.oc_block; ++oc) sub(reg_w[oc], rax);
    emit_store(vectors);
  }

  // The taps of one input channel, in OIHW weight order; rows are walked with running pointers.
  void emit_taps(int vectors) {
    const int64_t kd_n = key_.kernel[0], kh_n = key_.kernel[1], kw_n = key_.kernel[2];
    auto input_tap = [&](int64_t t, int64_t n) { return key_.flip ? n - 1 - t : t; };
    mov(reg_plane, reg_x_channel);
    if (key_.flip && kd_n > 1) emit_add_multiple(reg_plane, reg_plane_step, kd_n - 1);
    for (int64_t kd = 0; kd < kd_n; ++kd) {
      if (kd > 0) key_.flip ? sub(reg_plane, reg_plane_step) : add(reg_plane, reg_plane_step);
      mov(reg_row, reg_plane);
      if (key_.flip && kh_n > 1) emit_add_multiple(reg_row, reg_row_step, kh_n - 1);
      auto next_row = [&] { key_.flip ? sub(reg_row, reg_row_step) : add(reg_row, reg_row_step); };
      // One kernel row's taps; `first_tap` is the weight offset of its tap 0 from reg_w.
      auto emit_row = [&](int64_t first_tap) {
        for (int64_t kw = 0; kw < kw_n; ++kw) {
          for (int v = 0; v < vectors; ++v) emit_load_input(v, vectors, input_tap(kw, kw_n));
          for (int oc = 0; oc < plan_.oc_block; ++oc) {
            vbroadcastss(reg_weight(), ptr[reg_w[oc] + kFloatBytes * (first_tap + kw)]);
            for (int v = 0; v < vectors; ++v) vfmadd231ps(acc(oc, v), reg_weight(), input(v));
          }
        }
      };
      if (!rolled_rows()) {
        for (int64_t kh = 0; kh < kh_n; ++kh) {
          if (kh > 0) next_row();
          emit_row((kd * kh_n + kh) * kw_n);
        }
        continue;
      }
      // Tall kernels (kRolledKernelRows): the rows in a loop, the weight rows advancing with it. Its
      // count lives on the stack: no register is free.
      Label row_loop;
      mov(local(kRowsLeft), int(kh_n));
      L(row_loop);
      emit_row(0);
      for (int oc = 0; oc < plan_.oc_block; ++oc) add(reg_w[oc], int(kFloatBytes * kw_n));
      next_row();
      dec(local(kRowsLeft));
      jnz(row_loop, T_NEAR);
    }
  }

  bool rolled_rows() const { return key_.kernel[1] >= kRolledKernelRows; }

  void emit_add_multiple(const Reg64& target, const Reg64& step, int64_t times) {
    mov(rax, step);
    imul(rax, rax, int(times));
    add(target, rax);
  }

  // + bias, relu, store; channels past the block's real count are not stored.
  void emit_store(int vectors) {
    Label no_bias, biased, done;
    mov(rax, local(kBiasBlock));
    test(rax, rax);
    jz(no_bias, T_NEAR);
    // A partial block's missing channels take the last real channel's bias (their stores are
    // skipped): nothing past the bias array is read.
    mov(rdx, local(kOcLeft));
    dec(rdx);
    for (int oc = 0; oc < plan_.oc_block; ++oc) {
      if (oc == 0) {
        vbroadcastss(reg_weight(), ptr[rax]);
      } else {
        mov(rcx, oc);
        cmp(rcx, rdx);
        cmovg(rcx, rdx);
        vbroadcastss(reg_weight(), ptr[rax + rcx * 4]);
      }
      for (int v = 0; v < vectors; ++v) vaddps(acc(oc, v), acc(oc, v), reg_weight());
    }
    L(no_bias);
    if (key_.relu) {
      vxorps(reg_weight(), reg_weight(), reg_weight());
      for (int oc = 0; oc < plan_.oc_block; ++oc) {
        for (int v = 0; v < vectors; ++v) vmaxps(acc(oc, v), reg_weight(), acc(oc, v));  // keeps NaN
      }
    }
    mov(rax, reg_y);
    mov(rdx, local(kOcLeft));
    for (int oc = 0; oc < plan_.oc_block; ++oc) {
      if (oc > 0) {
        cmp(rdx, oc);
        jle(done, T_NEAR);
        add(rax, local(kYChannelBytes));
      }
      for (int v = 0; v < vectors; ++v) vmovups(ptr[rax + kVectorBytes * v], acc(oc, v));
    }
    L(done);
  }

  void emit_epilogue() {
    emit_leave(*this, kLocalBytes * kLocals);
  }

  const SpecKey key_;
  const NchwPlan plan_;
  const int64_t taps_;
};

#undef PROBLEM
#undef TILE

}  // namespace

NchwPlan plan_nchw(const SpecKey& key) {
  // Accumulators + inputs + the weight broadcast fill at most the 16 ymm; stride 2 needs three more
  // (shuffle temporaries, mask), so its accumulators + inputs stay within 12.
  switch (key.oc_class) {
    case 1: return {1, 6};
    case 2: return {2, 4};
    case 3: return {3, 3};
    default: return key.stride[2] == 1 ? NchwPlan{4, 3} : NchwPlan{4, 2};  // 12 FMAs per 7 loads, or 8 per 6
  }
}

int64_t nchw_min_row_pixels(const NchwPlan&) {
  return 16;
}  // two vectors: see emit_pixel_loop

std::string nchw_unsupported_reason(const SpecKey& key) {
  if (key.layout != CONVJIT_NCHW) return "not NCHW";
  if (key.stride[2] != 1 && key.stride[2] != 2) return "NCHW kernels support stride 1 or 2 along W";
  return common_unsupported_reason(key);
}

bool generate_conv_fwd_nchw(const SpecKey& key, CompiledKernel* out, std::string* error) {
  if (std::string reason = nchw_unsupported_reason(key); !reason.empty()) {
    *error = reason;
    return false;
  }
  const NchwPlan plan = plan_nchw(key);
  convjit_conv_kernel kernel{};
  kernel.row_kernel = 1;
  kernel.min_row_pixels = nchw_min_row_pixels(plan);
  // A tap's block of one vector takes at most ~100 bytes.
  const size_t code_size = code_buffer_bytes(key, plan.vectors, 128);
  return emit_kernel(
      key, kernel, code_size, [&] { return std::make_shared<Generator>(key, code_size); }, out, error);
}

}  // namespace convjit::jit::xbyak
