// libFuzzer target: tools::read_npy's core (the stream reader every .npy file goes through) on
// arbitrary bytes, into every dtype. A crash, an ASan report, an exception (none may escape) or a
// broken invariant of an accepted file is a failure. The reader is compiled with clang and
// instrumented (coverage + ASan); librudnn.so (HostData, dtype conversions) is the g++ build's.
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "common/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace rudnn;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  for (DType dtype :
       {DType::F32, DType::F16, DType::BF16, DType::U32, DType::I32, DType::I64, DType::FP8E4M3, DType::U8}) {
    std::istringstream in(bytes);
    auto r = tools::read_npy(in, size, dtype, "--input fuzz");
    if (!r.ok()) {
      // Every error names the argument.
      if (r.error().message().rfind("--input fuzz: expected ", 0) != 0) std::abort();
      continue;
    }
    // An accepted array holds exactly its shape's bytes, and the file held at least one byte per
    // element: nothing was invented.
    const auto n = checked_element_count(r->shape);
    const auto b = checked_byte_count(r->shape, dtype);
    if (!n || !b || r->dtype != dtype || r->bytes.size() != static_cast<std::size_t>(*b) ||
        static_cast<std::uint64_t>(*n) > size)
      std::abort();
  }
  return 0;
}
