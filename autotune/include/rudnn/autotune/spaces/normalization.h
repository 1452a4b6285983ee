#pragma once
// The normalization family's search space (autotune/spaces/normalization.cpp, registered there).
#include "rudnn/autotune/search_space.h"

namespace rudnn::autotune {

// compiler::normalization_variants(kind, dtype, H); key = op, dtypes, static dims {H}, buckets
// {anchor(rows)} where rows is the product of the leading dims.
std::shared_ptr<const SearchSpace> normalization_search_space();

}  // namespace rudnn::autotune
