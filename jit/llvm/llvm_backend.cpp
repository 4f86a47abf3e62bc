// The LLVM backend: the portable one. IR from jit/llvm/conv_fwd_nchw_ir.cpp, optimized at O2 for
// the host (the TargetMachine of ORC's host detection), linked by ORC's LLJIT (JITLink), whose
// memory manager writes code while read+write and finalizes it read+execute, never both. Each
// kernel has its own ResourceTracker, so dropping the last reference frees its code. Compiles
// take milliseconds, not microseconds: the runtime's background compiles hide that.
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectTransformLayer.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>

#include <unistd.h>

#include <mutex>

#include "backend.hpp"
#include "conv_fwd_nchw_ir.hpp"

namespace convjit::jit {
namespace {

std::string message(llvm::Error error) {
  return llvm::toString(std::move(error));
}

// O2 for the host: the TargetMachine gives the passes the host's vector widths and costs.
void optimize(llvm::Module& module, llvm::TargetMachine& machine) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager cgscc;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(cgscc);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, cgscc, modules);
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2).run(module, modules);
}

class LlvmBackend : public Backend {
 public:
  LlvmBackend() {
    // Target registration must not race with another thread using the registry: once per process.
    static std::once_flag targets_registered;
    std::call_once(targets_registered, [] {
      llvm::InitializeNativeTarget();
      llvm::InitializeNativeTargetAsmPrinter();
    });
    auto host = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!host) {
      unavailable_ = "LLVM: " + message(host.takeError());
      return;
    }
    // The IR is 8 lanes wide and its kernels are named __avx2: they use AVX2 and FMA only, on an
    // AVX-512 host too (a CONVJIT_MAX_ISA=avx2 cap then holds for them with no second machine).
    host->getFeatures().AddFeature("avx512f", false);
    auto machine = host->createTargetMachine();
    if (!machine) {
      unavailable_ = "LLVM: " + message(machine.takeError());
      return;
    }
    machine_ = std::shared_ptr<llvm::TargetMachine>(std::move(*machine));
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*host).create();
    if (!jit) {
      unavailable_ = "LLVM: " + message(jit.takeError());
      return;
    }
    jit_ = std::shared_ptr<llvm::orc::LLJIT>(std::move(*jit));
    // Object sizes, for the stats' code bytes (the relocatable object a kernel was linked from).
    jit_->getObjTransformLayer().setTransform([this](std::unique_ptr<llvm::MemoryBuffer> object) {
      last_object_bytes_ = object->getBufferSize();
      return llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>(std::move(object));
    });
  }

  const char* name() const override { return "llvm"; }
  std::string unavailable_reason() const override { return unavailable_; }

  Isa isa_for(const convjit_conv_problem&, Isa) const override { return Isa::Avx2Fma; }

  // Row kernels block 16 pixels along W (jit/abi/backend.hpp: short_rows_reason).
  std::string decline_reason(const convjit_conv_problem& p, const SpecKey& key) const override {
    if (std::string why = llvm_backend::nchw_ir_unsupported_reason(key); !why.empty()) return why;
    return short_rows_reason(p, llvm_backend::kLanes, llvm_backend::nchw_ir_min_row_pixels(llvm_backend::plan_nchw_ir(key)));
  }

  bool compile(const SpecKey& key, CompiledKernel* out, std::string* error) override {
    if (!jit_) {
      *error = unavailable_;
      return false;
    }
    if (std::string why = llvm_backend::nchw_ir_unsupported_reason(key); !why.empty()) {
      *error = why;
      return false;
    }
    // One compile at a time: the object-size hook above, and compiles are rare.
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string symbol = key.name() + "_" + std::to_string(++kernels_);
    auto context = std::make_unique<llvm::LLVMContext>();
    std::unique_ptr<llvm::Module> module = llvm_backend::build_conv_fwd_nchw(*context, key, symbol);
    module->setDataLayout(machine_->createDataLayout());
    module->setTargetTriple(machine_->getTargetTriple().str());
    if (llvm::verifyModule(*module, &llvm::errs())) {
      *error = "LLVM: the generated module does not verify";
      return false;
    }
    optimize(*module, *machine_);
    llvm::orc::ResourceTrackerSP tracker = jit_->getMainJITDylib().createResourceTracker();
    if (llvm::Error e =
            jit_->addIRModule(tracker, llvm::orc::ThreadSafeModule(std::move(module), std::move(context)))) {
      *error = "LLVM: " + message(std::move(e));
      return false;
    }
    auto address = jit_->lookup(symbol);
    if (!address) {
      *error = "LLVM: " + message(address.takeError());
      llvm::consumeError(tracker->remove());
      return false;
    }
    const llvm_backend::NchwIrPlan plan = llvm_backend::plan_nchw_ir(key);
    out->kernel = convjit_conv_kernel{};
    out->kernel.compute = address->toPtr<convjit_conv_tile_fn>();
    out->kernel.row_kernel = 1;
    out->kernel.min_row_pixels = llvm_backend::nchw_ir_min_row_pixels(plan);
    out->kernel.row_lanes = llvm_backend::kLanes;
    out->kernel.oc_granule = plan.oc_block;
    out->key = key;
    out->name = key.name();
    out->code_bytes = last_object_bytes_;
    // JITLink gives a module's code, read-only data and data pages of their own: an upper bound.
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    out->mapped_bytes = (last_object_bytes_ + page - 1) / page * page + 2 * page;
    // The kernel's code lives until its last holder lets go; the JIT outlives it.
    std::shared_ptr<llvm::orc::LLJIT> jit = jit_;
    out->code = std::shared_ptr<void>(nullptr, [jit, tracker](void*) { llvm::consumeError(tracker->remove()); });
    return true;
  }

 private:
  std::string unavailable_;
  std::shared_ptr<llvm::TargetMachine> machine_;
  std::shared_ptr<llvm::orc::LLJIT> jit_;
  std::mutex mutex_;
  int64_t kernels_ = 0;
  size_t last_object_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_llvm_backend() {
  return std::make_unique<LlvmBackend>();
}

}  // namespace convjit::jit
