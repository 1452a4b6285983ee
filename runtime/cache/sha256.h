#pragma once
// SHA-256 for cache keys and entry checksums, from OpenSSL's libcrypto (static, hidden inside
// librudnn.so): its assembly uses the CPU's SHA extensions where present (~1.3 GB/s here), which a
// kernel pack of 100 kernels needs to load within its 50 ms budget.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace rudnn::runtime {

using Sha256Digest = std::array<std::uint8_t, 32>;
Sha256Digest sha256(std::string_view data);
std::string to_hex(const Sha256Digest& digest);  // 64 lower-case hex digits

}  // namespace rudnn::runtime
