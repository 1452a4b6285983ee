#pragma once
// The attention family's search space (autotune/spaces/attention.cpp, registered there).
#include "rudnn/autotune/search_space.h"

namespace rudnn::autotune {

// rudnn.attention with strategy Autotune: every registered tile of every strategy that fits
// (compiler::attention_variants); key = op, the query dtype (and the bias dtype), static dims {Hq,
// Hkv, D, Dv, causal, mask, bias, strategy}, buckets {anchor(B), anchor(Tq), anchor(Tk)}.
std::shared_ptr<const SearchSpace> attention_search_space();

}  // namespace rudnn::autotune
