#pragma once
// NumPy .npy files (format 1.0/2.0/3.0, little-endian, C order) ↔ rudnn::HostData.
#include <cstdint>
#include <istream>
#include <string>

#include "rudnn/tensor.h"

namespace rudnn::tools {

// The largest header read_npy accepts: NumPy's own default (np.load's max_header_size), far above
// what any array NumPy writes needs, so a corrupt length never makes the reader buffer megabytes.
inline constexpr std::uint32_t kMaxNpyHeaderBytes = 10000;

// Reads f2/f4/f8, i1/i2/i4/i8, u1/u2/u4/u8 and b1 arrays into `dtype` through tools::store
// (host_data.h): a float dtype rounds as HostData::from_f64 does, an integer dtype takes only
// integral values it can hold. The header is parsed strictly (the Python dict literal NumPy writes,
// nothing else), the data must be exactly shape x item size bytes, and only a regular file is
// opened, so a directory or a device is an error, never an unbounded read (docs/input-limits.md).
// Errors name `argument` (rudnn-run passes "--input NAME=FILE"; empty: the path): IoFailure for a
// file that cannot be read or is truncated; InvalidValue for a malformed header, an element count
// past int64, trailing bytes or a value the integer `dtype` cannot hold; UnsupportedDType for an
// item type outside the list; OutOfMemory (with the bytes) when the host cannot hold the array.
Result<HostData, RuntimeError> read_npy(const std::string& path, DType dtype, const std::string& argument = {});
// The same from `in`, which holds `size` bytes (no more are read): the file reader's core, for the
// fuzz target and the tests.
Result<HostData, RuntimeError> read_npy(std::istream& in, std::uint64_t size, DType dtype, const std::string& argument);
// Float tensors are written as f4; integer tensors as their own type.
Status<RuntimeError> write_npy(const std::string& path, const HostData& data);

}  // namespace rudnn::tools
