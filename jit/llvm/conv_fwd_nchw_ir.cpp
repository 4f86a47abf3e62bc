// The NCHW row kernel as LLVM IR. The loop nest it emits, for one output row segment whose input
// view has every tap real (the driver's contract):
//
//   for each block of oc_block output channels:          (a partial block repeats its last row)
//     for each block of 8*vectors pixels:                 (the last one moved back to end the row)
//       acc[oc][v] = 0
//       for ic in input channels:
//         for kd, kh, kw in weight order (unrolled, flipped in convolution mode):
//           in[v] = 8 inputs of tap (kd, kh, kw)          (stride 2: even lanes of 16)
//           acc[oc][v] = fma(in[v], splat(w[oc][ic][kd][kh][kw]), acc[oc][v])
//       acc += bias; relu; store the block's real channels
//
// Each output is therefore one FMA chain in OIHW order from 0.0f, then + bias, then relu: the
// numbers of every other tier. Accumulators live in allocas; SROA turns them into registers.
#include "conv_fwd_nchw_ir.hpp"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "conv_tile_abi.h"

namespace convjit::jit::llvm_backend {
namespace {

class NchwKernelBuilder {
 public:
  NchwKernelBuilder(llvm::LLVMContext& context, llvm::Module& module, const SpecKey& key)
      : context_(context),
        module_(module),
        b_(context),
        key_(key),
        plan_(plan_nchw_ir(key)),
        i64_(b_.getInt64Ty()),
        f32_(b_.getFloatTy()),
        ptr_(b_.getPtrTy()),
        vec_(llvm::FixedVectorType::get(f32_, kLanes)) {}

  void build(const std::string& name) {
    auto* type = llvm::FunctionType::get(b_.getVoidTy(), {ptr_, ptr_}, false);
    function_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module_);
    function_->addParamAttr(0, llvm::Attribute::NoAlias);
    function_->addParamAttr(1, llvm::Attribute::NoAlias);
    function_->addFnAttr(llvm::Attribute::NoUnwind);
    b_.SetInsertPoint(llvm::BasicBlock::Create(context_, "entry", function_));
    llvm::Value* problem = function_->getArg(0);
    llvm::Value* tile = function_->getArg(1);

    x_ = field(tile, offsetof(convjit_conv_tile, x), ptr_);
    w_ = field(tile, offsetof(convjit_conv_tile, w), ptr_);
    bias_ = field(tile, offsetof(convjit_conv_tile, bias), ptr_);
    y_ = field(tile, offsetof(convjit_conv_tile, y), ptr_);
    oc_count_ = field(tile, offsetof(convjit_conv_tile, oc_count), i64_);
    pixels_ = field(tile, offsetof(convjit_conv_tile, pixel_count), i64_);
    view_channel_ = field(tile, offsetof(convjit_conv_tile, view_channel), i64_);
    view_row_ = field(tile, offsetof(convjit_conv_tile, view_tap_row), i64_);
    view_plane_ = field(tile, offsetof(convjit_conv_tile, view_tap_plane), i64_);
    reduction_ = field(problem, offsetof(convjit_conv_problem, reduction), i64_);
    y_channel_ = field(problem, offsetof(convjit_conv_problem, y.channel), i64_);
    ic_count_ = key_.ic_per_group ? constant(key_.ic_per_group)
                                  : field(problem, offsetof(convjit_conv_problem, ic_per_group), i64_);
    for (int oc = 0; oc < plan_.oc_block; ++oc) {
      for (int v = 0; v < plan_.vectors; ++v) acc_.push_back(b_.CreateAlloca(vec_));
    }
    if (key_.stride[2] == 2) last_lanes_ = lanes_below(kLanes - 1);

    const int64_t run = kLanes * plan_.vectors;
    llvm::Value* oc_blocks = ceil_div(oc_count_, plan_.oc_block);
    counted_loop("oc_block", oc_blocks, [&](llvm::Value* block) {
      llvm::Value* first_oc = b_.CreateMul(block, constant(plan_.oc_block));
      llvm::Value* last_real = b_.CreateSub(oc_count_, constant(1));
      std::vector<llvm::Value*> weights;  // each channel's weight row; past the real ones, the last real one
      for (int oc = 0; oc < plan_.oc_block; ++oc) {
        llvm::Value* channel = min(b_.CreateAdd(first_oc, constant(oc)), last_real);
        weights.push_back(float_at(w_, b_.CreateMul(channel, reduction_)));
      }
      counted_loop("pixel_block", ceil_div(pixels_, run), [&](llvm::Value* pixel_block) {
        // The last block moves back to end at the segment's last pixel (segments hold >= run).
        llvm::Value* first = min(b_.CreateMul(pixel_block, constant(run)), b_.CreateSub(pixels_, constant(run)));
        emit_block(first, first_oc, weights);
      });
    });
    b_.CreateRetVoid();
  }

