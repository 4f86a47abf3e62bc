// The Xbyak backend: AVX2/FMA and AVX-512 forward tiles from one generator per layout, NHWC
// depthwise forward rows, max and mean pooling rows and NHWC backward-filter rows, emitted in
// microseconds. Code memory is mapped read+write while it is emitted, then read+execute (never
// both), one mapping per kernel.
#include "backend.hpp"
#include "conv_bwd_filter_nhwc.hpp"
#include "conv_fwd_depthwise_nhwc.hpp"
#include "conv_fwd_nchw.hpp"
#include "conv_fwd_nhwc.hpp"
#include "emit.hpp"
#include "isa_traits.hpp"
#include "pool_rows_nhwc.hpp"

namespace convjit::jit {
namespace {

// The shortest row a kernel takes: its plan's (bench/RESULTS.md, "Why the tier rules ...").
int64_t min_row_pixels(const SpecKey& key) {
  return key.layout == CONVJIT_NCHW ? xbyak::nchw_min_row_pixels(key.isa)
                                    : xbyak::nhwc_min_row_pixels(key.isa, key.oc_class);
}

class XbyakBackend : public Backend {
 public:
  const char* name() const override { return "xbyak"; }

  std::string unavailable_reason() const override {
    if (!host_has(Isa::Avx2Fma)) return "host lacks AVX2/FMA";
    return {};
  }

  // The widest ISA the host and the cap allow, unless the problem's rows are shorter than that
  // kernel's smallest block and not flattened (AVX-512's NCHW blocks are 32 pixels, AVX2's 16):
  // its rows would all go to the generic tile. jit/README.md: "Which ISA a kernel gets".
  Isa isa_for(const convjit_conv_problem& p, Isa cap) const override {
    if (cap < Isa::Avx512 || !host_has(Isa::Avx512)) return Isa::Avx2Fma;
    if (flattens_rows(p, xbyak::kAvx512Traits.lanes)) return Isa::Avx512;
    const int32_t oc_class = p.oc_per_group >= kNhwcWideClass ? kNhwcWideClass : kNhwcNarrowClass;
    const int64_t min_row = p.layout == CONVJIT_NCHW ? xbyak::nchw_min_row_pixels(Isa::Avx512)
                                                     : xbyak::nhwc_min_row_pixels(Isa::Avx512, oc_class);
    return p.out[2] < min_row ? Isa::Avx2Fma : Isa::Avx512;
  }

  // Row kernels block pixels along W (jit/abi/backend.hpp: short_rows_reason). NHWC kernels block 16
  // or 32 output channels; with fewer than 4 per group they mostly compute zeros.
  std::string decline_reason(const convjit_conv_problem& p, const SpecKey& key) const override {
    // NHWC: not its pixel block: shorter rows waste a quarter of their blocks and pay the
    // weights' packing for few pixels (bench/RESULTS.md, "Why the tier rules ...").
    const int64_t lanes = key.layout == CONVJIT_NCHW ? xbyak::traits_of(key.isa).lanes : 1;
    if (std::string why = short_rows_reason(p, lanes, min_row_pixels(key)); !why.empty()) return why;
    if (key.layout == CONVJIT_NCHW && key.stride[2] == 2 && p.taps == 1) {  // bench/RESULTS.md, tier rules
      return "1x1 kernel with stride 2: the shuffles cost more than the generic tile's packing";
    }
    if (key.layout == CONVJIT_NHWC && p.oc_per_group < 4) {
      return std::to_string(p.oc_per_group) + " output channels per group: NHWC kernels block 16";
    }
    return {};
  }

  bool compiles(int32_t op) const override {
    return op == CONVJIT_OP_CONV_FORWARD || op == CONVJIT_OP_MAXPOOL_FORWARD || op == CONVJIT_OP_MEANPOOL_FORWARD ||
           op == CONVJIT_OP_MAXPOOL_BACKWARD || op == CONVJIT_OP_MEANPOOL_BACKWARD ||
           op == CONVJIT_OP_CONV_BACKWARD_FILTER;
  }

  bool compiles_depthwise_rows() const override { return true; }

  // Pooling, backward-filter and depthwise rows: the widest ISA the host and the cap allow.
  Isa rows_isa_for(Isa cap) const override {
    return cap >= Isa::Avx512 && host_has(Isa::Avx512) ? Isa::Avx512 : Isa::Avx2Fma;
  }

  std::string rows_decline_reason(const SpecKey& key) const override {
    if (key.op == CONVJIT_OP_CONV_FORWARD) return xbyak::plan_depthwise_nhwc(key).unsupported;
    return key.op == CONVJIT_OP_CONV_BACKWARD_FILTER ? xbyak::plan_filter_nhwc(key).unsupported
                                                     : xbyak::plan_pool_nhwc(key).unsupported;
  }

  bool compile(const SpecKey& key, CompiledKernel* out, std::string* error) override {
    if (!host_has(key.isa)) {
      *error = std::string("host lacks ") + isa_name(key.isa);
      return false;
    }
    if (key.op == CONVJIT_OP_CONV_BACKWARD_FILTER) return xbyak::generate_conv_bwd_filter_nhwc(key, out, error);
    if (key.op != CONVJIT_OP_CONV_FORWARD) return xbyak::generate_pool_nhwc(key, out, error);
    if (key.depthwise_groups) return xbyak::generate_conv_fwd_depthwise_nhwc(key, out, error);
    return key.layout == CONVJIT_NCHW ? xbyak::generate_conv_fwd_nchw(key, out, error)
                                      : xbyak::generate_conv_fwd_nhwc(key, out, error);
  }

  // The plan sizes the code buffer, which Xbyak maps whole.
  size_t mapped_bytes_before_compile(const SpecKey& key) const override {
    if (key.op == CONVJIT_OP_CONV_BACKWARD_FILTER) {
      return xbyak::mapped_bytes_of_buffer(xbyak::plan_filter_nhwc(key).code_bytes);
    }
    if (key.op != CONVJIT_OP_CONV_FORWARD) return xbyak::mapped_bytes_of_buffer(xbyak::plan_pool_nhwc(key).code_bytes);
    if (key.depthwise_groups) return xbyak::mapped_bytes_of_buffer(xbyak::plan_depthwise_nhwc(key).code_bytes);
    return xbyak::mapped_bytes_of_buffer(key.layout == CONVJIT_NCHW ? xbyak::plan_nchw(key).code_bytes
                                                                    : xbyak::plan_nhwc(key).code_bytes);
  }
};

}  // namespace

std::unique_ptr<Backend> make_xbyak_backend() {
  return std::make_unique<XbyakBackend>();
}

}  // namespace convjit::jit
