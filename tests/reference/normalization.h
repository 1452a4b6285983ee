#pragma once
// FP64 oracles for SPEC §2. Deliberately plain: one loop per formula, double everywhere, no code
// shared with the kernel templates. Tensors are row-major [rows, h].
#include <cstdint>
#include <vector>

namespace rudnn::reference {

// y = (x - mean) / sqrt(var + eps) * gamma + beta, var biased (divided by h). `beta` empty = none.
std::vector<double> layer_norm(const std::vector<double>& x, std::int64_t rows, std::int64_t h,
                               const std::vector<double>& gamma, const std::vector<double>& beta, double epsilon);

// y = x / sqrt(mean(x^2) + eps) * gamma.
std::vector<double> rms_norm(const std::vector<double>& x, std::int64_t rows, std::int64_t h,
                             const std::vector<double>& gamma, double epsilon);

// y = exp(x - max) / sum(exp(x - max)) along each row.
std::vector<double> softmax(const std::vector<double>& x, std::int64_t rows, std::int64_t h);

}  // namespace rudnn::reference
