#pragma once
// A small builder for rudnn.launch, shared by the Conversion/ patterns: the kernel's template,
// its operands and results (numbered together: operand i is i, result r is #operands + r), its
// parameters in order, and the launch geometry.
#include <string>

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

namespace rudnn::compiler {

class LaunchBuilder {
 public:
  using SizeFactor = dialect::SizeFactor;

  LaunchBuilder(mlir::Operation* origin, std::string entry, std::string header, std::string function);

  LaunchBuilder& templateArgs(llvm::ArrayRef<std::string> args);
  LaunchBuilder& config(mlir::DictionaryAttr config);
  LaunchBuilder& operands(mlir::ValueRange values);
  // `elements`: per result, its element count (needed for results that become temporaries).
  LaunchBuilder& results(mlir::TypeRange types, llvm::ArrayRef<mlir::Attribute> elements = {});

  // Kernel parameters, in the template function's order.
  LaunchBuilder& buffer(llvm::StringRef name, llvm::StringRef cType, std::int64_t index);
  LaunchBuilder& nullBuffer(llvm::StringRef name, llvm::StringRef cType);  // an absent optional operand
  LaunchBuilder& sizeParam(llvm::StringRef name, dialect::SizeExprAttr size);
  LaunchBuilder& constant(llvm::StringRef name, std::int64_t value);
  LaunchBuilder& f32(llvm::StringRef name, float value);

  LaunchBuilder& grid(dialect::SizeExprAttr x, dialect::SizeExprAttr y = {}, dialect::SizeExprAttr z = {});
  LaunchBuilder& block(std::int64_t threads);
  LaunchBuilder& shared(std::int64_t bytes);
  // The kernel's minimum resident blocks per SM for ptxas (__launch_bounds__(threads, n), the
  // discardable `rudnn.min_blocks` attribute). Without it the wrapper has __launch_bounds__(threads)
  // alone, from which CUDA 13's ptxas may pick a register budget low enough to spill; 1 leaves it
  // the whole register file per thread.
  LaunchBuilder& minBlocks(std::int64_t blocks);

  // ceil_div(product(factors), divisor) as an attribute.
  dialect::SizeExprAttr size(llvm::ArrayRef<SizeFactor> factors, std::int64_t divisor = 1) const;

  // Creates the launch before the origin op (which the caller replaces or erases).
  dialect::LaunchOp create(mlir::RewriterBase& rewriter) const;

 private:
  mlir::Operation* origin_;
  mlir::MLIRContext* ctx_;
  std::string entry_, header_, function_;
  llvm::SmallVector<std::string> templateArgs_;
  mlir::DictionaryAttr config_;
  llvm::SmallVector<mlir::Value> operands_;
  llvm::SmallVector<mlir::Type> resultTypes_;
  llvm::SmallVector<mlir::Attribute> resultElements_;
  llvm::SmallVector<mlir::Attribute> params_;
  llvm::SmallVector<mlir::Attribute> grid_;
  std::int64_t threads_ = 1, sharedBytes_ = 0, minBlocks_ = 0;
};

}  // namespace rudnn::compiler
