// The Xbyak backend: AVX2/FMA forward tiles, emitted in microseconds. Code memory is mapped
// read+write while it is emitted, then read+execute (never both), one mapping per kernel.
#include <xbyak/xbyak_util.h>

#include "jit/backend.hpp"
#include "jit/xbyak/conv_fwd_nchw.hpp"
#include "jit/xbyak/conv_fwd_nhwc.hpp"

namespace convjit::jit {
namespace {

class XbyakBackend : public Backend {
 public:
  const char* name() const override { return "xbyak"; }

  std::string unavailable_reason() const override {
    const Xbyak::util::Cpu cpu;
    if (!cpu.has(Xbyak::util::Cpu::tAVX2) || !cpu.has(Xbyak::util::Cpu::tFMA)) return "host lacks AVX2/FMA";
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

std::unique_ptr<Backend> make_xbyak_backend() { return std::make_unique<XbyakBackend>(); }

}  // namespace convjit::jit
