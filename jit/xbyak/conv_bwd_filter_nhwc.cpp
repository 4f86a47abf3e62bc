#include "conv_bwd_filter_nhwc.hpp"

#include <xbyak/xbyak.h>

#include <algorithm>
#include <cassert>
#include <climits>
#include <cstddef>
#include <memory>

#include "emit.hpp"
#include "filter_rows_abi.h"

namespace convjit::jit::xbyak {
namespace {

using namespace Xbyak;

// A block's output channels, each broadcast once per output and used by every vector of the
// block. AVX-512 blocks up to 4 vectors of input channels (64), AVX2 2 (16): their accumulators
// then take 24 and 12 of the 32 and 16 registers with room left for the inputs and a broadcast.
constexpr int kMaxOcBlock = 12;
int max_ic_vectors(const IsaTraits& isa) {
  return isa.opmask ? 4 : 2;
}
constexpr int64_t kMaxChannels = int64_t(1) << 16;  // per group
// Taps a block reaches from one input by register steps (x1, x2, x4 and a register of x3).
constexpr int kMaxTapsByStep = 5;
// A block's weights are 32-bit displacements from its first.
static_assert(kMaxTaps * kMaxChannels * kFloatBytes * kMaxOcBlock <= INT_MAX);

#define PROBLEM(field) qword[reg_problem + offsetof(convjit_filter_problem, field)]
#define ROWS(field) qword[reg_rows + offsetof(convjit_filter_rows, field)]
#define ROWS_AT(field, i) qword[reg_rows + offsetof(convjit_filter_rows, field) + (i) * sizeof(int64_t)]
#define COLUMN(field) qword[reg_column + offsetof(convjit_filter_column, field)]

// Emits, for the group's input channels in blocks of plan.ic_vectors vectors (then the tail block)
// and in each, the range's output channels in blocks of plan.oc_block (then the group's tail):
//   for each real D tap, for each real H tap, for each tap kw along W:
//     acc[i][v] = dw[oc i][tap][ic vector v]
//     for each row r, for each output o of column kw:
//       in[v] = x[r's input of tap (d, h, kw) at o][ic vector v]
//       for each output channel i: g = dy[r][o][i]; acc[i][v] = fma(g, in[v], acc[i][v])
//     dw[oc i][tap][ic vector v] = acc[i][v]
// Transposed (few input channels), for the range's output channels in blocks of plan.oc_vectors
// vectors (then the tail block), the same nest with the roles swapped:
//       g[v] = dy[r][o][oc vector v]; for each input channel i: acc[i][v] = fma(x[..][i], g[v], acc[i][v])
//     into the block's dw^T panel, panel[tap][ic i][oc vector v].
// Columns at once (transposed), per real D and H tap (depthwise: or, where the rows have every H
// tap and the plan holds them, all H taps at once) with every tap kw along W in registers:
//     acc[h][kw][i][v] = panel[tap (d, h, kw)][ic i][oc vector v]
//     for each row r:
//       for each kw, each output o of column kw before the interior:
//         g[v] = dy[r][o][v]; for each i: acc[h][kw][i][v] = fma(g[v], x[tap (h, kw) at o][i], acc[h][kw][i][v])
//       for each output o of the interior:
//         g[v] = dy[r][o][v]; for each h, kw, i: acc[h][kw][i][v] = fma(g[v], x[tap (h, kw) at o][i], ...)
//       for each kw, each output o of column kw after the interior: as before it
//     panel[tap (d, h, kw)][i][v] = acc[h][kw][i][v]
// where depthwise (the groups' channels in the lanes) has one row i, x loaded at dy's channels.
// tap (d, h, kw)'s weight is the flipped tap in convolution mode.
class Generator : public CodeGenerator {
 public:
  explicit Generator(const FilterPlan& plan)
      : CodeGenerator(plan.code_bytes, DontSetProtectRWE), plan_(plan), vector_bytes_(plan.isa.vector_bytes) {
    emit_prologue();
    emit_input_channel_blocks();
    emit_leave(*this, kLocalBytes * kLocals);
  }

 private:
  const Reg64 reg_problem = rdi, reg_rows = rsi;                       // the arguments, read by the prologue only
  const Reg64 reg_x_step = rdi, reg_dy_step = rsi;                     // after it: bytes between outputs along W
  const Reg64 reg_x = r8, reg_dy = r9, reg_outputs_left = r10;         // the current output
  const Reg64 reg_x_row = r11, reg_dy_row = r12, reg_rows_left = r13;  // the column's first output of a row
  const Reg64 reg_column = r14, reg_columns_left = r15;                // the current tap along W
  const Reg64 reg_x_tap = rbx;   // the block's input channels at W 0 of the current D and H tap's first row
  const Reg64 reg_dw_tap = rbp;  // the block's weights of the current tap
  const Reg64 reg_h_taps_left = rcx, reg_d_taps_left = rdx;
  const Reg64 reg_h_step = rcx, reg_h_step3 = rdx;  // depthwise, every H tap at once: bytes between H taps' inputs, x3
  const Reg64 reg_w_step = r15, reg_w_step3 = rax;  // columns at once, not depthwise: between W taps' inputs, x3