 private:
  // One block: acc over every input channel and tap, then bias, relu and the stores.
  void emit_block(llvm::Value* first_pixel, llvm::Value* first_oc, const std::vector<llvm::Value*>& weights) {
    for (llvm::AllocaInst* a : acc_) b_.CreateStore(llvm::Constant::getNullValue(vec_), a);
    llvm::Value* x_block = float_at(x_, b_.CreateMul(first_pixel, constant(key_.stride[2])));
    counted_loop("ic", ic_count_, [&](llvm::Value* ic) {
      llvm::Value* x_channel = float_at(x_block, b_.CreateMul(ic, view_channel_));
      llvm::Value* w_offset = b_.CreateMul(ic, constant(key_.kernel[0] * key_.kernel[1] * key_.kernel[2]));
      emit_taps(x_channel, w_offset, weights);
    });
    emit_store(first_pixel, first_oc);
  }

  // The taps of one input channel, in OIHW weight order.
  void emit_taps(llvm::Value* x_channel, llvm::Value* w_offset, const std::vector<llvm::Value*>& weights) {
    const int64_t kd_n = key_.kernel[0], kh_n = key_.kernel[1], kw_n = key_.kernel[2];
    auto input_tap = [&](int64_t t, int64_t n) { return key_.flip ? n - 1 - t : t; };
    int64_t tap = 0;
    for (int64_t kd = 0; kd < kd_n; ++kd) {
      for (int64_t kh = 0; kh < kh_n; ++kh) {
        llvm::Value* row = float_at(x_channel, b_.CreateAdd(b_.CreateMul(constant(input_tap(kd, kd_n)), view_plane_),
                                                            b_.CreateMul(constant(input_tap(kh, kh_n)), view_row_)));
        for (int64_t kw = 0; kw < kw_n; ++kw, ++tap) {
          std::vector<llvm::Value*> inputs;
          for (int v = 0; v < plan_.vectors; ++v) {
            const int64_t position = input_tap(kw, kw_n) * key_.dilation[2] + kLanes * v * key_.stride[2];
            inputs.push_back(load_inputs(float_at(row, constant(position)), v == plan_.vectors - 1));
          }
          for (int oc = 0; oc < plan_.oc_block; ++oc) {
            llvm::Value* weight =
                b_.CreateLoad(f32_, float_at(weights[size_t(oc)], b_.CreateAdd(w_offset, constant(tap))));
            llvm::Value* broadcast = b_.CreateVectorSplat(kLanes, weight);
            for (int v = 0; v < plan_.vectors; ++v) {
              llvm::AllocaInst* a = acc(oc, v);
              llvm::Value* sum = b_.CreateIntrinsic(llvm::Intrinsic::fma, {vec_},
                                                    {inputs[size_t(v)], broadcast, b_.CreateLoad(vec_, a)});
              b_.CreateStore(sum, a);
            }
          }
        }
      }
    }
  }

  // 8 inputs from `at`: consecutive, or (stride 2) the even ones of 16. The 16th of the block's last
  // vector is an odd input past the segment's last tap, possibly past the row: not loaded.
  llvm::Value* load_inputs(llvm::Value* at, bool last_vector) {
    const llvm::Align align(4);
    if (key_.stride[2] == 1) return b_.CreateAlignedLoad(vec_, at, align);
    llvm::Value* low = b_.CreateAlignedLoad(vec_, at, align);
    llvm::Value* high_at = float_at(at, constant(kLanes));
    llvm::Value* high = last_vector ? static_cast<llvm::Value*>(b_.CreateMaskedLoad(vec_, high_at, align, last_lanes_,
                                                                                    llvm::Constant::getNullValue(vec_)))
                                    : b_.CreateAlignedLoad(vec_, high_at, align);
    return b_.CreateShuffleVector(low, high, {0, 2, 4, 6, 8, 10, 12, 14});
  }

  // + bias (when there is one), relu (keeping NaN and -0, as vmaxps(0, x) does), and the stores
  // of the block's real channels.
  void emit_store(llvm::Value* first_pixel, llvm::Value* first_oc) {
    if_then(b_.CreateIsNotNull(bias_), [&] {
      for (int oc = 0; oc < plan_.oc_block; ++oc) {
        llvm::Value* channel = min(b_.CreateAdd(first_oc, constant(oc)), b_.CreateSub(oc_count_, constant(1)));
        llvm::Value* bias = b_.CreateVectorSplat(kLanes, b_.CreateLoad(f32_, float_at(bias_, channel)));
        for (int v = 0; v < plan_.vectors; ++v)
          b_.CreateStore(b_.CreateFAdd(b_.CreateLoad(vec_, acc(oc, v)), bias), acc(oc, v));
      }
    });
    for (int oc = 0; oc < plan_.oc_block; ++oc) {
      llvm::Value* channel = b_.CreateAdd(first_oc, constant(oc));
      if_then(b_.CreateICmpSLT(channel, oc_count_), [&] {
        llvm::Value* y_row = float_at(y_, b_.CreateAdd(b_.CreateMul(channel, y_channel_), first_pixel));
        for (int v = 0; v < plan_.vectors; ++v) {
          llvm::Value* out = b_.CreateLoad(vec_, acc(oc, v));
          if (key_.relu) {
            llvm::Value* zero = llvm::Constant::getNullValue(vec_);
            out = b_.CreateSelect(b_.CreateFCmpOLT(out, zero), zero, out);
          }
          b_.CreateAlignedStore(out, float_at(y_row, constant(kLanes * v)), llvm::Align(4));
        }
      });
    }
  }

