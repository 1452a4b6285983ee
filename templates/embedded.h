#pragma once
// The kernel templates (templates/rudnn/**) compiled into the library: NVRTC receives them as
// in-memory headers and the host kernel compiler gets them written to a cache directory, so a
// deployed librudnn.so needs no source tree.
#include <span>
#include <string_view>

namespace rudnn::templates {

struct EmbeddedFile {
  const char* path;  // relative to templates/, as kernels include it: "rudnn/norm/row_norm.cuh"
  const char* text;  // the file's full contents, NUL-terminated
};

// Every embedded file, sorted by path.
std::span<const EmbeddedFile> embedded_files();

// FNV-1a 64 over every (path, contents) pair, as 16 lower-case hex digits. Part of every kernel
// cache key: editing a template invalidates the kernels compiled from the old text.
std::string_view content_hash();

// The embedded file at `path`, or nullptr.
const EmbeddedFile* find_embedded(std::string_view path);

}  // namespace rudnn::templates
