#pragma once
// The public GroupedStrategy as the contracts' ExpertsStrategy and as the dialect's strategy strings:
// shared by the experts' forward (ops/moe.cpp) and backward (ops/moe_training.cpp) entries and the
// MoE graph families.
#include <string_view>

#include "contracts/moe.h"
#include "rudnn/moe.h"

namespace rudnn::moe {

inline contracts::ExpertsStrategy to_contract(GroupedStrategy s) {
  switch (s) {
    case GroupedStrategy::Scalar: return contracts::ExpertsStrategy::Scalar;
    case GroupedStrategy::Auto: return contracts::ExpertsStrategy::Auto;
    case GroupedStrategy::TensorCore: return contracts::ExpertsStrategy::TensorCore;
  }
  return contracts::ExpertsStrategy::Scalar;
}

// A dialect op's `strategy` ("scalar", "tensor_core", "auto"; the verifiers accept only these).
inline GroupedStrategy grouped_strategy(std::string_view s) {
  return s == "tensor_core" ? GroupedStrategy::TensorCore
         : s == "auto"      ? GroupedStrategy::Auto
                            : GroupedStrategy::Scalar;
}

}  // namespace rudnn::moe