  enum Local {
    kXRowStep,
    kDyRowStep,
    kXTapStepD,
    kXTapStepH,
    kXTapStepW,  // bytes
    kRows,
    kTapsD,
    kTapsH,
    kColumns,
    kOutChannels,
    kXOrigin,
    kDyRange,
    kDwRange,  // the rows' first real tap row at W 0; the range's first output channel's
    kXIc,
    kDwIc,
    kIcBlocksLeft,  // the current input-channel block's
    kOcLeft,
    kXBlock,
    kDyBlock,
    kDwBlock,  // the current output-channel block's
    kXPlane,
    kDwPlane,  // the current D tap's
    kInteriorCount,
    kInteriorX,
    kInteriorDy,  // columns at once: the call's interior (offsets in bytes)
    kXInteriorEnd,
    kDyInteriorEnd,  // columns at once: where the current row's interior ended
    kLocals
  };
  Address local(Local l) { return qword[rsp + kLocalBytes * int(l)]; }

  int accumulators() const { return plan_.block_rows() * plan_.block_vectors(); }
  Xmm acc(int i, int v) const { return vector(plan_.isa, i * plan_.block_vectors() + v); }
  Xmm loaded(int v) const { return vector(plan_.isa, accumulators() + v); }
  Xmm broadcast() const { return vector(plan_.isa, accumulators() + plan_.block_vectors()); }
  Xmm lane_mask() const { return vector(plan_.isa, accumulators() + plan_.block_vectors() + 1); }
  // What one output loads in vectors (x's input channels, or transposed dy's output channels) and
  // what it broadcasts per row (dy's output channels, or x's input channels).
  Reg64 reg_loaded() const { return plan_.transposed ? reg_dy : reg_x; }
  Reg64 reg_broadcast() const { return plan_.transposed ? reg_x : reg_dy; }
  const Opmask k_lanes = k1;

  // Bytes between the accumulators of consecutive taps along D, H and W (in input order: negative
  // when flipped), of consecutive rows of a block, and of consecutive blocks of output channels:
  // dw's (OHWI), or transposed the dw^T panels' ([block][tap][ic][oc_block]).
  int64_t dw_step(int dim) const {
    int64_t step = plan_.in_channels * kFloatBytes * (plan_.transposed ? plan_.oc_block : 1);
    for (int d = dim + 1; d < 3; ++d) step *= plan_.taps[d];
    return plan_.flip ? -step : step;
  }
  int64_t dw_row_step() const {
    return plan_.transposed ? plan_.oc_block * kFloatBytes : plan_.reduction() * kFloatBytes;
  }
  int64_t dw_block_step() const { return plan_.oc_block * plan_.reduction() * kFloatBytes; }

  void emit_prologue() {
    emit_enter(*this, kLocalBytes * kLocals);
    auto bytes_of = [&](Local to, const Address& field) {
      mov(rax, field);
      shl(rax, kFloatBytesShift);
      mov(local(to), rax);
    };
    bytes_of(kXRowStep, PROBLEM(x_row_step));
    bytes_of(kDyRowStep, PROBLEM(dy_row_step));
    bytes_of(kXTapStepD, PROBLEM(x_tap_step[0]));
    bytes_of(kXTapStepH, PROBLEM(x_tap_step[1]));
    bytes_of(kXTapStepW, PROBLEM(x_tap_step[2]));
    mov(rax, ROWS(rows));
    mov(local(kRows), rax);
    for (int d = 0; d < 2; ++d) {
      mov(rax, ROWS_AT(tap_end, d));
      sub(rax, ROWS_AT(tap_begin, d));
      mov(local(d == 0 ? kTapsD : kTapsH), rax);
    }
    mov(rax, ROWS(columns));
    mov(local(kColumns), rax);
    mov(rax, ROWS(out_channels));
    mov(local(kOutChannels), rax);
    mov(rax, ROWS(x_origin));
    shl(rax, kFloatBytesShift);
    add(rax, ROWS(x));
    mov(local(kXOrigin), rax);
    mov(rax, ROWS(dy));
    mov(local(kDyRange), rax);
    if (plan_.columns_at_once) {
      mov(rax, ROWS(interior_count));
      mov(local(kInteriorCount), rax);
      bytes_of(kInteriorX, ROWS(interior_x_offset));
      bytes_of(kInteriorDy, ROWS(interior_dy_offset));
    }
    // The weights of tap (tap_begin[0], tap_begin[1], 0): flipped, its weight counts from the end.
    xor_(rax, rax);
    for (int d = 0; d < 2; ++d) {
      mov(rcx, ROWS_AT(tap_begin, d));
      imul(rcx, rcx, int(dw_step(d)));
      add(rax, rcx);
    }
    if (plan_.flip)
      add(rax, int(-(dw_step(0) * (plan_.taps[0] - 1) + dw_step(1) * (plan_.taps[1] - 1) +
                     dw_step(2) * (plan_.taps[2] - 1))));
    add(rax, ROWS(dw));
    mov(local(kDwRange), rax);
    if (plan_.lane_tail()) emit_tail_lanes();
    mov(rax, PROBLEM(x_output_step));
    mov(rcx, PROBLEM(dy_output_step));
    shl(rax, kFloatBytesShift);
    shl(rcx, kFloatBytesShift);
    mov(reg_x_step, rax);
    mov(reg_dy_step, rcx);
  }

