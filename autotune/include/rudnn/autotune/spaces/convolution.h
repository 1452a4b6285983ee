#pragma once
// The convolution search space (autotune/spaces/convolution.cpp, registered there).
#include "rudnn/autotune/search_space.h"

namespace rudnn::autotune {

// rudnn.conv_forward, conv_data_backward, conv_weight_backward: every registered kernel that serves
// the call (compiler::conv_variants); key: dtypes {input or grad_output}, static
// contracts::conv_key_words (direction, layout, groups, bias_grad, bias dtype, options, shapes but the
// batch), buckets {anchor(batch)}.
std::shared_ptr<const SearchSpace> convolution_search_space();

}  // namespace rudnn::autotune
