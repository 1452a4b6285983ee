#pragma once
// A progress line for long tool work (rudnn-precompile, rudnn-autotune): done / total, elapsed,
// ETA, redrawn in place on a terminal, one line per 10% otherwise. Thread-safe.
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

namespace rudnn::tools {

class Progress {
 public:
  Progress(std::size_t total, std::string label, std::FILE* out = stderr);
  // Marks `n` more items done; `item` names the last one (shown on terminals).
  void advance(std::size_t n = 1, const std::string& item = {});
  // Final line: "label: total/total done in 12.3 s".
  void finish();
  double elapsed_seconds() const;

 private:
  void draw(const std::string& item);
  std::size_t total_, done_ = 0;
  std::string label_;
  std::FILE* out_;
  bool tty_;
  int last_decile_ = -1;
  std::chrono::steady_clock::time_point start_;
  mutable std::mutex mutex_;
};

}  // namespace rudnn::tools
