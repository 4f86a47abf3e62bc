#include "stats_json.hpp"

#include <cstdio>

#include "forward_kernels.hpp"

namespace convjit::detail {
namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", c);
      out += escape;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

std::string extent(const Extent& e, int rank) {
  std::string s = "[";
  for (int d = 0; d < rank; ++d) s += (d ? ", " : "") + std::to_string(e[size_t(d)]);
  return s + "]";
}

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::Auto: return "auto";
    case Backend::Xbyak: return "xbyak";
    case Backend::Llvm: return "llvm";
    case Backend::None: return "none";
  }
  return "?";
}

}  // namespace

std::string stats_to_json(const RuntimeStats& s, const Policy& p) {
  int64_t calls_generic = 0, calls_jit = 0;
  for (const ConfigStats& c : s.configurations) {
    calls_generic += c.calls_generic;
    calls_jit += c.calls_jit;
  }
  std::string j = "{\n  \"schema\": \"convjit-stats\",\n  \"version\": 2,\n";
  j += "  \"host\": {\"isa\": " + quoted(jit::isa_name(jit::widest_host_isa())) + "},\n";
  j += "  \"isa\": " + quoted(s.isa) + ",\n";
  j += "  \"policy\": {\"backend\": " + quoted(backend_name(p.backend)) +
       ", \"hot_threshold\": " + std::to_string(p.hot_threshold) + ", \"async\": " + (p.async ? "true" : "false") +
       ", \"num_threads\": " + std::to_string(p.num_threads) +
       ", \"adapt_threads\": " + (p.adapt_threads ? "true" : "false") +
       ", \"specialize_sizes\": " + (p.specialize_sizes ? "true" : "false") +
       ", \"decline_slower\": " + (p.decline_slower ? "true" : "false") +
       ", \"max_configurations\": " + std::to_string(p.max_configurations) +
       ", \"code_budget_bytes\": " + std::to_string(p.code_budget_bytes) + ", \"max_isa\": " +
       quoted(p.max_isa == Isa::Avx2     ? "avx2"
              : p.max_isa == Isa::Avx512 ? "avx512"
                                         : "auto") +
       "},\n";
  j += "  \"backend\": " + quoted(s.backend) + ",\n";
  j += "  \"backend_unavailable_reason\": " + quoted(s.backend_unavailable_reason) + ",\n";
  j += "  \"totals\": {\"configurations\": " + std::to_string(s.configurations.size()) +
       ", \"calls_generic\": " + std::to_string(calls_generic) + ", \"calls_jit\": " + std::to_string(calls_jit) +
       ", \"compiles\": " + std::to_string(s.compiles) +
       ", \"compile_failures\": " + std::to_string(s.compile_failures) + ", \"kernels\": " + std::to_string(s.kernels) +
       ", \"code_bytes\": " + std::to_string(s.code_bytes) + ", \"evictions\": " + std::to_string(s.evictions) +
       ", \"kernel_evictions\": " + std::to_string(s.kernel_evictions) +
       ", \"mapped_bytes\": " + std::to_string(s.mapped_bytes) + "},\n";
  j += "  \"configurations\": [";
  for (size_t i = 0; i < s.configurations.size(); ++i) {
    const ConfigStats& c = s.configurations[i];
    j += i ? ",\n    {" : "\n    {";
    j += "\"op\": " + quoted(op_name(c.op)) + ", ";
    if (is_pool(c.op)) {
      const PoolDims& d = c.pool_dims;
      j += "\"rank\": " + std::to_string(d.rank) +
           ", \"layout\": " + quoted(d.layout == Layout::NHWC ? "nhwc" : "nchw") +
           ", \"batch\": " + std::to_string(d.batch) + ", \"channels\": " + std::to_string(d.channels) +
           ", \"in_size\": " + extent(d.in_size, d.rank) + ", \"window\": " + extent(d.window, d.rank) +
           ", \"stride\": " + extent(d.stride, d.rank) + ", \"dilation\": " + extent(d.dilation, d.rank) +
           ", \"pad_begin\": " + extent(d.pad_begin, d.rank) + ", \"pad_end\": " + extent(d.pad_end, d.rank) +
           ", \"exclude_padding\": " + (d.exclude_padding ? "true" : "false");
      if (c.op == Op::LpNormPoolForward || c.op == Op::LpNormPoolBackward) j += ", \"p\": " + number(c.p);
    } else {
      const ConvDims& d = c.dims;
      j += "\"rank\": " + std::to_string(d.rank) +
           ", \"layout\": " + quoted(d.layout == Layout::NHWC ? "nhwc" : "nchw") +
           ", \"mode\": " + quoted(d.mode == Mode::Convolution ? "convolution" : "cross_correlation") +
           ", \"batch\": " + std::to_string(d.batch) + ", \"in_channels\": " + std::to_string(d.in_channels) +
           ", \"out_channels\": " + std::to_string(d.out_channels) + ", \"groups\": " + std::to_string(d.groups) +
           ", \"in_size\": " + extent(d.in_size, d.rank) + ", \"kernel\": " + extent(d.kernel, d.rank) +
           ", \"stride\": " + extent(d.stride, d.rank) + ", \"dilation\": " + extent(d.dilation, d.rank) +
           ", \"pad_begin\": " + extent(d.pad_begin, d.rank) + ", \"pad_end\": " + extent(d.pad_end, d.rank) +
           ", \"activation\": " + quoted(c.activation == Activation::Relu ? "relu" : "identity") +
           ", \"bias\": " + (c.has_bias ? "true" : "false");
    }
    j += ", \"calls\": {\"generic\": " + std::to_string(c.calls_generic) + ", \"jit\": " + std::to_string(c.calls_jit) +
         "}, \"mean_ns\": {\"generic\": " + number(c.mean_ns_generic) + ", \"jit\": " + number(c.mean_ns_jit) +
         "}, \"state\": " + quoted(c.state) + ", \"jit_kernel\": " + quoted(c.kernel) +
         ", \"backend\": " + quoted(c.backend) + ", \"compile_us\": " + number(c.compile_us) +
         ", \"code_bytes\": " + std::to_string(c.code_bytes) + ", \"reason\": " + quoted(c.failure) +
         ", \"timeline_us\": {\"first_call\": " + number(c.first_call_us) + ", \"hot\": " + number(c.hot_us) +
         ", \"kernel\": " + number(c.kernel_us) + "}}";
  }
  j += s.configurations.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return j;
}

}  // namespace convjit::detail
