#pragma once
// What the MoE kernels share (python/src/moe.cpp: routings and the whole layer; moe_steps.cpp: the
// layer's steps as separate ops): the family's name, the experts' strategy option, the experts.
#include <ATen/core/Tensor.h>

#include <string_view>

#include "call.h"
#include "rudnn/moe.h"

namespace rudnn::python {

inline constexpr char kMoeFamily[] = "moe";

inline moe::GroupedStrategy experts_strategy(const Call& call, std::string_view strategy) {
  using moe::GroupedStrategy;
  return choose<GroupedStrategy>(call, "strategy", strategy,
                                 {{"scalar", GroupedStrategy::Scalar},
                                  {"auto", GroupedStrategy::Auto},
                                  {"tensor_core", GroupedStrategy::TensorCore}});
}

inline moe::SwiGluExperts swiglu_experts(Call& call, const at::Tensor& gate, const at::Tensor& up,
                                         const at::Tensor& down) {
  Tensor g = call.in(gate, "gate");
  Tensor u = call.in(up, "up");
  Tensor d = call.in(down, "down");
  return call.take(moe::SwiGluExperts::create(g, u, d));
}

}  // namespace rudnn::python