  void emit_tail_lanes() {
    if (plan_.isa.opmask) {
      mov(eax, (1 << plan_.tail_lanes()) - 1);
      kmovw(k_lanes, eax);
      return;
    }
    mov(eax, plan_.tail_lanes());
    vmovd(Xmm(lane_mask().getIdx()), eax);
    vpbroadcastd(lane_mask(), Xmm(lane_mask().getIdx()));
    mov(rax, reinterpret_cast<size_t>(kLaneIndex));
    vpcmpgtd(lane_mask(), lane_mask(), ptr[rax]);
  }

  // The group's input channels in blocks of ic_vectors vectors, then the tail block: each block's
  // inputs stay in the caches while every output-channel block of the range reads them.
  void emit_input_channel_blocks() {
    mov(rax, local(kXOrigin));
    mov(local(kXIc), rax);
    mov(rax, local(kDwRange));
    mov(local(kDwIc), rax);
    if (plan_.transposed) {  // every input channel in each block's rows
      emit_output_channel_blocks(0, false);
      return;
    }
    if (plan_.ic_full_blocks > 0) {
      Label block;
      mov(local(kIcBlocksLeft), int(plan_.ic_full_blocks));
      L(block);
      emit_output_channel_blocks(plan_.ic_vectors, false);
      add(local(kXIc), plan_.ic_vectors * vector_bytes_);
      add(local(kDwIc), plan_.ic_vectors * vector_bytes_);
      dec(local(kIcBlocksLeft));
      jnz(block, T_NEAR);
    }
    if (plan_.ic_tail_vectors > 0) {
      emit_output_channel_blocks(plan_.ic_tail_vectors, plan_.ic_tail_lanes < plan_.isa.lanes);
    }
  }

  // The range's output channels: whole blocks while they fit, then the group's tail (the range
  // ends there when it has one). ic_vectors, masked_last: the input-channel block's (not
  // transposed; transposed, the output channels' vectors and tail are the plan's).
  void emit_output_channel_blocks(int ic_vectors, bool masked_last) {
    const bool t = plan_.transposed;
    const int full_rows = t ? int(plan_.in_channels) : plan_.oc_block, full_vectors = t ? plan_.oc_vectors : ic_vectors;
    const int tail_rows = t ? int(plan_.in_channels) : plan_.oc_tail,
              tail_vectors = t ? plan_.oc_tail_vectors : ic_vectors;
    const bool full_masked = !t && masked_last, tail_masked = t ? plan_.lane_tail() : masked_last;
    Label full, tail, done;
    mov(rax, local(kOutChannels));
    mov(local(kOcLeft), rax);
    mov(rax, local(kXIc));
    mov(local(kXBlock), rax);
    mov(rax, local(kDyRange));
    mov(local(kDyBlock), rax);
    mov(rax, local(kDwIc));
    mov(local(kDwBlock), rax);
    L(full);
    cmp(local(kOcLeft), plan_.oc_block);
    jl(tail, T_NEAR);
    emit_any_block(full_rows, full_vectors, full_masked);
    if (plan_.depthwise) add(local(kXBlock), plan_.oc_block * kFloatBytes);
    add(local(kDyBlock), plan_.oc_block * kFloatBytes);
    add(local(kDwBlock), int(dw_block_step()));
    sub(local(kOcLeft), plan_.oc_block);
    jmp(full, T_NEAR);
    L(tail);
    if (plan_.oc_tail > 0) {
      cmp(local(kOcLeft), 0);
      je(done, T_NEAR);
      emit_any_block(tail_rows, tail_vectors, tail_masked);
    }
    L(done);
  }

