#include <cstring>

#include "device_backend.h"

namespace rudnn::runtime {

// Two length-prefixed sections: image, then PTX.
std::string KernelBinary::serialize() const {
  std::string out;
  for (const std::string* s : {&image, &ptx}) {
    const std::uint64_t n = s->size();
    out.append(reinterpret_cast<const char*>(&n), 8);
    out += *s;
  }
  return out;
}

bool KernelBinary::deserialize(std::string_view bytes, KernelBinary& out) {
  std::size_t off = 0;
  for (std::string* s : {&out.image, &out.ptx}) {
    std::uint64_t n = 0;
    if (bytes.size() - off < 8) return false;
    std::memcpy(&n, bytes.data() + off, 8);
    off += 8;
    if (bytes.size() - off < n) return false;
    s->assign(bytes.data() + off, n);
    off += n;
  }
  return off == bytes.size();
}

}  // namespace rudnn::runtime
