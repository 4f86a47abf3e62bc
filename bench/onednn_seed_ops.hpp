// The seed network's convolutions on oneDNN's primitives: forward (training, relu as a post-op),
// backward weights and backward data, all in the user's plain NCHW/OIHW memory, as an app that
// holds its tensors that way calls them. Primitives are made once per layer and batch size.
#pragma once

#include <memory>

#include "seed_network.hpp"

namespace convjit_bench {

// Null when the bench was built without oneDNN. Turns oneDNN's primitive cache off, so a new
// instance pays for its primitives as a process's first network does.
std::unique_ptr<seednet::ConvOps> make_onednn_seed_ops();

}  // namespace convjit_bench
