#pragma once
// The disk kernel cache (DESIGN §6). An entry is one file named by the SHA-256 of everything that
// determines the binary; it holds a header, the payload and the payload's SHA-256. Writers publish
// atomically (temporary file, fsync, rename), so any number of processes may compile the same
// kernel at once and the cache ends with one good file; a reader that finds a bad entry deletes it
// and the caller rebuilds.
#include <optional>
#include <string>
#include <string_view>

#include "rudnn/error.h"

namespace rudnn::runtime {

// Everything a kernel binary depends on. `digest()` is the entry's name.
struct KernelCacheKey {
  std::string source;            // the generated translation unit
  std::string options;           // compiler options, joined
  std::string compiler_version;  // "nvrtc 13.0" or the host compiler's version
  std::string arch;              // "sm_90a", "host-x86_64"
  std::string library_version;   // rudnn's version + the embedded templates' hash
  std::string digest() const;    // 64 hex characters
};

std::string sha256_hex(std::string_view data);

class KernelCache {
 public:
  explicit KernelCache(std::string directory);
  // The process-wide cache: RUDNN_CACHE_DIR, else $XDG_CACHE_HOME/rudnn, else ~/.cache/rudnn.
  static KernelCache& instance();
  static std::string default_directory();

  const std::string& directory() const { return dir_; }
  std::string entry_path(const std::string& digest) const;

  // The payload, or nothing when absent or bad (a bad entry is removed; `rebuilt` counts it).
  std::optional<std::string> load(const std::string& digest) const;
  Status<RuntimeError> store(const std::string& digest, std::string_view payload) const;

 private:
  std::string dir_;
};

}  // namespace rudnn::runtime
