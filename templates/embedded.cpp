// The hand-written half of the embedded templates (the file table is generated; see CMakeLists.txt).
#include "templates/embedded.h"

#include <cstdint>
#include <string>

namespace rudnn::templates {
namespace {

constexpr std::uint64_t kFnvOffset = 14695981039346656037ull;
constexpr std::uint64_t kFnvPrime = 1099511628211ull;

std::uint64_t fnv1a(std::uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= kFnvPrime;
  }
  return h;
}

std::string compute_hash() {
  std::uint64_t h = kFnvOffset;
  // The terminating NULs (included in each view) keep ("ab","c") and ("a","bc") apart.
  for (const EmbeddedFile& f : embedded_files()) {
    h = fnv1a(h, std::string_view(f.path, std::char_traits<char>::length(f.path) + 1));
    h = fnv1a(h, std::string_view(f.text, std::char_traits<char>::length(f.text) + 1));
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) out[static_cast<std::size_t>(i)] = kHex[h & 0xf];
  return out;
}

}  // namespace

std::string_view content_hash() {
  static const std::string hash = compute_hash();  // thread-safe initialization
  return hash;
}

const EmbeddedFile* find_embedded(std::string_view path) {
  for (const EmbeddedFile& f : embedded_files())
    if (path == f.path) return &f;
  return nullptr;
}

}  // namespace rudnn::templates