  void emit_any_block(int rows, int vectors, bool masked_last) {
    if (plan_.columns_at_once) {
      emit_columns_block(vectors, masked_last);
    } else {
      emit_block(rows, vectors, masked_last);
    }
  }

  // The block's real D and H taps in input order around tap_row(), which emits one H tap's work
  // from reg_x_tap (the tap's first row's input at W 0) and reg_dw_tap (its weights of W tap 0),
  // leaving reg_dw_tap at the next H tap's.
  template <typename TapRow>
  void emit_real_taps(TapRow&& tap_row) {
    Label plane, h_tap;
    mov(reg_x_tap, local(kXBlock));
    mov(reg_dw_tap, local(kDwBlock));
    mov(reg_d_taps_left, local(kTapsD));
    L(plane);
    mov(local(kXPlane), reg_x_tap);
    mov(local(kDwPlane), reg_dw_tap);
    mov(reg_h_taps_left, local(kTapsH));
    L(h_tap);
    tap_row();
    add(reg_x_tap, local(kXTapStepH));
    dec(reg_h_taps_left);
    jnz(h_tap, T_NEAR);
    mov(reg_x_tap, local(kXPlane));
    add(reg_x_tap, local(kXTapStepD));
    mov(reg_dw_tap, local(kDwPlane));
    add(reg_dw_tap, int(dw_step(0)));
    dec(reg_d_taps_left);
    jnz(plane, T_NEAR);
  }

  // One register block: `rows` rows x `vectors` vectors, the last under the tail's lane mask when
  // masked_last (output channels x vectors of input channels, or transposed input channels x
  // vectors of output channels).
  void emit_block(int rows, int vectors, bool masked_last) {
    emit_real_taps([&] { emit_tap_row(rows, vectors, masked_last); });
  }

  // One H tap of emit_block: tap by tap along W.
  void emit_tap_row(int rows, int vectors, bool masked_last) {
    Label column, row, output, next_column;
    mov(reg_column, local(kColumns));
    mov(reg_columns_left, int(plan_.taps[2]));
    L(column);
    cmp(COLUMN(count), 0);
    je(next_column, T_NEAR);
    for (int i = 0; i < rows; ++i) {
      for (int v = 0; v < vectors; ++v) {
        emit_load(acc(i, v), weight_at(i, v), masked_last && v == vectors - 1);
      }
    }
    mov(reg_x_row, COLUMN(x_offset));
    lea(reg_x_row, ptr[reg_x_tap + reg_x_row * kFloatBytes]);
    mov(reg_dy_row, COLUMN(dy_offset));
    mov(rax, local(kDyBlock));
    lea(reg_dy_row, ptr[rax + reg_dy_row * kFloatBytes]);
    mov(reg_rows_left, local(kRows));
    L(row);
    mov(reg_x, reg_x_row);
    mov(reg_dy, reg_dy_row);
    mov(reg_outputs_left, COLUMN(count));
    L(output);
    for (int v = 0; v < vectors; ++v) {
      emit_load(loaded(v), ptr[reg_loaded() + v * vector_bytes_], masked_last && v == vectors - 1);
    }
    for (int i = 0; i < rows; ++i) {
      if (plan_.embedded_broadcast) {
        vfmadd231ps(acc(i, 0), loaded(0), ptr_b[reg_broadcast() + i * kFloatBytes]);
        continue;
      }
      vbroadcastss(broadcast(), ptr[reg_broadcast() + i * kFloatBytes]);
      for (int v = 0; v < vectors; ++v) vfmadd231ps(acc(i, v), broadcast(), loaded(v));
    }
    add(reg_x, reg_x_step);
    add(reg_dy, reg_dy_step);
    dec(reg_outputs_left);
    jnz(output, T_NEAR);
    add(reg_x_row, local(kXRowStep));
    add(reg_dy_row, local(kDyRowStep));
    dec(reg_rows_left);
    jnz(row, T_NEAR);
    for (int i = 0; i < rows; ++i) {
      for (int v = 0; v < vectors; ++v) {
        emit_store(weight_at(i, v), acc(i, v), masked_last && v == vectors - 1);
      }
    }
    L(next_column);
    // After the row's last tap along W, reg_dw_tap is at the next H tap's first (OHWI: W inside H).
    add(reg_dw_tap, int(dw_step(2)));
    add(reg_column, int(sizeof(convjit_filter_column)));
    dec(reg_columns_left);
    jnz(column, T_NEAR);
  }

