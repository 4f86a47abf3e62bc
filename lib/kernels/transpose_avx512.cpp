#include <immintrin.h>

#include "transpose.hpp"
#include "transpose_few_channels_impl.hpp"

namespace convjit::detail::avx512 {

void transpose_few_channels(int64_t channels, int64_t pixels, const float* src, float* dst, bool to_nchw) {
  run_transpose_few_channels(channels, pixels, src, dst, to_nchw);
  _mm256_zeroupper();
}

}  // namespace convjit::detail::avx512