  // for (i = 0; i < count; ++i) body(i)
  template <typename Body>
  void counted_loop(const char* name, llvm::Value* count, Body&& body) {
    llvm::BasicBlock* before = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(context_, std::string(name) + ".head", function_);
    auto* inside = llvm::BasicBlock::Create(context_, std::string(name) + ".body", function_);
    auto* after = llvm::BasicBlock::Create(context_, std::string(name) + ".end", function_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* i = b_.CreatePHI(i64_, 2, name);
    i->addIncoming(constant(0), before);
    b_.CreateCondBr(b_.CreateICmpSLT(i, count), inside, after);
    b_.SetInsertPoint(inside);
    body(i);
    i->addIncoming(b_.CreateAdd(i, constant(1)), b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(after);
  }

  template <typename Body>
  void if_then(llvm::Value* condition, Body&& body) {
    auto* then = llvm::BasicBlock::Create(context_, "then", function_);
    auto* after = llvm::BasicBlock::Create(context_, "endif", function_);
    b_.CreateCondBr(condition, then, after);
    b_.SetInsertPoint(then);
    body();
    b_.CreateBr(after);
    b_.SetInsertPoint(after);
  }

  llvm::Value* field(llvm::Value* base, size_t offset, llvm::Type* type) {
    return b_.CreateLoad(type, b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), base, offset));
  }
  llvm::Value* float_at(llvm::Value* base, llvm::Value* index) { return b_.CreateInBoundsGEP(f32_, base, index); }
  llvm::Value* constant(int64_t v) { return llvm::ConstantInt::get(i64_, uint64_t(v), true); }
  llvm::Value* min(llvm::Value* a, llvm::Value* b) { return b_.CreateSelect(b_.CreateICmpSLT(a, b), a, b); }
  llvm::Value* ceil_div(llvm::Value* a, int64_t d) {
    return b_.CreateSDiv(b_.CreateAdd(a, constant(d - 1)), constant(d));
  }
  llvm::Value* lanes_below(int n) {
    std::vector<llvm::Constant*> lanes;
    for (int l = 0; l < kLanes; ++l) lanes.push_back(b_.getInt1(l < n));
    return llvm::ConstantVector::get(lanes);
  }
  llvm::AllocaInst* acc(int oc, int v) { return acc_[size_t(oc * plan_.vectors + v)]; }

  llvm::LLVMContext& context_;
  llvm::Module& module_;
  llvm::IRBuilder<> b_;
  const SpecKey key_;
  const NchwIrPlan plan_;
  llvm::Type *i64_, *f32_, *ptr_;
  llvm::FixedVectorType* vec_;
  llvm::Function* function_ = nullptr;
  llvm::Value *x_ = nullptr, *w_ = nullptr, *bias_ = nullptr, *y_ = nullptr, *oc_count_ = nullptr, *pixels_ = nullptr,
              *view_channel_ = nullptr, *view_row_ = nullptr, *view_plane_ = nullptr, *reduction_ = nullptr,
              *y_channel_ = nullptr, *ic_count_ = nullptr, *last_lanes_ = nullptr;
  std::vector<llvm::AllocaInst*> acc_;
};

}  // namespace

NchwIrPlan plan_nchw_ir(const SpecKey& key) {
  return {std::clamp(key.oc_class, 1, 4), 2};
}

int64_t nchw_ir_min_row_pixels(const NchwIrPlan& plan) {
  return kLanes * plan.vectors;
}

std::string nchw_ir_unsupported_reason(const SpecKey& key) {
  if (key.layout != CONVJIT_NCHW) return "the LLVM backend generates NCHW kernels only";
  if (key.stride[2] != 1 && key.stride[2] != 2) return "NCHW kernels support stride 1 or 2 along W";
  if (key.kernel[0] * key.kernel[1] * key.kernel[2] > 512) return "more than 512 taps";
  return {};
}

std::unique_ptr<llvm::Module> build_conv_fwd_nchw(llvm::LLVMContext& context, const SpecKey& key,
                                                  const std::string& name) {
  auto module = std::make_unique<llvm::Module>(name, context);
  NchwKernelBuilder(context, *module, key).build(name);
  return module;
}

}  // namespace convjit::jit::llvm_backend