  // A block of `vectors` output channel vectors (the last under the tail's lane mask when
  // masked_last), every W tap at once. Depthwise, where the plan holds every H tap's accumulators
  // and the call's rows have every H tap, all of them at once (each row's dy read once); else H tap
  // by H tap.
  void emit_columns_block(int vectors, bool masked_last) {
    const int h_taps = plan_.depthwise_h_taps;
    Label by_h_tap, done;
    if (!plan_.depthwise) {
      mov(reg_w_step, local(kXTapStepW));
      lea(reg_w_step3, ptr[reg_w_step + reg_w_step * 2]);
    }
    if (h_taps > 1) {
      cmp(local(kTapsH), h_taps);
      jne(by_h_tap, T_NEAR);
      mov(reg_x_tap, local(kXBlock));
      mov(reg_dw_tap, local(kDwBlock));
      mov(reg_h_step, local(kXTapStepH));
      if (h_taps > 3) lea(reg_h_step3, ptr[reg_h_step + reg_h_step * 2]);
      emit_columns_tap_rows(h_taps, vectors, masked_last);
      jmp(done, T_NEAR);
    }
    L(by_h_tap);
    emit_real_taps([&] { emit_columns_tap_rows(1, vectors, masked_last); });
    L(done);
  }

  // h_taps H taps of a columns-at-once block from reg_x_tap and reg_dw_tap: every tap along W at
  // once in a row's interior.
  void emit_columns_tap_rows(int h_taps, int vectors, bool masked_last) {
    const int taps_w = int(plan_.taps[2]);
    Label row, interior_done;
    for_each_held_row(h_taps, [&](int kh, int kw, int i) {
      for (int v = 0; v < vectors; ++v) {
        emit_load(acc(held_row(kh, kw, i), v), tap_weight_at(kh, kw, i, v), masked_last && v == vectors - 1);
      }
    });
    mov(reg_x_row, reg_x_tap);
    mov(reg_dy_row, local(kDyBlock));
    mov(reg_rows_left, local(kRows));
    mov(reg_column, local(kColumns));
    L(row);
    for (int kw = 0; kw < taps_w; ++kw) emit_column_edge(h_taps, kw, vectors, masked_last, false);
    mov(reg_outputs_left, local(kInteriorCount));
    test(reg_outputs_left, reg_outputs_left);
    jz(interior_done, T_NEAR);
    mov(reg_x, local(kInteriorX));
    add(reg_x, reg_x_row);
    mov(reg_dy, local(kInteriorDy));
    add(reg_dy, reg_dy_row);
    emit_columns_outputs(h_taps, 0, taps_w, 0, vectors, masked_last);
    mov(local(kXInteriorEnd), reg_x);
    mov(local(kDyInteriorEnd), reg_dy);
    for (int kw = 0; kw < taps_w; ++kw) emit_column_edge(h_taps, kw, vectors, masked_last, true);
    L(interior_done);
    add(reg_x_row, local(kXRowStep));
    add(reg_dy_row, local(kDyRowStep));
    dec(reg_rows_left);
    jnz(row, T_NEAR);
    for_each_held_row(h_taps, [&](int kh, int kw, int i) {
      for (int v = 0; v < vectors; ++v) {
        emit_store(tap_weight_at(kh, kw, i, v), acc(held_row(kh, kw, i), v), masked_last && v == vectors - 1);
      }
    });
    add(reg_dw_tap, int(h_taps * dw_step(1)));
  }

  // The accumulator rows a columns-at-once block holds for h_taps H taps, in register order.
  template <typename Row>
  void for_each_held_row(int h_taps, Row&& row) {
    for (int kh = 0; kh < h_taps; ++kh) {
      for (int kw = 0; kw < int(plan_.taps[2]); ++kw) {
        for (int i = 0; i < plan_.tap_rows(); ++i) row(kh, kw, i);
      }
    }
  }
  int held_row(int kh, int kw, int i) const { return (kh * int(plan_.taps[2]) + kw) * plan_.tap_rows() + i; }

  // Column kw's outputs before the interior (from the column's first) or after it (from the
  // interior's end), tap kw only.
  void emit_column_edge(int h_taps, int kw, int vectors, bool masked_last, bool after) {
    const int column = kw * int(sizeof(convjit_filter_column));
    Label done;
    mov(reg_outputs_left,
        qword[reg_column + column +
              int(after ? offsetof(convjit_filter_column, after) : offsetof(convjit_filter_column, before))]);
    test(reg_outputs_left, reg_outputs_left);
    jz(done, T_NEAR);
    if (after) {  // reg_x at the output's tap 0, as in the interior
      mov(reg_x, local(kXInteriorEnd));
      mov(reg_dy, local(kDyInteriorEnd));
    } else {  // reg_x at the output's tap kw
      mov(reg_x, qword[reg_column + column + int(offsetof(convjit_filter_column, x_offset))]);
      lea(reg_x, ptr[reg_x_row + reg_x * kFloatBytes]);
      mov(reg_dy, qword[reg_column + column + int(offsetof(convjit_filter_column, dy_offset))]);
      lea(reg_dy, ptr[reg_dy_row + reg_dy * kFloatBytes]);
    }
    emit_columns_outputs(h_taps, kw, kw + 1, after ? 0 : kw, vectors, masked_last);
    L(done);
  }

