#pragma once
// Autotune (component `autotune`, CMake option RUDNN_AUTOTUNE, on by default): the best kernel
// variant per (op, dtypes, static dims, anchored dynamic dims) and device, kept in a persistent
// cache and used as the default strategy of every op that has a search space.
//
// Environment (read at first use; the setters below override it):
//   RUDNN_AUTOTUNE=off|cached|full   off: heuristics only; cached (default): use the cache, never
//                                    tune at run time; full: tune on a cache miss, then store
//   RUDNN_AUTOTUNE_CACHE=path        the SQLite cache (default <RUDNN_CACHE_DIR or the user's
//                                    cache dir>/autotune.sqlite)
//   RUDNN_AUTOTUNE_CACHE_READONLY=1  never write it (also implied when the file is not writable)
// Tuned results on the host emulation device stay in this process's memory: they are never
// written to a cache a GPU would read. See docs/deployment.md, "Autotune cache".
#include <optional>
#include <string>
#include <string_view>

#include "rudnn/error.h"
#include "rudnn/export.h"

namespace rudnn::autotune {

enum class Mode { Off, Cached, Full };

RUDNN_API Mode mode();
// Applies to plans made after the call: a signature already planned in another mode keeps its
// plan for that mode; the mode is part of the plan key, so switching makes (or finds) new plans.
RUDNN_API void set_mode(Mode mode);
RUDNN_API std::string_view mode_name(Mode mode);  // "off", "cached", "full"
// "off" | "cached" | "full"; InvalidValue naming RUDNN_AUTOTUNE otherwise.
RUDNN_API Result<Mode, RuntimeError> parse_mode(std::string_view text);

// Where a plan's kernel config came from.
enum class Source { Heuristic, Cache, Tuned, Forced };
RUDNN_API std::string_view source_name(Source source);  // "heuristic", "cache", "tuned", "forced"

// The variant an op call ran.
struct Choice {
  std::string op;      // "rudnn.rms_norm"
  std::string kernel;  // the entry of its (first) kernel, e.g. "rudnn_rms_norm_bf16_t128_r1_v8"
  std::string config;  // "threads_per_row=128,rows_per_block=1,vector_width=8"
  Source source = Source::Heuristic;
  std::string key;  // the autotune key it was looked up under; empty for the heuristic without autotune
};

// The variant that the calling thread's last successful op call ran (nothing before the first).
RUDNN_API std::optional<Choice> last_choice();

// The persistent cache: its path, and a path that replaces RUDNN_AUTOTUNE_CACHE ("" = back to
// the environment / default). Takes effect at the next lookup; in-memory results are kept.
RUDNN_API std::string cache_path();
RUDNN_API void set_cache_path(const std::string& path);

// Why the persistent cache is being bypassed (corrupt file, unknown schema, I/O error), or ok.
// The same problem is logged once at RUDNN_LOG=info; calls keep working on heuristics.
RUDNN_API Status<RuntimeError> cache_status();

}  // namespace rudnn::autotune
