// What a JIT backend offers the runtime: compiled kernels for specialization keys (forward
// convolution tiles; Xbyak also NHWC depthwise forward rows, max and mean pooling rows, forward
// and backward, and NHWC backward-filter rows).
// Backends are plain factories (no LLVM or Xbyak type escapes jit/), thread-safe, and never
// throw: a failed compile is a message, and the configuration stays on the generic tier.
#pragma once

#include <memory>
#include <string>

#include "conv_tile_abi.h"
#include "filter_rows_abi.h"
#include "pool_row_abi.h"
#include "spec_key.hpp"

namespace convjit::jit {

struct CompiledKernel {
  convjit_conv_kernel kernel;              // forward convolution keys
  convjit_pool_row_fn pool_row = nullptr;  // pooling keys
  convjit_filter_kernel filter{};          // backward-filter keys
  SpecKey key;
  std::string name;
  size_t code_bytes = 0;        // emitted (the stats' figure)
  size_t mapped_bytes = 0;      // executable memory it holds, whole pages (what the code budget counts)
  std::shared_ptr<void> code;  // owns the executable memory

  // The entry point of whichever kind the key's op has (perf maps name it).
  const void* entry() const {
    if (pool_row) return reinterpret_cast<const void*>(pool_row);
    if (filter.compute) return reinterpret_cast<const void*>(filter.compute);
    if (kernel.depthwise_row) return reinterpret_cast<const void*>(kernel.depthwise_row);
    return reinterpret_cast<const void*>(kernel.compute);
  }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // Empty when usable on this host, else why not (e.g. "host lacks AVX2/FMA").
  virtual std::string unavailable_reason() const = 0;
  // The ISA to emit the problem's kernel for, at most `cap`: the widest the host has, unless a
  // narrower one runs faster for this kind of kernel (jit/README.md). Integer tests only: it runs
  // on every call that checks its kernel.
  virtual Isa isa_for(const convjit_conv_problem& problem, Isa cap) const = 0;
  // Empty when the key's kernel is expected to beat the generic tier on this problem, else why
  // not (the configuration then stays generic, and the stats say why).
  virtual std::string decline_reason(const convjit_conv_problem& problem, const SpecKey& key) const = 0;
  // Whether the backend compiles kernels of op (convjit_op) at all: forward convolution, by every
  // backend; max and mean pooling, forward and backward, and backward filter, by Xbyak.
  virtual bool compiles(int32_t op) const { return op == CONVJIT_OP_CONV_FORWARD; }
  // Whether it compiles NHWC depthwise forward rows (depthwise_rows_abi.h; keys from
  // make_depthwise_spec_key), by Xbyak; the runtime keys such problems so only where it does.
  virtual bool compiles_depthwise_rows() const { return false; }
  // The ISA of a pooling, backward-filter or depthwise-rows kernel, at most `cap`, and why such a
  // key is not generated (or empty); asked only where the backend compiles its kind.
  virtual Isa rows_isa_for(Isa cap) const { return cap; }
  virtual std::string rows_decline_reason(const SpecKey&) const { return {}; }
  // Returns false and sets *error when the key is unsupported or generation fails.
  virtual bool compile(const SpecKey& key, CompiledKernel* out, std::string* error) = 0;
  // The executable bytes compile(key) will map (out->mapped_bytes), where the backend knows them
  // before mapping: the runtime then makes room in the code budget first. 0: known only after.
  virtual size_t mapped_bytes_before_compile(const SpecKey&) const { return 0; }
};

// The driver runs a row kernel over several whole output rows as one segment (NCHW, stride 1,
// rows shorter than 4 vectors of the kernel's lanes): the input view flattened (one row pitch for
// W and H), outputs computed on that padded grid into scratch and the real ones copied out. It
// does so when at least 80% of the grid is real outputs, or at least 2/3 and the grid's junk
// columns cost no more lanes than rounding each row up to whole vectors (AVX-512's rows of 56
// take 64 lanes, their grid 58; rows of 7, 16 lanes, their grid 9). Where the bounds come from:
// bench/RESULTS.md, "Why the tier rules are what they are" and "Which ISA a kernel gets".
inline constexpr int64_t kFlatRowsBelowVectors = 4;
// The widest row kernels' lanes (AVX-512's 16 floats): rows of kFlatRowsBelowVectors times as many
// pixels or more are flattened on no ISA.
inline constexpr int64_t kWidestRowLanes = 16;
// The junk columns a flattened grid row carries past a row's outputs: the kernel's W span less one.
inline int64_t flat_grid_junk(const convjit_conv_problem& p) {
  return (p.kernel[2] - 1) * p.dilation[2];
}
// At least 80% of a flattened grid is real outputs, whatever the lanes. Compared as junk <= out / 4
// (out >= 4 junk), as a grid row at W stride 1 is the padded input row, which may be near int64's
// limit.
inline bool flat_grid_mostly_real(const convjit_conv_problem& p) {
  return flat_grid_junk(p) <= p.out[2] / 4;
}
inline bool flattens_rows(const convjit_conv_problem& p, int64_t lanes) {
  if (p.layout != CONVJIT_NCHW || p.stride[1] != 1 || p.stride[2] != 1) return false;
  const int64_t out = p.out[2];
  if (out >= kFlatRowsBelowVectors * lanes || p.out[1] < 2) return false;  // one row per plane: nothing to join
  if (flat_grid_mostly_real(p)) return true;
  // At least 2/3 real (out >= 2 junk), and the grid row within the row's whole vectors.
  const int64_t junk = flat_grid_junk(p), whole_vectors = (out + lanes - 1) / lanes * lanes;
  return junk <= out / 2 && junk <= whole_vectors - out;
}
inline bool flattens_rows(const convjit_conv_problem& p, const convjit_conv_kernel& row_kernel) {
  return flattens_rows(p, row_kernel.row_lanes);
}

// Why a row kernel of `lanes` pixels per vector that takes segments of at least min_row_pixels
// would lose to the generic tier on p's rows, or empty: shorter rows are the generic tile's (it
// packs pixels of several rows per panel) unless the driver flattens them.
inline std::string short_rows_reason(const convjit_conv_problem& p, int64_t lanes, int64_t min_row_pixels) {
  if (p.out[2] >= min_row_pixels || flattens_rows(p, lanes)) return {};
  return "output rows of " + std::to_string(p.out[2]) + " pixels, shorter than " + std::to_string(min_row_pixels) +
         " and not flattened: the generic tier packs several rows per panel";
}

// Built in only when their library was found (CONVJIT_HAVE_XBYAK, CONVJIT_HAVE_LLVM).
std::unique_ptr<Backend> make_xbyak_backend();
std::unique_ptr<Backend> make_llvm_backend();

}  // namespace convjit::jit
