#pragma once
// NumPy .npy files (format 1.0/2.0, little-endian, C order) ↔ rudnn::HostData.
#include <string>

#include "rudnn/tensor.h"

namespace rudnn::tools {

// Reads f2/f4/f8, i1/i2/i4/i8, u1/u2/u4/u8 and bool arrays; values are converted to `dtype`
// (bf16 included) exactly as HostData::from_f64 rounds.
Result<HostData, RuntimeError> read_npy(const std::string& path, DType dtype);
// Float tensors are written as f4; integer tensors as their own type.
Status<RuntimeError> write_npy(const std::string& path, const HostData& data);

}  // namespace rudnn::tools
