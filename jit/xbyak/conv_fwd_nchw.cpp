#include "conv_fwd_nchw.hpp"

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
using namespace Xbyak::util;

// Stride 2 gathers the even elements of two vectors of inputs. AVX2: shuffles, and a mask of lanes
// 0..6 for the last load, made by comparing 7 with these indices. AVX-512: one two-table
// permute with these indices, and an opmask for the last load.
alignas(64) const int32_t kEvenLanes[16] = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
constexpr uint32_t kAllButLastLane = 0x7FFF;  // the last stride-2 load, 16 lanes

constexpr int kMaxVectors = 8;  // plan_nchw's widest block

#define PROBLEM(field) qword[reg_problem + offsetof(convjit_conv_problem, field)]
#define TILE(field) qword[reg_tile + offsetof(convjit_conv_tile, field)]

// Emits: for each block of oc_block output channels, for each run of lanes*vectors pixels of the row,
//   acc[oc][px] = sum over ic, (kd, kh, kw) in OIHW order of w[oc][ic][kd][kh][kw] * x[...]
// as one FMA chain per output, then + bias, then relu: the generic tier's numbers exactly.
class Generator : public CodeGenerator {
 public:
  Generator(const SpecKey& key, const NchwPlan& plan)
      : CodeGenerator(plan.code_bytes, DontSetProtectRWE),
        key_(key),
        plan_(plan),
        lanes_(plan.isa.lanes),
        vector_bytes_(plan.isa.vector_bytes),
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
    kGridReal,
    kGridOutputs,
    kLocals
  };
  Address local(Local l) { return qword[rsp + kLocalBytes * int(l)]; }

  // Vectors: accumulators, then the input vectors, then the weight broadcast and (stride 2 only)
  // the two halves of a stride-2 load and its helper: the last load's lane mask (AVX2) or the
  // permute's indices (AVX-512, whose last load is masked by k_last_load).
  Xmm acc(int oc, int v) const { return vector(plan_.isa, oc * plan_.vectors + v); }
  Xmm input(int v) const { return vector(plan_.isa, plan_.oc_block * plan_.vectors + v); }
  enum class Fixed { Weight, StrideLow, StrideHigh, StrideHelper };
  Xmm fixed(Fixed role) const { return vector(plan_.isa, plan_.oc_block * plan_.vectors + plan_.vectors + int(role)); }
  Xmm reg_weight() const { return fixed(Fixed::Weight); }
  Xmm reg_stride_low() const { return fixed(Fixed::StrideLow); }
  Xmm reg_stride_high() const { return fixed(Fixed::StrideHigh); }
  Xmm reg_stride_helper() const { return fixed(Fixed::StrideHelper); }
  const Opmask k_last_load = k1;
  const Opmask k_real = k2, k_compacted = k3;  // a grid vector's real lanes, and as many lanes from 0

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
          std::pair{offsetof(convjit_conv_tile, pixel_count), kPixels},
          std::pair{offsetof(convjit_conv_tile, grid_real), kGridReal},
          std::pair{offsetof(convjit_conv_tile, grid_outputs), kGridOutputs}}) {
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

  // The segment's n = ceil(pixels / lanes) vectors go in blocks of the plan's sizes, the largest
  // that fits first, except that n = v + 1 goes as (v - 1) + 2 where the plan has v - 1 (with
  // sizes 3 and 2, n = 4 is 2 + 2 and 5 is 3 + 2: no block is mostly overlap). The block that
  // reaches the segment's end is moved back to end at its last pixel, recomputing (bitwise the
  // same) a few outputs; a block is only moved back within a segment at least its size. Segments
  // have at least min_row_pixels, the smallest block.
  void emit_pixel_loop() {
    Label next_block, done;
    Label block_of[kMaxVectors + 1];  // entry of the code for a block of v vectors
    mov(reg_pixels_left, local(kPixels));
    mov(reg_x_block, local(kXBase));
    mov(reg_y, local(kYBlock));
    if (key_.stride[2] == 2 && plan_.isa.opmask) {
      mov(rax, reinterpret_cast<size_t>(kEvenLanes));
      vmovups(reg_stride_helper(), ptr[rax]);
      mov(edx, kAllButLastLane);
      kmovw(k_last_load, edx);
    } else if (key_.stride[2] == 2) {  // load mask of the last stride-2 load: lanes 0..6
      mov(rax, reinterpret_cast<size_t>(kLaneIndex));
      mov(edx, 7);
      vmovd(Xmm(reg_stride_helper().getIdx()), edx);
      vpbroadcastd(reg_stride_helper(), Xmm(reg_stride_helper().getIdx()));
      vpcmpgtd(reg_stride_helper(), reg_stride_helper(), ptr[rax]);
    }
    L(next_block);  // pixels left > 0: pick the block size from the vectors left, n
    const std::vector<int>& sizes = plan_.block_vectors;
    const auto has_size = [&](int v) { return std::find(sizes.begin(), sizes.end(), v) != sizes.end(); };
    lea(rax, ptr[reg_pixels_left + lanes_ - 1]);
    shr(rax, plan_.isa.lanes_shift);
    for (size_t i = 0; i + 1 < sizes.size(); ++i) {
      const int vectors = sizes[i];
      Label smaller;
      cmp(rax, vectors);
      jl(smaller, T_NEAR);
      if (has_size(vectors - 1)) {  // n = vectors + 1 goes as (vectors - 1) + 2, not vectors + 1 + 1
        cmp(rax, vectors + 1);
        je(smaller, T_NEAR);
      }
      cmp(local(kPixels), lanes_ * vectors);  // a block moved back stays within the segment
      jl(smaller, T_NEAR);
      jmp(block_of[vectors], T_NEAR);
      L(smaller);
    }
    if (sizes.size() > 1) jmp(block_of[sizes.back()], T_NEAR);  // the smallest takes what is left
    for (int vectors : sizes) {
      L(block_of[vectors]);
      Label whole;
      cmp(reg_pixels_left, lanes_ * vectors);
      jge(whole, T_NEAR);
      mov(rax, reg_pixels_left);  // the last block, short: back by lanes*vectors - left pixels
      sub(rax, lanes_ * vectors);
      lea(reg_y, ptr[reg_y + rax * 4]);
      imul(rax, rax, int(kFloatBytes * key_.stride[2]));
      add(reg_x_block, rax);
      mov(reg_pixels_left, lanes_ * vectors);
      L(whole);
      emit_block(vectors);
      add(reg_x_block, int(vector_bytes_ * vectors * key_.stride[2]));
      add(reg_y, vector_bytes_ * vectors);
      sub(reg_pixels_left, lanes_ * vectors);
      jg(next_block, T_NEAR);
      jmp(done, T_NEAR);
    }
    L(done);
  }

  // Input vector v (of a block of `vectors`) of tap kw (flipped as the mode says) for `lanes`
  // consecutive pixels into input(v).
  void emit_load_input(int v, int vectors, int64_t kw_input) {
    const int64_t offset = kFloatBytes * (kw_input * key_.dilation[2] + int64_t(lanes_) * v * key_.stride[2]);
    const Xmm dst = input(v);
    if (key_.stride[2] == 1) {
      vmovups(dst, ptr[reg_row + offset]);
      return;
    }
    // Stride 2: the even elements of 2*lanes consecutive inputs. The last element of the block's
    // last load is an odd input past the segment's last tap, which may lie past the row: masked off.
    const bool last = v == vectors - 1;
    const Address high = ptr[reg_row + offset + vector_bytes_];
    if (plan_.isa.opmask) {
      vmovups(dst, ptr[reg_row + offset]);
      if (last) {
        vmovups(reg_stride_high() | k_last_load | T_z, high);
        vpermt2ps(dst, reg_stride_helper(), reg_stride_high());
      } else {
        vpermt2ps(dst, reg_stride_helper(), high);
      }
      return;
    }
    vmovups(reg_stride_low(), ptr[reg_row + offset]);
    if (last)
      vmaskmovps(reg_stride_high(), reg_stride_helper(), high);
    else
      vmovups(reg_stride_high(), high);
    vshufps(dst, reg_stride_low(), reg_stride_high(), 0x88);  // a0 a2 b0 b2 | a4 a6 b4 b6
    vpermpd(Ymm(dst.getIdx()), Ymm(dst.getIdx()), 0xD8);      // a0 a2 a4 a6 b0 b2 b4 b6
  }

  // One block: `vectors` vectors of pixels x oc_block channels, reduced over every input channel and tap.
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
    if (!plan_.rolled_rows) {  // rolled rows advance the weight rows as they go
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
      if (!plan_.rolled_rows) {
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
    if (plan_.compacts_grid) {
      Label on_grid;
      cmp(local(kGridReal), 0);
      je(on_grid, T_NEAR);
      emit_compacting_store(vectors);
      jmp(done, T_NEAR);
      L(on_grid);
    }
    mov(rax, reg_y);
    mov(rdx, local(kOcLeft));
    for (int oc = 0; oc < plan_.oc_block; ++oc) {
      if (oc > 0) {
        cmp(rdx, oc);
        jle(done, T_NEAR);
        add(rax, local(kYChannelBytes));
      }
      for (int v = 0; v < vectors; ++v) vmovups(ptr[rax + vector_bytes_ * v], acc(oc, v));
    }
    L(done);
  }

  // A flattened segment's outputs straight into y (conv_tile_abi.h's grid map): reg_y runs over the
  // grid from the block's y (kYBlock), never read or written. Each vector's real lanes are
  // compressed to its low lanes and stored at the y of its first real output.
  void emit_compacting_store(int vectors) {
    const Xmm compacted = reg_weight();
    mov(rbx, reg_y);  // the block's first grid pixel
    sub(rbx, local(kYBlock));
    shr(rbx, kFloatBytesShift);
    for (int v = 0; v < vectors; ++v) {
      Label next_vector;
      mov(rax, local(kGridReal));
      vmovdqu8(Xmm(compacted.getIdx()), ptr[rax + rbx + lanes_ * v]);
      vpmovb2m(k_real, Xmm(compacted.getIdx()));
      kmovw(eax, k_real);
      popcnt(ecx, eax);
      mov(eax, 1);
      shl(eax, cl);
      dec(eax);
      kmovw(k_compacted, eax);
      mov(rax, local(kGridOutputs));
      movsxd(rax, dword[rax + rbx * kFloatBytes + kFloatBytes * lanes_ * v]);
      shl(rax, kFloatBytesShift);
      add(rax, local(kYBlock));
      for (int oc = 0; oc < plan_.oc_block; ++oc) {
        if (oc > 0) {
          cmp(local(kOcLeft), oc);
          jle(next_vector, T_NEAR);
          add(rax, local(kYChannelBytes));
        }
        vcompressps(compacted | k_real | T_z, acc(oc, v));
        vmovups(ptr[rax] | k_compacted, compacted);
      }
      L(next_vector);
    }
  }

  void emit_epilogue() {
    emit_leave(*this, kLocalBytes * kLocals);
  }

  const SpecKey key_;
  const NchwPlan plan_;
  const int lanes_, vector_bytes_;
  const int64_t taps_;
};

#undef PROBLEM
#undef TILE

}  // namespace