  // reg_outputs_left (> 0) outputs from reg_x (the output's input of tap (0, base_kw)) and reg_dy,
  // the H taps [0, h_taps) by the W taps [kw0, kw1): each output's dy vectors loaded once for all.
  void emit_columns_outputs(int h_taps, int kw0, int kw1, int base_kw, int vectors, bool masked_last) {
    Label output;
    L(output);
    for (int v = 0; v < vectors; ++v) {
      emit_load(loaded(v), ptr[reg_dy + v * vector_bytes_], masked_last && v == vectors - 1);
    }
    for (int kh = 0; kh < h_taps; ++kh) {
      for (int kw = kw0; kw < kw1; ++kw) {
        const RegExp input = tap_input(kh, kw - base_kw);
        if (plan_.depthwise) {
          emit_depthwise_fmas(held_row(kh, kw, 0), input, vectors, masked_last);
          continue;
        }
        for (int i = 0; i < plan_.tap_rows(); ++i) {
          const RegExp channel = input + i * kFloatBytes;
          const int row = held_row(kh, kw, i);
          if (plan_.embedded_broadcast) {
            vfmadd231ps(acc(row, 0), loaded(0), ptr_b[channel]);
            continue;
          }
          vbroadcastss(broadcast(), ptr[channel]);
          for (int v = 0; v < vectors; ++v) vfmadd231ps(acc(row, v), loaded(v), broadcast());
        }
      }
    }
    add(reg_x, reg_x_step);
    add(reg_dy, reg_dy_step);
    dec(reg_outputs_left);
    jnz(output, T_NEAR);
  }

  // Depthwise: the tap's input vectors at dy's channels into accumulator row `row`.
  void emit_depthwise_fmas(int row, const RegExp& input, int vectors, bool masked_last) {
    for (int v = 0; v < vectors; ++v) {
      const Address at = ptr[input + v * vector_bytes_];
      const Xmm sum = acc(row, v);
      if (masked_last && v == vectors - 1) {
        emit_load(broadcast(), at, true);
        vfmadd231ps(sum, loaded(v), broadcast());
      } else {
        vfmadd231ps(sum, loaded(v), at);
      }
    }
  }

  // The output's input of tap (kh, kw) from reg_x (tap (0, 0)'s): depthwise, H taps by register
  // steps and W taps by displacement (x is dense); else the one H tap's W taps by register steps.
  RegExp tap_input(int kh, int kw) const {
    if (plan_.depthwise) return h_tap_input(kh) + int(kw * plan_.depthwise_tap_bytes);
    assert(kh == 0);
    return tap_by_steps(kw, reg_w_step, reg_w_step3);
  }
  RegExp h_tap_input(int kh) const { return tap_by_steps(kh, reg_h_step, reg_h_step3); }

  // reg_x moved by k of at most kMaxTapsByStep steps (at hand: 1, 2, 4 and 3 times `step`).
  RegExp tap_by_steps(int k, const Reg64& step, const Reg64& step3) const {
    switch (k) {
      case 0: return RegExp(reg_x);
      case 1: return reg_x + step;
      case 2: return reg_x + step * 2;
      case 3: return reg_x + step3;
      default: assert(k == 4); return reg_x + step * 4;
    }
  }

  Address tap_weight_at(int kh, int kw, int i, int v) const {
    return ptr[reg_dw_tap + int(kh * dw_step(1) + kw * dw_step(2) + i * dw_row_step()) + v * vector_bytes_];
  }

  Address weight_at(int i, int v) const { return ptr[reg_dw_tap + int(i * dw_row_step()) + v * vector_bytes_]; }

  void emit_load(Xmm to, const Address& at, bool masked) {
    emit_vector_load(*this, plan_.isa, {k_lanes, lane_mask()}, to, at, masked);
  }
  void emit_store(const Address& at, Xmm from, bool masked) {
    emit_vector_store(*this, plan_.isa, {k_lanes, lane_mask()}, at, from, masked);
  }

