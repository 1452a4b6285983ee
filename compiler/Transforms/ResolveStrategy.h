#pragma once
// rudnn-resolve-strategy with a provider (the registry's version, used by rudnn-opt, has none).
#include <cstdint>
#include <memory>
#include <vector>

#include "mlir/Pass/Pass.h"
#include "rudnn/compiler/config_provider.h"

namespace rudnn::compiler {

// `provider` may be null (the pass then changes nothing) and must outlive the pass run.
// `argumentDynamicValues`: this call's values of @main's dynamic argument extents, argument by
// argument and dim by dim (empty when unknown).
std::unique_ptr<mlir::Pass> createResolveStrategyPass(ConfigProvider* provider,
                                                      std::vector<std::int64_t> argumentDynamicValues);

}  // namespace rudnn::compiler
