// libFuzzer target: MLIR text → what the tools do with a .mlir file. Each input goes through
// compiler::parse_main_function (the input limits, parse, verify: rudnn-run, rudnn-precompile and
// rudnn-autotune's one reader), then the rudnn pass pipeline on the module (resolve strategy →
// select kernel config → lower to launch, as the lit tests run it), then
// compiler::lower_normalization for every normalization op in @main on aligned and misaligned
// buffers (rudnn-precompile's entry). A crash, an abort (LLVM fatal error, assertion), a stack
// overflow or an ASan report is a failure; diagnostics and error results are expected outcomes.
// Only this file is instrumented (clang); the MLIR and rudnn code is the g++ build's, so coverage
// feedback comes from the harness and libFuzzer's value profile, and crashes anywhere are caught.
#include <cstdint>
#include <optional>
#include <string>

#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/IR/BuiltinOps.h>
#include <mlir/IR/Diagnostics.h>
#include <mlir/IR/MLIRContext.h>
#include <mlir/Pass/PassManager.h>
#include <mlir/Pass/PassRegistry.h>

#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnDialect.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h"
#include "rudnn/compiler/kernel_op_models.h"
#include "rudnn/compiler/main_function.h"
#include "rudnn/compiler/pipeline.h"

namespace {

using namespace rudnn;

// A norm operand as rudnn-precompile reads it (read_ops/operand_of): nullopt where it reports an
// error instead of lowering.
std::optional<contracts::NormOperand> operand(mlir::Value v) {
  auto type = llvm::dyn_cast<mlir::RankedTensorType>(v.getType());
  if (!type) return std::nullopt;
  auto dtype = dialect::toDType(type.getElementType());
  if (!dtype) return std::nullopt;
  contracts::NormOperand o;
  o.dtype = *dtype;
  for (std::int64_t d : type.getShape()) o.shape.push_back(mlir::ShapedType::isDynamic(d) ? contracts::kDynamic : d);
  if (o.shape.empty() || o.shape.back() == contracts::kDynamic) return std::nullopt;
  return o;
}

void lower_norm_ops(mlir::func::FuncOp main, const compiler::Target& target) {
  for (mlir::Operation& op : main.getBody().front()) {
    auto norm = dialect::asNormOp(&op);
    if (!norm) continue;
    contracts::NormSignature sig;
    sig.kind = norm->kind;
    sig.epsilon = norm->epsilon;
    auto input = operand(norm->input);
    if (!input) continue;
    sig.input = *input;
    if (norm->gamma && !(sig.gamma = operand(norm->gamma))) continue;
    if (norm->beta && !(sig.beta = operand(norm->beta))) continue;
    for (bool aligned : {true, false}) (void)compiler::lower_normalization({sig, aligned, std::nullopt}, target);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dialect::registerRudnnPasses();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const compiler::Target target = compiler::target_for_arch("sm_90a").value();
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect, dialect::RudnnDialect>();
  compiler::registerKernelOpInterfaceModels(registry);
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic&) { return mlir::success(); });

  auto loaded =
      compiler::parse_main_function(std::string(reinterpret_cast<const char*>(data), size), "fuzz.mlir", context);
  if (!loaded.ok()) return 0;
  lower_norm_ops(loaded->main, target);

  mlir::PassManager pm(&context);
  if (mlir::failed(mlir::parsePassPipeline(
          "builtin.module(rudnn-resolve-strategy,rudnn-select-kernel-config,rudnn-lower-to-launch)", pm)))
    __builtin_trap();  // the pipeline itself is fixed: not an input's fault
  (void)pm.run(*loaded->module);
  return 0;
}
