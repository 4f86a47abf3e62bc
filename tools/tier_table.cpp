#include "tier_table.hpp"

#include <cstdio>

namespace seednet {

void print_tier_table(convjit::Runtime& runtime) {
  runtime.wait_for_compiles();
  const convjit::RuntimeStats stats = runtime.stats();
  std::printf("\ntiers (backend %s%s%s): %lld kernels compiled, %lld failed, %lld code bytes\n", stats.backend.c_str(),
              stats.backend_unavailable_reason.empty() ? "" : ": ", stats.backend_unavailable_reason.c_str(),
              (long long)stats.compiles, (long long)stats.compile_failures, (long long)stats.code_bytes);
  std::printf("  %-50s %7s %7s %11s %11s %8s %9s  %s\n", "configuration", "generic", "jit", "generic us", "jit us",
              "speedup", "compile", "kernel");
  for (const convjit::ConfigStats& c : stats.configurations) {
    // The seed network's ops are convolutions of rank 2.
    const convjit::ConvDims& d = c.dims;
    char shape[96];
    std::snprintf(shape, sizeof shape, "%s %lldx%lld s%lld %lld->%lld %lldx%lld n%lld%s", convjit::op_name(c.op),
                  (long long)d.kernel[0], (long long)d.kernel[1], (long long)d.stride[0], (long long)d.in_channels,
                  (long long)d.out_channels, (long long)d.in_size[0], (long long)d.in_size[1], (long long)d.batch,
                  c.activation == convjit::Activation::Relu ? " relu" : "");
    const double speedup = c.mean_ns_jit > 0 && c.mean_ns_generic > 0 ? c.mean_ns_generic / c.mean_ns_jit : 0;
    std::printf("  %-50s %7lld %7lld %11.1f %11.1f %7.2fx %7.1fus  %s%s\n", shape, (long long)c.calls_generic,
                (long long)c.calls_jit, c.mean_ns_generic * 1e-3, c.mean_ns_jit * 1e-3, speedup, c.compile_us,
                c.kernel.empty() ? c.state.c_str() : c.kernel.c_str(),
                c.failure.empty() ? "" : (": " + c.failure).c_str());
  }
}

}  // namespace seednet
