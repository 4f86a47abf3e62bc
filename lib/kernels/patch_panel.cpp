#include "patch_panel.hpp"

#include "isa.hpp"
#include "kernel_isa.hpp"
#include "patch_panel_values.hpp"

namespace convjit::detail {

void pack_patch_panel(const PatchRow<const float>* rows, int64_t row_count, int64_t count, float* dst) {
#if defined(__x86_64__)
  static const bool avx512 = process_may_use(jit::Isa::Avx512);
  if (avx512) return avx512::pack_patch_panel(rows, row_count, count, dst);
  if (jit::host_has(jit::Isa::Avx2Fma)) return avx2::pack_patch_panel(rows, row_count, count, dst);
#endif
  pack_values(rows, row_count, 0, count, 0, kTileCols, dst);
}

}  // namespace convjit::detail
