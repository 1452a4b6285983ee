#define OPENSSL_SUPPRESS_DEPRECATED  // the one-shot SHA256_* calls: no EVP provider machinery needed
#include "cache/sha256.h"

#include <openssl/sha.h>

namespace rudnn::runtime {

Sha256Digest sha256(std::string_view data) {
  Sha256Digest out{};
  SHA256_CTX ctx;
  SHA256_Init(&ctx);
  SHA256_Update(&ctx, data.data(), data.size());
  SHA256_Final(out.data(), &ctx);
  return out;
}

std::string to_hex(const Sha256Digest& digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(64, '0');
  for (std::size_t i = 0; i < digest.size(); ++i) {
    s[2 * i] = kDigits[digest[i] >> 4];
    s[2 * i + 1] = kDigits[digest[i] & 15];
  }
  return s;
}

}  // namespace rudnn::runtime
