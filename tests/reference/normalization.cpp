#include "reference/normalization.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace rudnn::reference {
namespace {

void check(const std::vector<double>& x, std::int64_t rows, std::int64_t h) {
  if (rows < 0 || h <= 0 || static_cast<std::int64_t>(x.size()) != rows * h)
    throw std::invalid_argument("reference: x.size() must equal rows * h with h > 0");
}

void check_param(const std::vector<double>& p, std::int64_t h, const char* name) {
  if (static_cast<std::int64_t>(p.size()) != h)
    throw std::invalid_argument(std::string("reference: ") + name + " must have h elements");
}

}  // namespace

std::vector<double> layer_norm(const std::vector<double>& x, std::int64_t rows, std::int64_t h,
                               const std::vector<double>& gamma, const std::vector<double>& beta, double epsilon) {
  check(x, rows, h);
  check_param(gamma, h, "gamma");
  if (!beta.empty()) check_param(beta, h, "beta");
  std::vector<double> y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    const double* row = x.data() + r * h;
    double sum = 0.0;
    for (std::int64_t i = 0; i < h; ++i) sum += row[i];
    const double mean = sum / static_cast<double>(h);
    double squares = 0.0;
    for (std::int64_t i = 0; i < h; ++i) squares += (row[i] - mean) * (row[i] - mean);
    const double variance = squares / static_cast<double>(h);
    const double inv_std = 1.0 / std::sqrt(variance + epsilon);
    for (std::int64_t i = 0; i < h; ++i) {
      const double b = beta.empty() ? 0.0 : beta[static_cast<std::size_t>(i)];
      y[static_cast<std::size_t>(r * h + i)] = (row[i] - mean) * inv_std * gamma[static_cast<std::size_t>(i)] + b;
    }
  }
  return y;
}

std::vector<double> rms_norm(const std::vector<double>& x, std::int64_t rows, std::int64_t h,
                             const std::vector<double>& gamma, double epsilon) {
  check(x, rows, h);
  check_param(gamma, h, "gamma");
  std::vector<double> y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    const double* row = x.data() + r * h;
    double squares = 0.0;
    for (std::int64_t i = 0; i < h; ++i) squares += row[i] * row[i];
    const double inv_rms = 1.0 / std::sqrt(squares / static_cast<double>(h) + epsilon);
    for (std::int64_t i = 0; i < h; ++i)
      y[static_cast<std::size_t>(r * h + i)] = row[i] * inv_rms * gamma[static_cast<std::size_t>(i)];
  }
  return y;
}

std::vector<double> softmax(const std::vector<double>& x, std::int64_t rows, std::int64_t h) {
  check(x, rows, h);
  std::vector<double> y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    const double* row = x.data() + r * h;
    double max = row[0];
    for (std::int64_t i = 1; i < h; ++i) max = std::fmax(max, row[i]);
    double sum = 0.0;
    for (std::int64_t i = 0; i < h; ++i) sum += std::exp(row[i] - max);
    for (std::int64_t i = 0; i < h; ++i) y[static_cast<std::size_t>(r * h + i)] = std::exp(row[i] - max) / sum;
  }
  return y;
}

}  // namespace rudnn::reference
