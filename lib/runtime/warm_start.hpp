// Warm start: the configurations that were on the JIT tier when a runtime ended, saved in
// CONVJIT_CACHE_DIR, and compiled again in the background when the next one starts, so a
// restarted app runs specialized kernels from its first calls.
//
// File DIR/hot-configurations (text): a "convjit-hot-configurations 1" line, then one
// configuration per line: rank layout mode batch in_channels out_channels groups, then
// in_size kernel stride dilation pad_begin pad_end (rank values each), activation, bias.
#pragma once

#include <string>
#include <vector>

#include "convjit/convjit.h"

namespace convjit::detail {

struct HotConfiguration {
  convjit_conv_params params;
  int32_t activation;
  bool has_bias;
};

std::string hot_configurations_path(const std::string& dir);
// Missing file: empty. Malformed lines are skipped (a warm start is only a hint).
std::vector<HotConfiguration> load_hot_configurations(const std::string& dir);
// Returns false if the file cannot be written.
bool save_hot_configurations(const std::string& dir, const std::vector<HotConfiguration>& configurations);

}  // namespace convjit::detail