int64_t nchw_min_row_pixels(Isa isa) {
  return 2 * traits_of(isa).lanes;  // every plan's smallest block is 2 vectors
}

NchwPlan plan_nchw(const SpecKey& key) {
  NchwPlan plan;
  plan.isa = traits_of(key.isa);
  if (key.layout != CONVJIT_NCHW) plan.unsupported = "not NCHW";
  else if (key.stride[2] != 1 && key.stride[2] != 2) plan.unsupported = "NCHW kernels support stride 1 or 2 along W";
  else plan.unsupported = common_unsupported_reason(key);
  if (!plan.unsupported.empty()) return plan;
  // AVX2: at most 12 accumulators + inputs, leaving the weight broadcast and at stride 2 the load
  // halves and their helper within the 16 vectors. AVX-512's 32 take 4 channels x up to 4 vectors
  // at either stride: rows of 56 pixels go as 4 vectors, not 2 + 2.
  const bool avx512 = plan.isa.isa == Isa::Avx512;
  switch (key.oc_class) {
    case 1: plan.oc_block = 1, plan.block_vectors = {6, 2}; break;
    case 2: plan.oc_block = 2, plan.block_vectors = {4, 2}; break;
    case 3: plan.oc_block = 3, plan.block_vectors = {3, 2}; break;
    default:  // 12 FMAs per 7 loads, or 8 per 6
      plan.oc_block = 4;
      if (avx512)
        plan.block_vectors = {4, 3, 2};
      else
        plan.block_vectors = key.stride[2] == 1 ? std::vector<int>{3, 2} : std::vector<int>{2};
  }
  plan.vectors = plan.block_vectors.front();
  // AVX-512 emits three block sizes: its rows loop beyond 3 unrolled ones (3D), which keeps a
  // compile within 50 us (bench/RESULTS.md).
  plan.rolled_rows = key.kernel[1] >= kRolledKernelRows || (avx512 && key.kernel[0] * key.kernel[1] > 3);
  plan.min_row_pixels = int64_t(plan.block_vectors.back()) * plan.isa.lanes;  // see emit_pixel_loop
  assert(plan.min_row_pixels == nchw_min_row_pixels(key.isa));
  plan.compacts_grid = avx512 && key.stride[2] == 1;
  plan.vector_registers_used = plan.oc_block * plan.vectors + plan.vectors + (key.stride[2] == 1 ? 1 : 4);
  // A tap's block of one vector takes at most ~100 bytes with VEX, ~130 with EVEX.
  int emitted_vectors = 0;  // over the block sizes' copies of the taps
  for (int v : plan.block_vectors) emitted_vectors += v;
  plan.code_bytes = code_buffer_bytes(key, emitted_vectors, plan.isa.opmask ? 160 : 128);
  // A compacting store per vector of each block: ~60 bytes of grid map, ~40 per channel.
  if (plan.compacts_grid) plan.code_bytes += size_t(emitted_vectors) * (64 + 48 * size_t(plan.oc_block));
  return plan;
}

bool generate_conv_fwd_nchw(const SpecKey& key, CompiledKernel* out, std::string* error) {
  const NchwPlan plan = plan_nchw(key);
  convjit_conv_kernel kernel{};
  kernel.row_kernel = 1;
  kernel.min_row_pixels = plan.min_row_pixels;
  kernel.row_lanes = plan.isa.lanes;
  kernel.oc_granule = plan.oc_block;
  kernel.compacts_grid = plan.compacts_grid;
  return emit_kernel(
      key, plan, kernel, [&] { return std::make_shared<Generator>(key, plan); }, out, error);
}

}  // namespace convjit::jit::xbyak
