#pragma once
// The gated delta rule's search space (autotune/spaces/gated_delta.cpp, registered there).
#include "rudnn/autotune/search_space.h"

namespace rudnn::autotune {

// rudnn.gated_delta: its registered tiles (compiler::gated_delta_variants); key: dtypes {query,
// beta}, static {K, V, chunk_size, has_state}, buckets {anchor(B), anchor(H), anchor(T)}.
std::shared_ptr<const SearchSpace> gated_delta_search_space();

}  // namespace rudnn::autotune
