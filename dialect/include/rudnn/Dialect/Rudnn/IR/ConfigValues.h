#pragma once
// A kernel_config of integer entries ↔ its (key, value) list: what the families whose configs are
// plain integers (convolution, paged attention) convert through.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mlir/IR/BuiltinAttributes.h"

namespace rudnn::dialect {

using ConfigValues = std::vector<std::pair<std::string, std::int64_t>>;

// The entries of `config`, or nothing when it is null or an entry is not an integer.
std::optional<ConfigValues> integerValuesOf(mlir::DictionaryAttr config);
mlir::DictionaryAttr integerDictionary(mlir::MLIRContext* ctx, const ConfigValues& values);

}  // namespace rudnn::dialect
