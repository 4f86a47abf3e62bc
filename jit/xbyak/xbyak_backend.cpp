// The Xbyak backend: AVX2/FMA forward tiles, emitted in microseconds. Code memory is mapped
// read+write while it is emitted, then read+execute (never both), one mapping per kernel.
#include <xbyak/xbyak_util.h>

#include "backend.hpp"
#include "conv_fwd_nchw.hpp"
#include "conv_fwd_nhwc.hpp"

namespace convjit::jit {
namespace {

// The shortest NHWC output row the kernels take (bench/RESULTS.md, "Why the tier rules ...").
constexpr int64_t kNhwcMinRowPixels = 12;

class XbyakBackend : public Backend {
 public:
  const char* name() const override { return "xbyak"; }

  std::string unavailable_reason() const override {
    const Xbyak::util::Cpu cpu;
    if (!cpu.has(Xbyak::util::Cpu::tAVX2) || !cpu.has(Xbyak::util::Cpu::tFMA)) return "host lacks AVX2/FMA";
    return {};
  }

  // Row kernels block pixels along W (jit/abi/backend.hpp: short_rows_reason). NHWC kernels block 16
  // or 32 output channels; with fewer than 4 per group they mostly compute zeros.
  std::string decline_reason(const convjit_conv_problem& p, const SpecKey& key) const override {
    // NHWC: not its 3- or 6-pixel block: shorter rows waste a quarter of their blocks and pay the
    // weights' packing for few pixels (bench/RESULTS.md, "Why the tier rules ...").
    const int64_t block =
        key.layout == CONVJIT_NCHW ? xbyak::nchw_min_row_pixels(xbyak::plan_nchw(key)) : kNhwcMinRowPixels;
    if (std::string why = short_rows_reason(p, block); !why.empty()) return why;
    if (key.layout == CONVJIT_NCHW && key.stride[2] == 2 && p.taps == 1) {  // bench/RESULTS.md, tier rules
      return "1x1 kernel with stride 2: the shuffles cost more than the generic tile's packing";
    }
    if (key.layout == CONVJIT_NHWC && p.oc_per_group < 4) {
      return std::to_string(p.oc_per_group) + " output channels per group: NHWC kernels block 16";
    }
    return {};
  }

  bool compile(const SpecKey& key, CompiledKernel* out, std::string* error) override {
    if (key.isa != Isa::Avx2Fma) {
      *error = "xbyak emits AVX2/FMA only";
      return false;
    }
    return key.layout == CONVJIT_NCHW ? xbyak::generate_conv_fwd_nchw(key, out, error)
                                      : xbyak::generate_conv_fwd_nhwc(key, out, error);
  }
};

}  // namespace

std::unique_ptr<Backend> make_xbyak_backend() {
  return std::make_unique<XbyakBackend>();
}

}  // namespace convjit::jit
