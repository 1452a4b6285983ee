#include "rudnn/Dialect/Rudnn/IR/ConfigValues.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace rudnn::dialect {

std::optional<ConfigValues> integerValuesOf(DictionaryAttr config) {
  if (!config) return std::nullopt;
  ConfigValues values;
  for (NamedAttribute a : config) {
    auto i = dyn_cast<IntegerAttr>(a.getValue());
    if (!i) return std::nullopt;
    values.emplace_back(a.getName().str(), i.getInt());
  }
  return values;
}

DictionaryAttr integerDictionary(MLIRContext* ctx, const ConfigValues& values) {
  Builder b(ctx);
  SmallVector<NamedAttribute> attrs;
  for (const auto& [k, v] : values) attrs.push_back(b.getNamedAttr(k, b.getI64IntegerAttr(v)));
  return b.getDictionaryAttr(attrs);
}

}  // namespace rudnn::dialect
