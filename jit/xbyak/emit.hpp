// What every Xbyak generator shares: the key limits of all kernel families, and turning a
// finished CodeGenerator into a CompiledKernel (code made read+execute, Xbyak's exceptions
// caught here so none leaves jit/xbyak).
#pragma once

#include <xbyak/xbyak.h>

#include <cstdint>
#include <memory>
#include <string>

#include "backend.hpp"
#include "isa_traits.hpp"

namespace convjit::jit::xbyak {

// Keys whose extents would overflow the generators' 32-bit immediates, or whose taps would make a
// kernel too large to unroll, are not generated.
inline constexpr int64_t kMaxExtent = int64_t(1) << 16;
inline constexpr int64_t kMaxTaps = 512;

// Empty when the key's extents fit the generators' immediates and unrolling budget.
inline std::string common_unsupported_reason(const SpecKey& key) {
  for (int d = 0; d < 3; ++d) {
    // kernel * dilation > kMaxExtent, without the product (which may not fit int64).
    if (key.kernel[d] > kMaxExtent / key.dilation[d] || key.stride[d] > kMaxExtent) return "kernel extent too large";
  }
  if (key.kernel[0] * key.kernel[1] * key.kernel[2] > kMaxTaps) {
    return "more than " + std::to_string(kMaxTaps) + " taps";
  }
  return {};
}

// Lane i holds i: AVX2's lane masks (lanes below a count) are a compare against it.
alignas(32) inline constexpr int32_t kLaneIndex[8] = {0, 1, 2, 3, 4, 5, 6, 7};

// A vector load or store, the lanes of `lanes` only when masked: AVX-512's opmask (a load's other
// lanes zeroed, faults suppressed), AVX2's mask vector (vmaskmovps).
struct LaneMask {
  Xbyak::Opmask opmask;
  Xbyak::Xmm vector;
};
inline void emit_vector_load(Xbyak::CodeGenerator& g, const IsaTraits& isa, const LaneMask& lanes, Xbyak::Xmm to,
                             const Xbyak::Address& at, bool masked) {
  if (!masked)
    g.vmovups(to, at);
  else if (isa.opmask)
    g.vmovups(to | lanes.opmask | Xbyak::util::T_z, at);
  else
    g.vmaskmovps(to, lanes.vector, at);
}
inline void emit_vector_store(Xbyak::CodeGenerator& g, const IsaTraits& isa, const LaneMask& lanes,
                              const Xbyak::Address& at, Xbyak::Xmm from, bool masked) {
  if (!masked)
    g.vmovups(at, from);
  else if (isa.opmask)
    g.vmovups(at | lanes.opmask, from);
  else
    g.vmaskmovps(at, lanes.vector, from);
}

// The code buffer of a kernel: the frame (prologue, loops, epilogue) plus an upper bound per
// unrolled tap block.
inline constexpr size_t kFrameCodeBytes = 4096;
inline size_t code_buffer_bytes(const SpecKey& key, int64_t blocks_per_tap, size_t bytes_per_block) {
  return kFrameCodeBytes + size_t(key.kernel[0] * key.kernel[1] * key.kernel[2] * blocks_per_tap) * bytes_per_block;
}

// The callee-saved registers (System V) every generator uses: saved with `local_bytes` of stack
// for its locals, restored before it returns.
inline void emit_enter(Xbyak::CodeGenerator& g, int local_bytes) {
  using namespace Xbyak::util;
  for (const Xbyak::Reg64& r : {rbx, rbp, r12, r13, r14, r15}) g.push(r);
  g.sub(rsp, local_bytes);
}
inline void emit_leave(Xbyak::CodeGenerator& g, int local_bytes) {
  using namespace Xbyak::util;
  g.add(rsp, local_bytes);
  for (const Xbyak::Reg64& r : {r15, r14, r13, r12, rbp, rbx}) g.pop(r);
  g.vzeroupper();  // after ymm code, before returning to SSE code
  g.ret();
}

// Kernel heights from which a generator loops over the kernel rows at run time instead of
// unrolling them: a 5x5 or 7x7 kernel then emits within a compile's 50 us (and its smaller code ran
// faster); 3x3 kernels stay unrolled (looping them cost NHWC 15%).
inline constexpr int64_t kRolledKernelRows = 5;

// Xbyak maps a code buffer whole, rounded up to its page size.
inline size_t mapped_bytes_of_buffer(size_t buffer_bytes) {
  const size_t page = Xbyak::inner::ALIGN_PAGE_SIZE;
  return (buffer_bytes + page - 1) / page * page;
}

// A plan's kernel: none where plan.unsupported says why; else make() builds the generator
// (emitting the code) in a buffer of plan.code_bytes, and install(generator) sets out's entry
// point (the code is read+execute by then).
template <typename Plan, typename Make, typename Install>
bool emit_compiled(const SpecKey& key, const Plan& plan, Make&& make, Install&& install, CompiledKernel* out,
                   std::string* error) {
  if (!plan.unsupported.empty()) {
    *error = plan.unsupported;
    return false;
  }
  try {
    std::shared_ptr<Xbyak::CodeGenerator> generator = make();
    generator->setProtectModeRE();  // written while read+write, executable only from here on
    install(*generator);
    out->key = key;
    out->name = key.name();
    out->code_bytes = generator->getSize();
    out->mapped_bytes = mapped_bytes_of_buffer(plan.code_bytes);
    out->code = generator;
    return true;
  } catch (const Xbyak::Error& e) {
    *error = std::string("xbyak: ") + e.what();
  } catch (const std::exception& e) {
    *error = e.what();
  }
  return false;
}

// A forward convolution tile: kernel holds everything but `compute`.
template <typename Plan, typename Make>
bool emit_kernel(const SpecKey& key, const Plan& plan, convjit_conv_kernel kernel, Make&& make, CompiledKernel* out,
                 std::string* error) {
  return emit_compiled(
      key, plan, make,
      [&](Xbyak::CodeGenerator& generator) {
        kernel.compute = generator.getCode<convjit_conv_tile_fn>();
        out->kernel = kernel;
      },
      out, error);
}

}  // namespace convjit::jit::xbyak
