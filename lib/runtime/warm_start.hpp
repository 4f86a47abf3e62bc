// Warm start: the configurations that were on the JIT tier when a runtime ended, saved in
// CONVJIT_CACHE_DIR, and compiled again in the background when the next one starts, so a
// restarted app runs specialized kernels from its first calls.
//
// File DIR/hot-configurations (text): a "convjit-hot-configurations 2" line, then one
// configuration per line: its convjit_op, then for the conv ops rank layout mode batch
// in_channels out_channels groups, in_size kernel stride dilation pad_begin pad_end (rank values
// each), activation, bias; for pooling rank layout exclude_padding batch channels, in_size window
// stride dilation pad_begin pad_end, p. Version 1 files (no op column: forward convolutions) are
// still read.
#pragma once

#include <string>
#include <vector>

#include "config_table.hpp"

namespace convjit::detail {

std::string hot_configurations_path(const std::string& dir);
// Missing file: empty. Malformed lines are skipped (a warm start is only a hint).
std::vector<Configuration> load_hot_configurations(const std::string& dir);
// Returns false if the file cannot be written.
bool save_hot_configurations(const std::string& dir, const std::vector<Configuration>& configurations);

}  // namespace convjit::detail
