// LLVM IR of the NCHW forward row kernel (the tile ABI of jit/abi/conv_tile_abi.h), built with
// IRBuilder. Only jit/llvm/ sees LLVM types.
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <cstdint>
#include <memory>
#include <string>

#include "spec_key.hpp"

namespace convjit::jit::llvm_backend {

inline constexpr int kLanes = 8;  // pixels per vector

// Register blocking: oc_block output channels (the key's class) x vectors of kLanes pixels.
struct NchwIrPlan {
  int oc_block, vectors;
};
NchwIrPlan plan_nchw_ir(const SpecKey& key);
int64_t nchw_ir_min_row_pixels(const NchwIrPlan& plan);

// Empty when the key can be generated, else why not.
std::string nchw_ir_unsupported_reason(const SpecKey& key);

// A module holding `void name(const convjit_conv_problem*, const convjit_conv_tile*)`.
std::unique_ptr<llvm::Module> build_conv_fwd_nchw(llvm::LLVMContext& context, const SpecKey& key,
                                                  const std::string& name);

}  // namespace convjit::jit::llvm_backend