  const FilterPlan plan_;
  const int vector_bytes_;
};

#undef COLUMN
#undef ROWS_AT
#undef ROWS
#undef PROBLEM

// The code buffer: per emitted block its accumulators' loads and stores, one output's loads,
// broadcasts and FMAs, and its loops, in instructions of at most 12 bytes.
// Columns at once: an interior output's loads and FMAs (depthwise two per vector: a masked load
// and its FMA), and each tap's edge loops before and after the interior.
size_t code_bytes(const FilterPlan& plan, int blocks) {
  const int accumulators = plan.block_rows() * plan.block_vectors(), vectors = plan.block_vectors();
  constexpr int kLoopInstructions = 40;
  int per_block = 2 * accumulators + kLoopInstructions;
  if (plan.columns_at_once) {  // each nest emitted: every H tap at once (where planned), and H tap by H tap
    const int nests = plan.depthwise_h_taps > 1 ? 2 : 1, taps_w = int(plan.taps[2]);
    const int per_tap = plan.depthwise ? 2 * vectors : plan.tap_rows() * (1 + vectors);
    auto outputs = [&](int w_taps) { return vectors + w_taps * plan.depthwise_h_taps * per_tap + 16; };
    per_block = nests * (per_block + outputs(taps_w) + 2 * taps_w * outputs(1));
  } else {
    per_block += plan.block_vectors() + plan.block_rows() * (1 + plan.block_vectors());
  }
  return kFrameCodeBytes + size_t(blocks) * 12 * size_t(per_block);
}

// Output channels in the lanes: every input channel a row (depthwise: one), of every W tap at once
// where that holds more accumulators than one tap's rows (depthwise: always, and of every H tap
// the plan holds), as many vectors of output channels as fit beside the rows' accumulators and
// the loaded dy vectors (up to 4), then the tail block. False (the plan untouched) where a group's
// panels would not fit the driver's scratch, or not one vector's rows the registers.
bool plan_transposed(FilterPlan* plan) {
  const int lanes = plan->isa.lanes;
  const bool mask_register = !plan->isa.opmask && plan->out_channels % lanes != 0;
  const int free_registers = plan->isa.vector_registers - 1 - (mask_register ? 1 : 0);
  auto vectors_beside = [&](int64_t rows) {
    return int(std::min<int64_t>({4, (plan->out_channels + lanes - 1) / lanes, free_registers / (rows + 1)}));
  };
  const int64_t tap_rows = plan->depthwise ? 1 : plan->in_channels, taps_w = plan->taps[2];
  const bool columns_at_once =
      plan->depthwise || (taps_w >= 2 && taps_w <= kMaxTapsByStep &&
                          taps_w * tap_rows * vectors_beside(taps_w * tap_rows) > tap_rows * vectors_beside(tap_rows));
  const int oc_vectors = vectors_beside(tap_rows * (columns_at_once ? plan->depthwise_h_taps * taps_w : 1));
  if (oc_vectors < 1) return false;
  const int64_t oc_block = int64_t(oc_vectors) * lanes;
  if ((plan->out_channels + oc_block - 1) / oc_block * oc_block * plan->reduction() > CONVJIT_FILTER_MAX_PANEL_FLOATS) {
    return false;
  }
  plan->transposed = true;
  plan->columns_at_once = columns_at_once;
  plan->oc_vectors = oc_vectors;
  plan->oc_block = int(oc_block);
  plan->oc_tail = int(plan->out_channels % plan->oc_block);
  plan->oc_tail_vectors = (plan->oc_tail + lanes - 1) / lanes;
  plan->oc_tail_lanes = plan->oc_tail > 0 ? plan->oc_tail - (plan->oc_tail_vectors - 1) * lanes : 0;
  plan->embedded_broadcast = !plan->depthwise && plan->isa.opmask && plan->oc_vectors == 1;
  plan->vector_registers_used = plan->block_rows() * plan->oc_vectors + plan->oc_vectors +
                                (plan->embedded_broadcast ? 0 : 1) + (mask_register ? 1 : 0);
  assert(plan->vector_registers_used <= plan->isa.vector_registers);
  plan->code_bytes = code_bytes(*plan, plan->oc_tail > 0 ? 2 : 1);
  return true;
}

}  // namespace

FilterPlan plan_filter_nhwc(const SpecKey& key) {
  FilterPlan plan;
  plan.isa = traits_of(key.isa);
  for (int d = 0; d < 3; ++d) plan.taps[d] = key.kernel[d];
  plan.flip = key.flip != 0;
  plan.depthwise = key.depthwise_groups > 0;
  plan.in_channels = key.ic_per_group;
  plan.out_channels = plan.depthwise ? key.depthwise_groups : key.oc_per_group;
  if (key.op != CONVJIT_OP_CONV_BACKWARD_FILTER) {
    plan.unsupported = "not backward filter";
  } else if (key.layout != CONVJIT_NHWC) {
    plan.unsupported = "not NHWC";
  } else if (plan.in_channels < 1 || plan.out_channels < 1 || plan.in_channels > kMaxChannels ||
             plan.out_channels > kMaxChannels) {
    plan.unsupported =
        std::string(plan.depthwise ? "groups" : "channels per group") + " not in 1.." + std::to_string(kMaxChannels);
  } else if (key.kernel[2] > CONVJIT_FILTER_MAX_COLUMNS) {
    plan.unsupported = "more than " + std::to_string(CONVJIT_FILTER_MAX_COLUMNS) + " taps along W";
  } else {
    plan.unsupported = common_unsupported_reason(key);
  }
  if (!plan.unsupported.empty()) return plan;

  const int lanes = plan.isa.lanes;
  if (plan.depthwise) {
    // x dense: consecutive W taps' inputs are the dilation's pixels of all the groups' channels apart.
    const int64_t pixel_bytes = plan.out_channels * kFloatBytes, span_taps = std::max<int64_t>(plan.taps[2] - 1, 1);
    if (key.dilation[2] > (INT_MAX - 4 * plan.isa.vector_bytes) / pixel_bytes / span_taps) {
      plan.unsupported = "depthwise W taps too far apart for 32-bit displacements";
      return plan;
    }
    plan.depthwise_tap_bytes = key.dilation[2] * pixel_bytes;
    // Every H tap's accumulators where they fit beside a vector's (and the addressing reaches them),
    // else one H tap's.
    plan.depthwise_h_taps =
        plan.taps[0] == 1 && plan.taps[1] >= 2 && plan.taps[1] <= kMaxTapsByStep ? int(plan.taps[1]) : 1;
    if (plan_transposed(&plan)) return plan;
    plan.depthwise_h_taps = 1;
    if (!plan_transposed(&plan)) {
      plan.unsupported = "a depthwise problem's panels exceed the driver's scratch, or its W taps the registers";
    }
    return plan;
  }
  if (2 * plan.in_channels < lanes && plan_transposed(&plan)) return plan;
  plan.ic_vectors = int(std::min<int64_t>(max_ic_vectors(plan.isa), (plan.in_channels + lanes - 1) / lanes));
  const int64_t block_channels = int64_t(plan.ic_vectors) * lanes;
  plan.ic_full_blocks = plan.in_channels / block_channels;
  const int64_t rest = plan.in_channels % block_channels;
  plan.ic_tail_vectors = int((rest + lanes - 1) / lanes);
  plan.ic_tail_lanes = rest > 0 ? int(rest - int64_t(plan.ic_tail_vectors - 1) * lanes) : 0;
  const bool mask_register = !plan.isa.opmask && plan.ic_tail_vectors > 0 && plan.ic_tail_lanes < lanes;
  const int free_registers = plan.isa.vector_registers - plan.ic_vectors - 1 - (mask_register ? 1 : 0);
  plan.oc_block = int(std::min<int64_t>({kMaxOcBlock, free_registers / plan.ic_vectors, plan.out_channels}));
  plan.oc_tail = int(plan.out_channels % plan.oc_block);
  plan.embedded_broadcast = plan.isa.opmask && plan.ic_vectors == 1;
  plan.vector_registers_used =
      plan.oc_block * plan.ic_vectors + plan.ic_vectors + (plan.embedded_broadcast ? 0 : 1) + (mask_register ? 1 : 0);
  assert(plan.vector_registers_used <= plan.isa.vector_registers);

  // Blocks emitted: (whole, tail) output-channel blocks x (whole, tail) input-channel blocks.
  plan.code_bytes = code_bytes(
      plan, (plan.oc_tail > 0 ? 2 : 1) * ((plan.ic_full_blocks > 0 ? 1 : 0) + (plan.ic_tail_vectors > 0 ? 1 : 0)));
  return plan;
}

bool generate_conv_bwd_filter_nhwc(const SpecKey& key, CompiledKernel* out, std::string* error) {
  const FilterPlan plan = plan_filter_nhwc(key);
  return emit_compiled(
      key, plan, [&] { return std::make_shared<Generator>(plan); },
      [&](Xbyak::CodeGenerator& generator) {
        out->filter.compute = generator.getCode<convjit_filter_rows_fn>();
        out->filter.oc_block = plan.oc_block;
        out->filter.transposed = plan.transposed ? 1 : 0;
        out->filter.depthwise = plan.depthwise ? 1 : 0;
        out->filter.columns_at_once = plan.columns_at_once ? 1 : 0;
      },
      out, error);
}

}  // namespace convjit::jit::xbyak
